"""The names users write, and the one rule for each: case ids and group names, provider names.

A case id, a group name (a case file's stem) and a provider alias in ``tooltrial.yml`` all match
``ID_PATTERN``; the JSON schemas spell the same pattern (``schemas/case.schema.json``,
``config.schema.json``, ``replio.schema.json``), held to this one by a test.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Literal

ID_CHARS = "a-z0-9._-"  # the characters of an id, as a regex character class body
ID_PATTERN = re.compile(f"[a-z0-9][{ID_CHARS}]*")  # match with fullmatch; schemas anchor it: ^...$
SCRIPTED = "scripted"  # the built-in offline provider, which replies with each case's script
# why SCRIPTED is refused as a judge (--judge, judge: in tooltrial.yml, expect.judge.model), and what to give instead
NOT_A_JUDGE = "the scripted provider cannot judge: it replies with the case's script, never with a verdict"
JUDGE_HINT = "name a live model or an alias, e.g. openai/gpt-4o-mini; a case run with -p scripted can still be judged by one"

ProviderForm = Literal["scripted", "alias", "model", "bare"]


def provider_form(name: str, aliases: Collection[str]) -> ProviderForm:
    """What a ``-p`` value (or ``default_provider`` / ``judge`` in ``tooltrial.yml``) names, in this order:
    ``scripted``, the offline provider; ``alias``, a name under ``providers:`` in ``aliases``;
    ``model``, a litellm model string ``provider/model``; else ``bare``, a name only litellm can tell
    apart (a model it knows, ``gpt-4o``, or a provider that lacks its model, ``ollama``).
    """
    if name == SCRIPTED:
        return "scripted"
    if name in aliases:
        return "alias"
    return "model" if "/" in name else "bare"
