"""What a check is: a function from its ``expect`` spec and the run's context to results."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.kinds import Category, ErrorKind
from runner.providers.base import Usage
from runner.providers.kind import ProviderSpec
from runner.run.trajectory import Trajectory
from runner.sandbox.command import CommandResult
from runner.spec.case import Case

OUTCOME, PROCESS, BUDGET = Category.OUTCOME, Category.PROCESS, Category.BUDGET


CALIBRATED, UNDER_CALIBRATED, UNCALIBRATED = "calibrated", "under-calibrated", "uncalibrated"


@dataclass(frozen=True)
class JudgeCalibration:
    """How far a judge check's judge is calibrated on its rubric (runner.output.calibrations): ``judge`` (its
    name as given), ``status`` (``calibrated``; ``under-calibrated``: its kappa is below the case's
    ``min_kappa``, or undefined; ``uncalibrated``: never calibrated on this rubric), its Cohen's ``kappa`` (in
    [-1, 1], None without one) and ``min_kappa``, the floor that applied: the case's, else
    runner.checks.judge.DEFAULT_MIN_KAPPA (None only in records written before there was a default)."""

    judge: str
    status: str
    kappa: float | None = None
    min_kappa: float | None = None


@dataclass(frozen=True)
class JudgeSettings:
    """How judge checks run: ``repeats``, the times the judge is asked per run (``--judge-repeats``; the
    check's score is their mean), and ``calibrations``, the kappa of each calibration kept, by (the rubric's
    fingerprint, the judge's key: runner.checks.judge.judge_key) (None where kappa is undefined); None where they were not looked up (a
    judge check then records no calibration mark: ``run`` looks them up, an in-process run need not)."""

    repeats: int = 1
    calibrations: Mapping[tuple[str, str], float | None] | None = None


@dataclass(frozen=True)
class CheckResult:
    """One assertion: ``check`` names it (``verify``, ``files``, ``trace.avoid``...),
    ``category`` is ``outcome``, ``process`` or ``budget`` (the registry stamps its kind's, from the
    check table), ``message`` is the human line.

    ``score`` and ``reasoning`` are a judge's grade (0 to 1) and its explanation,
    ``usage`` the judge's own tokens and USD cost (None when it reported none;
    never part of the run's ``tokens`` or ``cost``, summed into its
    ``judge_tokens`` and ``judge_cost`` instead). ``error_kind`` marks a
    check that could not be made (``judge_error``, ``check_error``, ...): the run becomes an
    ERROR of that kind (blamed as runner.kinds.ErrorKind.blame says) with ``message`` as its cause. ``scores`` are each of a judge's answers when it was
    asked more than once (``--judge-repeats``; ``score`` is their mean), ``calibration`` how far the judge
    is calibrated on the rubric (None for checks that are no judge's).
    """

    check: str
    passed: bool
    message: str
    category: Category = OUTCOME
    score: float | None = None
    reasoning: str | None = None
    usage: Usage | None = None
    error_kind: ErrorKind | None = None
    scores: list[float] = field(default_factory=list)
    calibration: JudgeCalibration | None = None


@dataclass(frozen=True)
class CheckCommand:
    """An ``expect.check`` command to run in the workspace as verify's run: ``command`` (``bash -c``), ``env``
    (more variables over the run's), ``readable`` (host folders it may read, read-only under bwrap) and
    ``timeout`` (seconds; None: the run's command timeout), cut short at the run's deadline either way."""

    command: str
    env: Mapping[str, str] = field(default_factory=dict)
    readable: tuple[str, ...] = ()
    timeout: float | None = None


@dataclass(frozen=True)
class CheckContext:
    """What checks may look at after the agent finished.

    ``judges`` maps a judge model name to its provider; the key None is the
    default judge (``--judge``), used by cases that name no model. ``tokens``
    and ``cost`` (USD) are the run's totals, None when no request reported them.
    ``deadline`` (``time.monotonic()``) is the end of the run's time, which bounds the checks too.
    ``run_check`` runs an ``expect.check`` command (each kept on the record); None where no command may run.
    ``judging``: how judge checks run (repeats, calibrations).
    """

    case: Case
    workspace: Path
    trajectory: Trajectory
    run_command: Callable[[str], CommandResult]
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)
    tokens: int | None = None
    cost: float | None = None
    deadline: float | None = None
    run_check: Callable[[CheckCommand], CommandResult] | None = None
    judging: JudgeSettings = field(default_factory=JudgeSettings)


Check = Callable[[Any, CheckContext], list[CheckResult]]

