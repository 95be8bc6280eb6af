"""Pass-rate gates and the exit code of a run.

Each case in each arm has a gate: its pass rate must reach the case's
``min_pass_rate``, else the suite's ``--min-pass-rate``, else 1.0 (every run
passes). A failed gate is the agent's doing when the runs that failed a check,
hit the turn limit, timed out or ran out of script alone break it; otherwise
infrastructure errors (provider or judge unreachable, setup failure, internal
error) broke it. Exit 1 for any gate the agent failed, else 3 for any broken by
infrastructure, else 0, so CI can tell "the agent got worse" from "the API was down".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

from runner.errors import ExitCode
from runner.run.record import ERROR, RunRecord

if TYPE_CHECKING:
    from runner.scoring.aggregate import Cell

AGENT_ERRORS = frozenset({"turn_limit", "timeout", "script_exhausted"})
AGENT, INFRASTRUCTURE = "agent", "infrastructure"
_EPSILON = 1e-9


def is_infrastructure_error(record: RunRecord) -> bool:
    """Whether the run is an ERROR that says nothing about the agent (``error_kind`` not an agent stop)."""
    return record.status == ERROR and record.error_kind not in AGENT_ERRORS


@dataclass(frozen=True)
class Gate:
    """The gate of one case in one arm.

    ``pass_rate`` and ``threshold`` are fractions in [0, 1]; ``broken_by`` is
    ``agent``, ``infrastructure`` or None when the gate holds.
    """

    case: str
    arm: str
    runs: int
    passes: int
    threshold: float
    broken_by: str | None

    @property
    def pass_rate(self) -> float:
        return self.passes / self.runs if self.runs else 0.0

    @property
    def held(self) -> bool:
        return self.broken_by is None


def evaluate(cells: Sequence[Cell], thresholds: Mapping[str, float | None], default: float | None = None) -> list[Gate]:
    """One gate per cell (case x arm) of the aggregation (runner.scoring.aggregate), in its order.

    ``thresholds`` maps a case's full id to its own ``min_pass_rate`` (None: none);
    ``default`` is the suite's ``--min-pass-rate`` (None: 1.0).
    """
    gates = []
    for cell in cells:
        threshold = _first(thresholds.get(cell.case), default, 1.0)
        f = cell.figures
        gates.append(Gate(cell.case, cell.arm, f.runs, f.passed, threshold,
                          _broken_by(f.runs, f.passed, f.infra_errors, threshold)))
    return gates


def _first(*values: float | None) -> float:
    return next(float(v) for v in values if v is not None)


def _broken_by(runs: int, passes: int, infra: int, threshold: float) -> str | None:
    if passes / runs >= threshold - _EPSILON:
        return None
    if (passes + infra) / runs < threshold - _EPSILON:  # too few even if every infra error had passed
        return AGENT
    return INFRASTRUCTURE


def exit_code(gates: Sequence[Gate]) -> ExitCode:
    """1 when the agent broke any gate, else 3 when infrastructure broke one, else 0."""
    if any(g.broken_by == AGENT for g in gates):
        return ExitCode.FAILED
    if any(g.broken_by == INFRASTRUCTURE for g in gates):
        return ExitCode.INTERNAL
    return ExitCode.OK
