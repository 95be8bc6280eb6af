"""Aggregation of run records: per case and arm, per arm, and the paired analysis of two arms.

An **arm** is one provider x prompt (``RunRecord.arm``). A **cell** is one
case in one arm over its repeated runs. Scores the scoring step has not filled
(``outcome``, ``process``, ``accuracy``, tokens, cost left None) are left out
of means rather than counted as 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping, Sequence

from runner.run.record import PASS, RunRecord
from runner.scoring.gates import is_infrastructure_error
from runner.scoring.stats import (
    is_flaky,
    mcnemar_exact,
    mean_std,
    pass_at_k,
    pass_hat_k,
    wilson,
)
from runner.sums import known_sum

ALPHA = 0.05  # significance level of the paired verdict


@dataclass(frozen=True)
class Metrics:
    """What a group of runs did.

    Counts: ``runs``, ``passes``, ``infra_errors``. ``pass_rate`` and the Wilson
    95% ``interval`` are fractions. ``outcome``, ``process`` (means, with
    sample standard deviations) and ``accuracy`` are in [0, 1]. ``calls``,
    ``redundant``, ``errors`` and ``tokens`` (total tokens) are means per run;
    ``cost`` is the total in USD; ``duration`` the mean in seconds;
    ``tokens_per_pass`` and ``cost_per_pass`` divide the totals by the passes.
    None means no run reported that value (or no run passed).
    """

    runs: int
    passes: int
    infra_errors: int
    pass_rate: float
    interval: tuple[float, float]
    outcome: float | None
    outcome_std: float | None
    process: float | None
    process_std: float | None
    accuracy: float | None
    calls: float
    redundant: float
    errors: float
    tokens: float | None
    cost: float | None
    duration: float
    tokens_per_pass: float | None
    cost_per_pass: float | None


@dataclass(frozen=True)
class Cell:
    """One case in one arm. ``pass_at_k`` / ``pass_hat_k`` map k = 1..runs to the estimate."""

    case: str
    arm: str
    metrics: Metrics
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    flaky: bool


@dataclass(frozen=True)
class ArmStats:
    """One arm over all its cases; ``pass_at_k`` / ``pass_hat_k`` are the cells' means for k = 1..fewest runs."""

    arm: str
    metrics: Metrics
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]


@dataclass(frozen=True)
class Flip:
    """A case whose paired runs disagree: how many went pass->fail and fail->pass from A to B."""

    case: str
    pass_to_fail: int
    fail_to_pass: int


@dataclass(frozen=True)
class Paired:
    """Arm B against arm A over the same (case, run) pairs, infrastructure errors left out.

    ``pass_to_fail`` counts pairs A passed and B failed; ``fail_to_pass`` the
    reverse; ``p_value`` is the exact McNemar test on those two counts.
    """

    a: str
    b: str
    pairs: int
    a_passes: int
    b_passes: int
    pass_to_fail: int
    fail_to_pass: int
    p_value: float
    flips: list[Flip]

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    @property
    def verdict(self) -> str:
        """One line: the pass-rate difference, the flips, the p-value and whether it is significant."""
        if not self.pairs:
            return f"{self.b} vs {self.a}: no paired runs to compare"
        if not self.pass_to_fail and not self.fail_to_pass:
            return f"{self.b} vs {self.a}: same result on all {self.pairs} paired runs: no difference"
        delta = 100 * (self.b_passes - self.a_passes) / self.pairs
        level = f"significant at {ALPHA:g}"
        meaning = level if self.significant else f"not {level}, the difference may be chance"
        return (
            f"{self.b} vs {self.a}: {delta:+.0f} pts pass rate over {self.pairs} paired runs "
            f"({self.fail_to_pass} fail→pass, {self.pass_to_fail} pass→fail); "
            f"exact McNemar p = {self.p_value:.3g}: {meaning}"
        )


@dataclass(frozen=True)
class Comparison:
    """Every cell, every arm in first-seen order, and the paired analysis when there are exactly two arms."""

    arms: list[str]
    cells: list[Cell]
    arm_stats: list[ArmStats]
    paired: Paired | None


def metrics(records: Sequence[RunRecord]) -> Metrics:
    """The Metrics of a non-empty group of runs."""
    n, passes = len(records), sum(r.status == PASS for r in records)
    outcome, outcome_std = mean_std(r.outcome for r in records)
    process, process_std = mean_std(r.process for r in records)
    tokens_total = known_sum(r.tokens.total for r in records)
    cost = known_sum(r.cost for r in records)
    return Metrics(
        runs=n,
        passes=passes,
        infra_errors=sum(is_infrastructure_error(r) for r in records),
        pass_rate=passes / n,
        interval=wilson(passes, n),
        outcome=outcome,
        outcome_std=outcome_std,
        process=process,
        process_std=process_std,
        accuracy=mean_std(r.accuracy for r in records)[0],
        calls=sum(len(r.steps) for r in records) / n,
        redundant=sum(r.redundant for r in records) / n,
        errors=sum(r.errors for r in records) / n,
        tokens=mean_std(r.tokens.total for r in records)[0],
        cost=cost,
        duration=sum(r.duration for r in records) / n,
        tokens_per_pass=tokens_total / passes if tokens_total is not None and passes else None,
        cost_per_pass=cost / passes if cost is not None and passes else None,
    )


def aggregate(records: Sequence[RunRecord]) -> Comparison:
    """Aggregate ``records`` (any order) into cells, per-arm statistics and, for two arms, the paired analysis."""
    by_cell: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    by_arm: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        by_cell[(record.case, record.arm)].append(record)
        by_arm[record.arm].append(record)
    cells = [_cell(case, arm, runs) for (case, arm), runs in by_cell.items()]
    arms = list(by_arm)
    arm_stats = [_arm(arm, by_arm[arm], [c for c in cells if c.arm == arm]) for arm in arms]
    paired = None
    if len(arms) == 2:
        a, b = (_outcomes(by_arm[arm]) for arm in arms)
        paired = compare_pairs(arms[0], a, arms[1], b)
    return Comparison(arms, cells, arm_stats, paired)


def _cell(case: str, arm: str, runs: list[RunRecord]) -> Cell:
    m = metrics(runs)
    ks = range(1, m.runs + 1)
    return Cell(
        case, arm, m,
        pass_at_k={k: pass_at_k(m.runs, m.passes, k) for k in ks},
        pass_hat_k={k: pass_hat_k(m.runs, m.passes, k) for k in ks},
        flaky=is_flaky(m.runs, m.passes),
    )


def _arm(arm: str, runs: list[RunRecord], cells: list[Cell]) -> ArmStats:
    ks = range(1, min(c.metrics.runs for c in cells) + 1)
    return ArmStats(
        arm, metrics(runs),
        pass_at_k={k: sum(c.pass_at_k[k] for c in cells) / len(cells) for k in ks},
        pass_hat_k={k: sum(c.pass_hat_k[k] for c in cells) / len(cells) for k in ks},
    )


def _outcomes(records: Sequence[RunRecord]) -> dict[tuple[str, int], bool | None]:
    """(case, run index) -> passed, or None for an infrastructure error."""
    return {(r.case, r.run): None if is_infrastructure_error(r) else r.status == PASS for r in records}


def compare_pairs(
    a: str, a_runs: Mapping[tuple[str, int], bool | None], b: str, b_runs: Mapping[tuple[str, int], bool | None]
) -> Paired:
    """Pair the runs of A and B that share a (case, run index) and neither of which is None."""
    keys = [k for k in a_runs if k in b_runs and a_runs[k] is not None and b_runs[k] is not None]
    flips: dict[str, list[int]] = {}
    for case, run in keys:
        if a_runs[(case, run)] != b_runs[(case, run)]:
            flips.setdefault(case, [0, 0])[0 if a_runs[(case, run)] else 1] += 1
    down = sum(f[0] for f in flips.values())
    up = sum(f[1] for f in flips.values())
    return Paired(
        a=a, b=b, pairs=len(keys),
        a_passes=sum(bool(a_runs[k]) for k in keys),
        b_passes=sum(bool(b_runs[k]) for k in keys),
        pass_to_fail=down, fail_to_pass=up,
        p_value=mcnemar_exact(down, up),
        flips=[Flip(case, d, u) for case, (d, u) in flips.items()],
    )
