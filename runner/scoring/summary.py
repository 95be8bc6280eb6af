"""What the aggregation keeps of a finished run: a slim, fixed-size summary of its record.

A suite's records go to the results folder as each run ends (runner.suite.session), and only their
summaries stay in memory, so memory grows by a few hundred bytes a run however much a run said or
did; every reader that needs a whole record (run lines, the report's ``runs``, JUnit's failures, the
HTML page's transcripts, OpenTelemetry spans) reads it back from its run file, one at a time
(runner.output.scan). A ``RunSummary`` is the one projection of the run record that the aggregation
(runner.scoring.aggregate), the gates, the paired analysis, the regression view and the pass count take,
its attributes named as RunRecord's: they take a summary alone, and a caller holding a whole record
summarizes it first (``summarize``).
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.checks.base import CheckResult, JudgeCalibration
from runner.kinds import ErrorKind, FailureCause, Status
from runner.run.faulted import FaultUse
from runner.run.injected import InjectionOutcome
from runner.run.provenance import Provenance
from runner.run.record import CacheUse, RunRecord
from runner.run.requests import Tokens
from runner.sandbox.command import Confinement
from runner.scoring.trajectorymatch import TrajectoryMatch

_NO_TOKENS = Tokens()  # shared by the many runs that report none (the scripted provider's, judge-less runs)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run as the aggregation sees it: its key (``case`` full id, ``provider``, ``prompt``, ``tool_defs``,
    ``run`` number), ``status`` and ``error_kind``, scores (``outcome``, ``process`` in [0, 1], ``accuracy``
    1/0), counts (``calls``, ``redundant``, ``errors``), the agent's ``tokens`` and ``cost`` (USD), the
    judges' ``judge_tokens`` and ``judge_cost`` (USD), ``duration``, ``queued`` and ``rate_limited``
    (seconds), the ``failure`` cause, the ``trajectory_match``, the ``sandbox`` used, the response
    ``cache``'s use, the flags ``prompt_overridden`` and ``truncated_reply``, the ``provenance`` (fingerprints of
    its inputs), the ``arm`` label, the ``attempt`` number (``run --retry-errors``) and the ``faults`` it received:
    each as RunRecord has it (runner.run.record); its ``injection`` without the attack checks' results; ``judge_marks``
    and ``judge_scores``, its judge checks' calibration marks and judged scores (``marks_of``, ``scores_of``)."""

    case: str
    provider: str
    prompt: str
    tool_defs: str | None
    run: int
    status: Status
    error_kind: ErrorKind | None
    outcome: float | None
    process: float | None
    accuracy: int | None
    calls: int
    redundant: int
    errors: int
    tokens: Tokens
    cost: float | None
    judge_tokens: Tokens
    judge_cost: float | None
    duration: float
    failure: FailureCause | None
    trajectory_match: TrajectoryMatch | None
    sandbox: Confinement | None
    prompt_overridden: bool
    truncated_reply: bool
    queued: float
    rate_limited: float
    cache: CacheUse | None
    provenance: Provenance | None
    arm: str
    attempt: int
    faults: FaultUse | None = None
    injection: InjectionOutcome | None = None
    judge_marks: tuple[JudgeCalibration, ...] = ()
    judge_scores: tuple[float, ...] = ()

    @property
    def fault_arm(self) -> str | None:
        """Its fault arm's name (``run --faults``), None without one (RunRecord.fault_arm)."""
        return None if self.faults is None else self.faults.arm


def summarize(record: RunRecord) -> RunSummary:
    """The RunSummary of ``record``; token counts that report nothing share one ``Tokens()``."""
    judge = record.judge_tokens
    return RunSummary(
        case=record.case, provider=record.provider, prompt=record.prompt, tool_defs=record.tool_defs, run=record.run, status=record.status,
        error_kind=record.error_kind, outcome=record.outcome, process=record.process, accuracy=record.accuracy,
        calls=record.calls, redundant=record.redundant, errors=record.errors,
        tokens=_NO_TOKENS if record.tokens == _NO_TOKENS else record.tokens, cost=record.cost,
        judge_tokens=_NO_TOKENS if judge == _NO_TOKENS else judge, judge_cost=record.judge_cost,
        duration=record.duration, failure=record.failure, trajectory_match=record.trajectory_match,
        sandbox=record.sandbox, prompt_overridden=record.prompt_overridden, truncated_reply=record.truncated_reply,
        queued=record.queued, rate_limited=record.rate_limited, cache=record.cache,
        provenance=_shared(record.provenance), arm=record.arm, attempt=record.attempt, faults=record.faults,
        injection=None if record.injection is None else dataclasses.replace(record.injection, attack_checks=[]),
        judge_marks=marks_of(record.checks), judge_scores=scores_of(record.checks),
    )


def marks_of(checks: Sequence[CheckResult]) -> tuple[JudgeCalibration, ...]:
    """The calibration marks of a run's judge checks, in order."""
    return tuple(c.calibration for c in checks if c.calibration is not None)


def scores_of(checks: Sequence[CheckResult]) -> tuple[float, ...]:
    """The judged scores of a run's first judge check that has any: each repeat's (``--judge-repeats``), else its one."""
    for c in checks:
        if c.check == "judge" and c.score is not None:
            return tuple(c.scores) or (c.score,)
    return ()


def _shared(provenance: Provenance | None) -> Provenance | None:
    """``provenance`` with its texts interned (``sys.intern``): most of its fingerprints are the same from run to
    run (the prompt's, the tools', a case's runs, the parts most cases leave alone), and a run file read back or a
    digest made gives each run its own copies: a summary took 5.2 KB with them, 2.8 KB shared (tracemalloc over
    1,000 summaries of scripted runs, docs/performance.md, (d))."""
    if provenance is None:
        return None
    texts: dict[str, Any] = {f.name: _interned(getattr(provenance, f.name)) for f in dataclasses.fields(provenance)
             if f.name not in ("case_parts", "params")}
    parts = {sys.intern(part): sys.intern(value) for part, value in provenance.case_parts.items()}
    return dataclasses.replace(provenance, case_parts=parts, **texts)


def _interned(text: str | None) -> str | None:
    return None if text is None else sys.intern(text)


def retried_count(records: Sequence[RunSummary]) -> int:
    """How many of ``records`` are a later attempt of a run: one that ``run --resume RESULTS
    --retry-errors`` ran again after an error not of the agent's making."""
    return sum(r.attempt > 1 for r in records)
