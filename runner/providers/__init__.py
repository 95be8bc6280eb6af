"""Providers: name -> a factory that makes a fresh provider for each run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from runner.cases import Case
from runner.errors import UserError
from runner.providers.base import Provider, ProviderError
from runner.providers.scripted import ScriptedProvider

SCRIPTED = "scripted"


@dataclass(frozen=True)
class ProviderSpec:
    """A provider arm: the label shown in output and a factory called once per run."""

    name: str
    create: Callable[[Case], Provider]


def _scripted(case: Case) -> Provider:
    if case.script is None:
        raise ProviderError(f"case {case.full_id} has no script: the scripted provider needs one")
    return ScriptedProvider(case.script)


def resolve_provider(name: str) -> ProviderSpec:
    """Turn a ``-p`` value into a ProviderSpec.

    Raises UserError for a name tooltrial cannot reach.
    """
    if name == SCRIPTED:
        return ProviderSpec(SCRIPTED, _scripted)
    raise UserError(f"unknown provider {name!r}", hint="use -p scripted")
