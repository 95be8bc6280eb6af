"""Providers: the one table of provider kinds, and a ``-p`` value to a ProviderSpec through it.

A ``-p`` value is ``scripted``, an alias from ``tooltrial.yml``, or a litellm
model string (``ollama/qwen3``, ``openai/gpt-4o``, ``anthropic/claude-...``):
``PROVIDER_KINDS`` says which, in order, and each kind (runner.providers.kind)
says how its names are checked, resolved and probed. Resolving a live one
imports litellm (the run is going to use it); resolving ``scripted`` never does.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from runner import names
from runner.providers import live, scripted, scriptedjudge
from runner.providers.kind import ProviderKind, ProviderSpec

if TYPE_CHECKING:
    from runner.spec.config import Config

# In the order a name is matched (runner.names.provider_kind): the scripted provider's name, an alias,
# a scripted judge's ``scripted-judge:FILE``, a model string with a ``/``, then any other name, which litellm alone can tell (``bare``).
PROVIDER_KINDS: list[ProviderKind] = [scripted.KIND, live.ALIAS, scriptedjudge.KIND, live.MODEL, live.BARE]


def register_provider_kind(kind: ProviderKind) -> None:
    """Add ``kind`` to the table, ahead of the kinds that take any name as a litellm model (``model``,
    ``bare``), so that the names its pattern takes reach it. Raises ValueError for a kind whose name the
    table holds already."""
    if any(known.name == kind.name for known in PROVIDER_KINDS):
        raise ValueError(f"there is a provider kind {kind.name!r} already")
    PROVIDER_KINDS.insert(PROVIDER_KINDS.index(live.MODEL), kind)


def kind_of(name: str, aliases: Collection[str]) -> ProviderKind:
    """The kind of provider ``name`` is, given the config's ``aliases`` (runner.names.provider_kind)."""
    return names.provider_kind(name, aliases, PROVIDER_KINDS)


def precheck(name: str, config: Config | None = None, environ: Mapping[str, str] = os.environ) -> None:
    """Refuse ``name`` (a ``-p``, ``--judge`` or ``default_provider`` value) for what is wrong with it
    without litellm, as its kind's ``precheck`` tells (runner.providers.precheck for litellm's kinds): a
    bare provider name without its model (``ollama``), a bare name close to an alias or ``scripted``
    (did-you-mean), a model string that is not ``provider/model``, an alias's ``api_key_env`` unset or
    blank (unless its server is on this machine), a model string of a provider in KEY_VARIABLES whose
    key is not in ``environ``.

    Raises UserError (exit 4); an error about an alias points at its entry in the config file.
    """
    kind_of(name, config.providers if config else {}).precheck(name, config, environ)


def resolve_provider(name: str, config: Config | None = None, verbose: bool = False,
                     stream: bool = False) -> ProviderSpec:
    """Turn a ``-p`` value into a ProviderSpec; with ``stream`` a live model streams its replies
    whatever its alias says (``run --stream``).

    Order (PROVIDER_KINDS): ``scripted``; an alias under ``providers:``
    in ``config``; a model string with a ``/``; a bare name litellm knows as a model (``gpt-4o``).
    Raises UserError (exit 4) for what ``precheck`` refuses (before litellm loads), a
    bare provider name (``-p ollama``) with no alias of that name, an unknown provider or model,
    or a missing API key; errors about an alias point at its entry in the config file.
    """
    precheck(name, config)  # what needs no litellm, told before it loads
    return kind_of(name, config.providers if config else {}).resolve(name, config, verbose, stream)
