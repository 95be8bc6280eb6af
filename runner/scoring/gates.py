"""Pass-rate gates and the exit code of a run.

Each case in each arm has a gate: its pass rate must reach the case's
``min_pass_rate``, else the suite's ``--min-pass-rate``, else 1.0 (every run
passes). A broken gate is the agent's doing when it would break even if every run
that ended in an error not of the agent's making (runner.kinds.ErrorKind.blame) had
passed; otherwise it is down to the worst of those errors' blames: tooltrial's own
bug (``internal``), then the case's data (``case``: a fixture that cannot be copied,
a template that does not render), then the ``infrastructure`` (provider or judge
unreachable, setup failed).

The exit code takes the worst blame of any broken gate, in this order: 3 (internal)
before 4 (case) before 1 (agent) before 6 (infrastructure), else 0. So CI tells
"tooltrial's bug" (3) and "the case is wrong" (4) from "the agent got worse" (1),
and that from "the API was down" (6), which it may retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from runner.errors import ExitCode
from runner.kinds import Blame, ErrorKind, Status
from runner.run.record import ERROR
from runner.scoring.summary import RunSummary

if TYPE_CHECKING:
    from runner.scoring.aggregate import Cell

# The exit code of a gate broken by each blame, worst first: the first found in any gate wins.
EXIT_CODES: dict[Blame, ExitCode] = {
    Blame.INTERNAL: ExitCode.INTERNAL,
    Blame.CASE: ExitCode.USAGE,
    Blame.AGENT: ExitCode.FAILED,
    Blame.INFRASTRUCTURE: ExitCode.INFRASTRUCTURE,
}
_EPSILON = 1e-9


def is_infrastructure_error(record: RunSummary) -> bool:
    """Whether the run is an ERROR that says nothing about the agent: its ``error_kind`` is not an
    agent stop (an internal, case data or infrastructure error); such a run counts as not run."""
    return infrastructure_error(record.status, record.error_kind)


def infrastructure_error(status: Status, error_kind: ErrorKind | None) -> bool:
    """``is_infrastructure_error`` of a run of this ``status`` and ``error_kind`` (a record being scored, or read
    back for ``--retry-errors``, has them before it has a summary)."""
    return status == ERROR and _blame(status, error_kind) is not Blame.AGENT


def blame(record: RunSummary) -> Blame | None:
    """Who the error of an ERROR run is down to (runner.kinds.ErrorKind.blame), None for another run.

    An error kind this tooltrial does not know (a results folder of a newer one) is infrastructure.
    """
    return _blame(record.status, record.error_kind)


def _blame(status: Status, error_kind: ErrorKind | None) -> Blame | None:
    if status != ERROR:
        return None
    if error_kind is None:
        return Blame.INFRASTRUCTURE
    try:
        return ErrorKind(error_kind).blame
    except ValueError:
        return Blame.INFRASTRUCTURE


@dataclass(frozen=True)
class Gate:
    """The gate of one case in one arm.

    ``pass_rate`` and ``threshold`` are fractions in [0, 1]; ``broken_by`` is who broke
    it (``internal``, ``case``, ``agent``, ``infrastructure``) or None when the gate holds.
    """

    case: str
    arm: str
    runs: int
    passes: int
    threshold: float
    broken_by: Blame | None

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
        others = [Blame(b) for b, n in f.blames.items() if b != Blame.AGENT for _ in range(n)]
        gates.append(Gate(cell.case, cell.arm, f.runs, f.passed, threshold, _broken_by(f.runs, f.passed, others, threshold)))
    return gates


def _first(*values: float | None) -> float:
    return next(float(v) for v in values if v is not None)


def _broken_by(runs: int, passes: int, others: list[Blame], threshold: float) -> Blame | None:
    """Who broke the gate; ``others`` are the blames of its runs' errors not of the agent's making."""
    if passes / runs >= threshold - _EPSILON:
        return None
    if (passes + len(others)) / runs < threshold - _EPSILON:  # too few even if each of those had passed
        return Blame.AGENT
    return next(b for b in EXIT_CODES if b in others)


def exit_code(gates: Sequence[Gate]) -> ExitCode:
    """The code of the worst blame of any broken gate (EXIT_CODES: 3, then 4, then 1, then 6), else 0."""
    broken = {g.broken_by for g in gates}
    return next((code for who, code in EXIT_CODES.items() if who in broken), ExitCode.OK)
