"""Summaries over runs: totals and means per arm and per case group, which the terminal tables,
the JSON report and JUnit read alike."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from runner.run.record import ERROR, FAIL, PASS, RunRecord
from runner.sums import known_mean, known_sum


@dataclass(frozen=True)
class Summary:
    """Totals and means over some runs.

    Means (accuracy, outcome, process) are over the runs where the metric is
    defined, None when it is defined for none. ``tokens`` and ``cost`` (USD) are
    the agents' totals, ``judge_tokens`` and ``judge_cost`` (USD) the judges'
    totals, kept apart; each None when no run reported any. ``duration`` is in
    seconds, summed. ``unconfined`` counts the runs whose commands ran without bubblewrap.
    ``failures`` counts runs per failure cause.
    """

    runs: int
    passed: int
    failed: int
    errored: int
    accuracy: float | None
    outcome: float | None
    process: float | None
    calls: int
    redundant: int
    errors: int
    tokens: int | None
    cost: float | None
    judge_tokens: int | None
    judge_cost: float | None
    duration: float
    unconfined: int = 0
    failures: dict[str, int] = field(default_factory=dict)

    @property
    def pass_rate(self) -> float:
        """Passed runs over runs, in [0, 1]; 0 for no runs."""
        return self.passed / self.runs if self.runs else 0.0

    @classmethod
    def of(cls, records: Sequence[RunRecord]) -> Summary:
        return cls(
            runs=len(records),
            passed=sum(r.status == PASS for r in records),
            failed=sum(r.status == FAIL for r in records),
            errored=sum(r.status == ERROR for r in records),
            accuracy=known_mean(r.accuracy for r in records),
            outcome=known_mean(r.outcome for r in records),
            process=known_mean(r.process for r in records),
            calls=sum(r.calls for r in records),
            redundant=sum(r.redundant for r in records),
            errors=sum(r.errors for r in records),
            tokens=known_sum(r.tokens.total for r in records),
            cost=known_sum(r.cost for r in records),
            judge_tokens=known_sum(r.judge_tokens.total for r in records),
            judge_cost=known_sum(r.judge_cost for r in records),
            duration=sum(r.duration for r in records),
            unconfined=sum(r.sandbox is not None and r.sandbox.mode == "none" for r in records),
            failures=dict(Counter(r.failure for r in records if r.failure)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "pass_rate": self.pass_rate}


@dataclass(frozen=True)
class ArmSummary:
    """The summary of one arm (provider x prompt): over all its runs, and per case group."""

    provider: str
    prompt: str
    total: Summary
    groups: dict[str, Summary]

    @property
    def label(self) -> str:
        return f"{self.provider} · {self.prompt}"


def summarize(records: Sequence[RunRecord]) -> list[ArmSummary]:
    """One ArmSummary per arm, in the order arms first appear; groups in the order they first appear."""
    arms: dict[tuple[str, str], list[RunRecord]] = {}
    for record in records:
        arms.setdefault((record.provider, record.prompt), []).append(record)
    summaries = []
    for (provider, prompt), runs in arms.items():
        groups: dict[str, list[RunRecord]] = {}
        for record in runs:
            groups.setdefault(record.case.split("/", 1)[0], []).append(record)
        summaries.append(ArmSummary(provider, prompt, Summary.of(runs), {g: Summary.of(rs) for g, rs in groups.items()}))
    return summaries
