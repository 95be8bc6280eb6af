"""How runs coped with injected faults (runner.tools.faults): each run's counts on its ``faults`` record and the
``fault_not_handled`` failure cause; per arm, the recovery figures; per case, the robustness table: its pass rate
in the clean twin (``--faults off``: the same case and provider, faults off) against each fault arm.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.kinds import FailureCause, Status
from runner.run.faulted import FaultUse
from runner.run.record import RunRecord
from runner.run.trajectory import Step
from runner.scoring.gates import infrastructure_error
from runner.scoring.summary import RunSummary
from runner.spec.faults import OFF

_NOT_HANDLED_FROM = frozenset(FailureCause) - {FailureCause.RUN_ERROR}  # a run error is not the agent's doing


def first_fault(steps: Sequence[Step]) -> int | None:
    """The index of the first step that got a fault, None for none."""
    return next((i for i, step in enumerate(steps) if step.fault is not None), None)


def fill_faults(record: RunRecord) -> None:
    """Set ``record.faults``' counts (runner.run.faulted.FaultUse) from its steps, and its failure cause to
    ``fault_not_handled`` when it failed after a fault and no later call got a clean answer (no fault, no error):
    it gave up on, or trusted, what the fault left it, where retrying or another tool could have worked around it.
    A failure with a clean answer after the fault is left its own cause: unrelated to the fault. No-op without
    a ``faults`` record."""
    use = record.faults
    if use is None:
        return
    steps, first = record.steps, first_fault(record.steps)
    use.received = sum(step.fault is not None for step in steps)
    if first is None:
        use.recovered = use.calls_to_recover = None
        use.retries = 0
        return
    faulted: set[str] = set()
    use.retries = 0
    for step in steps[first:]:
        use.retries += step.name in faulted
        if step.fault is not None:
            faulted.add(step.name)
    clean = next((i for i, step in enumerate(steps[first + 1:], 1) if step.fault is None and not step.is_error), None)
    use.calls_to_recover = clean
    use.recovered = None if infrastructure_error(record.status, record.error_kind) else record.status == Status.PASS
    if record.failure in _NOT_HANDLED_FROM and clean is None:
        record.failure = FailureCause.FAULT_NOT_HANDLED


@dataclass(frozen=True)
class Recovery:
    """One arm's fault figures: ``faulted`` runs (>= 1 fault), of them ``recovered`` (passed) and ``not_handled``
    (failure cause ``fault_not_handled``); ``retries`` (calls of a faulted tool after its first fault) and
    ``calls_to_recover`` (runner.run.faulted.FaultUse), each a mean over the faulted runs that have one, None for none.
    """

    arm: str
    faulted: int
    recovered: int
    not_handled: int
    retries: float | None
    calls_to_recover: float | None

    @property
    def recovery(self) -> float | None:
        """``recovered / faulted``, None without a faulted run."""
        return self.recovered / self.faulted if self.faulted else None


def recoveries(records: Sequence[RunSummary]) -> list[Recovery]:
    """Each arm's Recovery, in first-seen order, for the arms with a faulted run."""
    by_arm: dict[str, list[FaultUse]] = defaultdict(list)
    causes: dict[str, int] = defaultdict(int)
    for record in records:
        if record.faults is not None and record.faults.received:
            by_arm[record.arm].append(record.faults)
            causes[record.arm] += record.failure == FailureCause.FAULT_NOT_HANDLED
    return [Recovery(arm, len(uses), sum(bool(u.recovered) for u in uses), causes[arm], _mean([u.retries for u in uses]),
                     _mean([u.calls_to_recover for u in uses if u.calls_to_recover is not None]))
            for arm, uses in by_arm.items()]


@dataclass(frozen=True)
class RobustRow:
    """One row of the robustness table: ``case`` in ``base`` (``provider · prompt``), its passes and runs in the
    clean twin (``--faults off``) and in the fault arm named ``faults``; ``difference`` is the fault arm's pass rate
    minus the clean twin's, None when either has no run."""

    case: str
    base: str
    faults: str
    clean_passed: int
    clean_runs: int
    passed: int
    runs: int

    @property
    def difference(self) -> float | None:
        if not self.runs or not self.clean_runs:
            return None
        return self.passed / self.runs - self.clean_passed / self.clean_runs


def robustness_rows(records: Sequence[RunSummary]) -> list[RobustRow]:
    """The robustness table of a suite run with ``--faults``: each case, base arm and fault arm but ``off``, in
    first-seen order, beside the same case's clean twin; [] without a clean twin (no ``--faults``)."""
    tally: dict[tuple[str, str, str], list[int]] = {}
    for record in records:
        arm = record.faults.arm if record.faults is not None else None
        if arm is None:
            continue
        base = record.arm.removesuffix(f" · faults {arm}")  # its provider · prompt (runner.run.record.arm_label)
        counts = tally.setdefault((record.case, base, arm), [0, 0])
        counts[0] += record.status == Status.PASS
        counts[1] += 1
    return [RobustRow(case, base, arm, *tally.get((case, base, OFF), [0, 0]), *counts)
            for (case, base, arm), counts in tally.items() if arm != OFF and (case, base, OFF) in tally]


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def robustness_dict(recovered: Sequence[Recovery], rows: Sequence[RobustRow]) -> dict[str, Any]:
    """report.json's ``robustness``: ``{recovery: [{arm, faulted, recovered, recovery, not_handled, retries,
    calls_to_recover}], table: [{case, arm, faults, clean_passed, clean_runs, passed, runs, difference}]}``."""
    return {"recovery": [{**dataclasses.asdict(r), "recovery": r.recovery} for r in recovered],
            "table": [{"case": row.case, "arm": row.base, "faults": row.faults, "clean_passed": row.clean_passed,
                       "clean_runs": row.clean_runs, "passed": row.passed, "runs": row.runs, "difference": row.difference}
                      for row in rows]}
