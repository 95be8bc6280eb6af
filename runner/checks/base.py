"""What a check is: a function from its ``expect`` spec and the run's context to results."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from runner.agent import Trajectory
from runner.cases import Case
from runner.sandbox import CommandResult

OUTCOME = "outcome"
PROCESS = "process"


@dataclass(frozen=True)
class CheckResult:
    """One assertion: ``check`` names it (``verify``, ``files``, ``trace.avoid``...),
    ``category`` is ``outcome`` or ``process``, ``message`` is the human line."""

    check: str
    passed: bool
    message: str
    category: str = OUTCOME


@dataclass(frozen=True)
class CheckContext:
    """What checks may look at after the agent finished."""

    case: Case
    workspace: Path
    trajectory: Trajectory
    run_command: Callable[[str], CommandResult]


Check = Callable[[Any, CheckContext], list[CheckResult]]


def as_list(value: Any) -> list[Any]:
    """A spec value that may be one item or a list, as a list."""
    return list(value) if isinstance(value, (list, tuple)) else [value]
