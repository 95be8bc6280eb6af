"""What the judges of a suite's runs are worth: how far each is calibrated on its rubric (``calibrations``), and
how much of the spread of judged scores is the judge's own (``noise``, from ``--judge-repeats``), as report.json
keeps them under ``judges`` (``judges_dict``)."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.checks.base import CALIBRATED
from runner.scoring.summary import RunSummary


@dataclass(frozen=True)
class Noise:
    """The variance of one cell's (arm x case) judged scores split in two, from ``runs`` runs each judged
    ``repeats`` times (scores in [0, 1], so variances in [0, 0.25]).

    ``judge``: the mean over runs of the variance of one run's repeats (the judge's own spread on one
    transcript). ``run``: the variance of the runs' mean scores less ``judge / repeats``, held at 0 or more (what
    differs from run to run, the judge's spread taken out); None with one run. ``total``: their sum, the
    variance of one judged score. The balanced one-way random-effects ANOVA estimators (Searle, Casella and
    McCulloch 1992, "Variance Components", section 3.5): ``judge`` is the within-run mean square, ``run`` is
    (between-run mean square - within) / repeats.
    """

    arm: str
    case: str
    runs: int
    repeats: int
    judge: float
    run: float | None
    total: float


def noise(runs: Sequence[RunSummary]) -> list[Noise]:
    """The split of each cell whose runs were judged more than once each, in first-seen order; a cell's runs
    with fewer repeats than its most (a judge error on one) are left out of it."""
    cells: dict[tuple[str, str], list[tuple[float, ...]]] = defaultdict(list)
    for run in runs:
        scores = run.judge_scores
        if len(scores) > 1:
            cells[(run.arm, run.case)].append(scores)
    found = []
    for (arm, case), all_scores in cells.items():
        repeats = max(map(len, all_scores))
        kept = [s for s in all_scores if len(s) == repeats]
        judge = statistics.fmean(statistics.variance(s) for s in kept)
        between = statistics.variance([statistics.fmean(s) for s in kept]) if len(kept) > 1 else None
        spread = None if between is None else max(0.0, between - judge / repeats)
        found.append(Noise(arm, case, len(kept), repeats, judge, spread, judge + (spread or 0.0)))
    return found


def judges_dict(runs: Sequence[RunSummary]) -> dict[str, Any] | None:
    """report.json's ``judges``: ``judged_runs`` (runs with a judge's grade), ``uncalibrated_runs`` (those
    with a judge not ``calibrated`` on its rubric), ``calibrations`` (each judge, status, kappa and min_kappa
    seen, with its count of runs) and ``noise`` (``noise``'s cells); None when no run was graded by a judge.
    A run whose judge checks carry no calibration mark (its calibrations were not looked up) counts as judged,
    not as uncalibrated."""
    judged = [run for run in runs if run.judge_marks or run.judge_scores]
    if not judged:
        return None
    seen = Counter(m for run in judged for m in run.judge_marks)
    return {
        "judged_runs": len(judged),
        "uncalibrated_runs": sum(any(m.status != CALIBRATED for m in run.judge_marks) for run in judged),
        "calibrations": [{"judge": m.judge, "status": m.status, "kappa": m.kappa, "min_kappa": m.min_kappa, "runs": n}
                         for m, n in seen.items()],
        "noise": [{"arm": n.arm, "case": n.case, "runs": n.runs, "repeats": n.repeats, "judge_variance": n.judge,
                   "run_variance": n.run, "total_variance": n.total} for n in noise(runs)],
    }

