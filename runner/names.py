"""The names users write, and the one rule for each: case ids and group names, provider names.

A case id, a group name (a case file's stem) and a provider alias in ``tooltrial.yml`` all match
``ID_PATTERN``; the JSON schemas spell the same pattern (``schemas/case.schema.json``,
``config.schema.json``, ``replio.schema.json``), held to this one by a test.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from typing import Protocol, TypeVar

ID_CHARS = "a-z0-9._-"  # the characters of an id, as a regex character class body
ID_PATTERN = re.compile(f"[a-z0-9][{ID_CHARS}]*")  # match with fullmatch; schemas anchor it: ^...$
SCRIPTED = "scripted"  # the built-in offline provider, which replies with each case's script
# what to give instead of a provider that cannot judge (--judge, judge: in tooltrial.yml, expect.judge.model)
JUDGE_HINT = "name a live model or an alias, e.g. openai/gpt-4o-mini; a case run with -p scripted can still be judged by one"


class TakesNames(Protocol):
    """What the provider-name rule reads of a provider kind (runner.providers.kind.ProviderKind): the names it takes."""

    @property
    def pattern(self) -> re.Pattern[str] | None: ...


Kind = TypeVar("Kind", bound=TakesNames)


def provider_kind(name: str, aliases: Collection[str], kinds: Iterable[Kind]) -> Kind:
    """What a ``-p`` value (or ``default_provider`` / ``judge`` in ``tooltrial.yml``) names: the first of
    ``kinds`` (runner.providers.registry.PROVIDER_KINDS, in its order) that takes it, one whose ``pattern``
    matches the whole name, or the one without a pattern when the name is in ``aliases`` (the names under
    ``providers:``). The table's order is ``scripted``, an alias, a litellm model string ``provider/model``,
    then any name, ``bare``, which only litellm can tell apart (a model it knows, ``gpt-4o``, or a provider
    that lacks its model, ``ollama``).

    Raises ValueError when no kind takes the name (a table without a last kind that takes any).
    """
    for kind in kinds:
        if name in aliases if kind.pattern is None else kind.pattern.fullmatch(name):
            return kind
    raise ValueError(f"no kind of provider takes {name!r}")
