"""Which tools a case offers the model: the one rule the case loader, the toolbox and the scorer share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from runner.tools.registry import BUILTIN_NAMES


def offered_tools(tools: Sequence[str] | None, mocks: Iterable[str]) -> tuple[str, ...]:
    """The names a case offers, in the order the model sees them: its ``tools`` when it lists them,
    else every builtin (runner.tools.registry) then each of its ``mocks`` (their names) not named like
    a builtin, which that mock replaces. Denied names are offered too: their calls are refused.
    ``offered_tools(None, mocks)`` is every name a case's ``tools`` and ``deny`` may list.
    """
    if tools is not None:
        return tuple(tools)
    return tuple(dict.fromkeys([*BUILTIN_NAMES, *mocks]))
