"""The one aggregation of run records: per cell (case x arm), per case group in an arm, per arm,
over every run, and the paired analyses of the arms (runner.scoring.pairs picks which).

An **arm** is one provider x prompt (``RunRecord.arm``). A **cell** is one case in one arm over
its repeated runs; a **group** is the runs of one case file (the id before ``/``) in one arm.
Every figure is computed here once, in ``Figures``, and every reader (the terminal tables, the
JSON report, JUnit, the gates, the regression view) takes it from here. Scores the scoring step
has not filled (``outcome``, ``process``, ``accuracy``, tokens, cost left None) are left out of
means and totals rather than counted as 0.

A run ended by an error not of the agent's making (runner.scoring.gates.is_infrastructure_error:
provider or judge failed, setup, the case's data, tooltrial's own bug) is **not scored**: it is
counted apart (``infra_errors``, ``blames``) and left out of every mean, of the pass rate and its
interval, and of pass@k and pass^k, whatever scores its record holds (a results folder of an older
tooltrial). Totals (calls, errors, tokens, cost, time) still count it: they are what was spent. The
gates (runner.scoring.gates) read ``runs``, ``passed`` and ``blames``, all runs included.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from runner.run.record import ERROR, FAIL, PASS
from runner.run.requests import Tokens
from runner.scoring.gates import blame, is_infrastructure_error
from runner.scoring.injection import InjectionFigures, injection_figures
from runner.scoring.paired import Paired
from runner.scoring.pairs import comparisons
from runner.scoring.robustness import Recovery, RobustRow, recoveries, robustness_rows
from runner.scoring.stats import is_flaky, mean_std, pass_at_k, pass_hat_k, wilson
from runner.scoring.summary import RunSummary
from runner.scoring.trajectorymatch import TrajectoryMatch
from runner.sums import known_mean, known_sum


@dataclass(frozen=True)
class TrajectoryMeans:
    """The means of the runs' ``trajectory_match`` (runner.scoring.trajectorymatch) over the scored runs that
    have one, in [0, 1]: ``exact``, ``in_order`` and ``any_order`` are the fractions of those runs that
    matched so; ``call_precision`` and ``call_recall`` are None when no such run has them."""

    runs: int
    exact: float
    in_order: float
    any_order: float
    name_precision: float
    name_recall: float
    call_precision: float | None
    call_recall: float | None


def trajectory_means(matches: Sequence[TrajectoryMatch | None]) -> TrajectoryMeans | None:
    """The TrajectoryMeans of ``matches`` (None entries left out); None when none is given."""
    known = [m for m in matches if m is not None]
    if not known:
        return None
    values = {name: known_mean(getattr(m, name) for m in known) for name in vars(known[0])}
    return TrajectoryMeans(runs=len(known), **values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)  # a cell's figures took 1.6 KB with a __dict__, 0.3 KB without
class Figures:
    """What a non-empty group of runs did; each figure is named once, totals ``*_total``, means ``*_mean``.

    Counts of runs: ``runs``, ``passed``, ``failed``, ``errored`` (status error, whatever the cause)
    and ``infra_errors`` (the errored runs ended by an error not of the agent's making, runner.scoring
    .gates.is_infrastructure_error: they say nothing about the agent and are not scored; the other
    ``runs - infra_errors`` runs are the *scored* ones), ``unconfined`` (commands run without
    bubblewrap); ``failures`` counts runs per failure cause, ``blames`` errored runs per blame (runner.kinds.Blame:
    whose doing the error was; the gates read it). ``pass_rate`` (passed / scored runs) and its Wilson
    95% ``interval`` are fractions; ``pass_rate`` is None when no run was scored. ``accuracy_mean``,
    ``outcome_mean`` and ``process_mean`` (with sample standard deviations ``*_std``) are in [0, 1], over
    the scored runs where they are defined. ``calls``, ``redundant`` (repeated identical calls) and
    ``errors`` are counts per run, summed over all runs and averaged over the scored runs. ``tokens`` are the
    agents' own, summed over all runs (runner.run.requests.Tokens: its ``unreported`` counts the model requests
    that reported no usage, so the totals miss them; the report writes them ``prompt_tokens_total``,
    ``completion_tokens_total``, ``tokens_total``, ``reasoning_tokens_total``, ``cached_tokens_total`` and
    ``unreported_requests``); ``tokens_mean`` is the mean total over the scored runs that reported tokens;
    ``cost_total`` is USD; the judges' usage is apart (``judge_tokens``, written ``judge_tokens_total`` for its
    total, and ``judge_cost_total`` USD). ``duration_total`` (all runs) and
    ``duration_mean`` (scored runs) are wall-clock seconds. ``tokens_per_pass`` and ``cost_per_pass``
    divide the totals by the passes. None means no run reported the value (a mean: no run was scored;
    per pass: no run passed). ``truncated_replies`` counts the runs whose final reply was cut off at the
    output limit, ``prompt_overridden`` those that used their case's own ``system`` prompt instead of the
    arm's, ``queued_total`` the seconds runs waited for a free provider slot and ``rate_limited_total`` those their
    model requests waited for the provider's rate limit (neither in ``duration_total``).
    ``trajectory_mean`` holds the means of the trajectory match scores over the scored runs of cases with a
    reference (``runs`` counts them), None when there is no such run.
    """

    runs: int
    passed: int
    failed: int
    errored: int
    infra_errors: int
    pass_rate: float | None
    interval: tuple[float, float]
    accuracy_mean: float | None
    outcome_mean: float | None
    outcome_std: float | None
    process_mean: float | None
    process_std: float | None
    calls_total: int
    calls_mean: float | None
    redundant_total: int
    redundant_mean: float | None
    errors_total: int
    errors_mean: float | None
    tokens: Tokens
    tokens_mean: float | None
    tokens_per_pass: float | None
    cost_total: float | None
    cost_per_pass: float | None
    judge_tokens: Tokens
    judge_cost_total: float | None
    duration_total: float
    duration_mean: float | None
    unconfined: int
    truncated_replies: int
    prompt_overridden: int
    queued_total: float
    rate_limited_total: float = 0.0
    trajectory_mean: TrajectoryMeans | None = None
    failures: dict[str, int] = field(default_factory=dict)
    blames: dict[str, int] = field(default_factory=dict)

    @property
    def scored(self) -> int:
        """How many runs were scored: all but the ``infra_errors``."""
        return self.runs - self.infra_errors


def figures(records: Sequence[RunSummary]) -> Figures:
    """The Figures of ``records``; of no records (or none scored), counts are 0 and means and
    ``pass_rate`` None, the interval (0.0, 1.0)."""
    n, passed = len(records), sum(r.status == PASS for r in records)
    scored = [r for r in records if not is_infrastructure_error(r)]
    outcome, outcome_std = mean_std(r.outcome for r in scored)
    process, process_std = mean_std(r.process for r in scored)
    calls, redundant, errors = (sum(getattr(r, name) for r in records) for name in ("calls", "redundant", "errors"))
    tokens = Tokens.of([r.tokens for r in records])
    total = tokens.total_tokens
    cost = known_sum(r.cost for r in records)
    return Figures(
        runs=n,
        passed=passed,
        failed=sum(r.status == FAIL for r in records),
        errored=sum(r.status == ERROR for r in records),
        infra_errors=n - len(scored),
        pass_rate=passed / len(scored) if scored else None,
        interval=wilson(passed, len(scored)),
        accuracy_mean=known_mean(r.accuracy for r in scored),
        outcome_mean=outcome,
        outcome_std=outcome_std,
        process_mean=process,
        process_std=process_std,
        calls_total=calls,
        calls_mean=known_mean(r.calls for r in scored),
        redundant_total=redundant,
        redundant_mean=known_mean(r.redundant for r in scored),
        errors_total=errors,
        errors_mean=known_mean(r.errors for r in scored),
        tokens=tokens,
        tokens_mean=known_mean(r.tokens.total_tokens for r in scored),
        tokens_per_pass=total / passed if total is not None and passed else None,
        cost_total=cost,
        cost_per_pass=cost / passed if cost is not None and passed else None,
        judge_tokens=Tokens.of([r.judge_tokens for r in records]),
        judge_cost_total=known_sum(r.judge_cost for r in records),
        duration_total=sum(r.duration for r in records),
        duration_mean=known_mean(r.duration for r in scored),
        unconfined=sum(r.sandbox is not None and r.sandbox.mode == "none" for r in records),
        truncated_replies=sum(r.truncated_reply for r in records),
        prompt_overridden=sum(r.prompt_overridden for r in records),
        queued_total=sum(r.queued for r in records),
        rate_limited_total=sum(r.rate_limited for r in records),
        trajectory_mean=trajectory_means([r.trajectory_match for r in scored]),
        failures=dict(Counter(r.failure for r in records if r.failure)),
        blames=dict(Counter(str(b) for b in map(blame, records) if b is not None)),
    )


@dataclass(frozen=True, slots=True)
class Cell:
    """One case in one arm. ``pass_at_k`` / ``pass_hat_k`` map k = 1..scored runs to the estimate over
    the scored runs (empty when none was); ``flaky`` when some scored runs passed and some did not."""

    case: str
    arm: str
    figures: Figures
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    flaky: bool


@dataclass(frozen=True)
class Arm:
    """One arm (``label`` is ``provider · prompt``, ``provider · prompt · tool_defs`` with ``-T``) over all its
    runs, and per case group in first-seen order.

    ``pass_at_k`` / ``pass_hat_k`` are the means over the arm's cells with a scored run, for k = 1..the
    fewest scored runs of such a cell (empty when no run of the arm was scored). ``injection``: its prompt-injection
    figures (runner.scoring.injection), None when no case of it has injections.
    """

    label: str
    provider: str
    prompt: str
    figures: Figures
    groups: dict[str, Figures]
    pass_at_k: dict[int, float]
    pass_hat_k: dict[int, float]
    tool_defs: str | None = None
    injection: InjectionFigures | None = None


@dataclass(frozen=True)
class Aggregate:
    """Every run aggregated: ``overall`` (every run of every arm), the ``arms`` and ``cells`` in
    first-seen order, and ``comparisons``, the paired analyses of the arms (runner.scoring.pairs: with
    two arms the one of them, with more each two that differ in one dimension); with faults, each arm's
    ``recoveries`` and the ``robustness`` table against the clean twin (runner.scoring.robustness)."""

    overall: Figures
    arms: list[Arm]
    cells: list[Cell]
    comparisons: list[Paired]
    recoveries: list[Recovery] = field(default_factory=list)
    robustness: list[RobustRow] = field(default_factory=list)

    @property
    def paired(self) -> Paired | None:
        """The paired analysis of exactly two arms; None with any other number."""
        return self.comparisons[0] if len(self.arms) == 2 else None

    @property
    def labels(self) -> list[str]:
        """The arms' labels, in first-seen order."""
        return [arm.label for arm in self.arms]

    def arm(self, label: str) -> Arm:
        """The arm labelled ``label``; raises KeyError when there is none."""
        for arm in self.arms:
            if arm.label == label:
                return arm
        raise KeyError(label)


def aggregate(records: Sequence[RunSummary]) -> Aggregate:
    """Aggregate ``records`` (any order) into cells, arms with their groups, the overall figures
    and the paired analyses of the arms."""
    by_cell: dict[tuple[str, str], list[RunSummary]] = defaultdict(list)
    by_arm: dict[str, list[RunSummary]] = defaultdict(list)
    for record in records:
        by_cell[(record.case, record.arm)].append(record)
        by_arm[record.arm].append(record)
    cells = [_cell(case, arm, runs) for (case, arm), runs in by_cell.items()]
    arms = [_arm(runs, [c for c in cells if c.arm == label]) for label, runs in by_arm.items()]
    return Aggregate(figures(records), arms, cells, comparisons(records), recoveries(records), robustness_rows(records))


def _cell(case: str, arm: str, runs: list[RunSummary]) -> Cell:
    f = figures(runs)
    ks = range(1, f.scored + 1)
    return Cell(
        case, arm, f,
        pass_at_k={k: pass_at_k(f.scored, f.passed, k) for k in ks},
        pass_hat_k={k: pass_hat_k(f.scored, f.passed, k) for k in ks},
        flaky=is_flaky(f.scored, f.passed),
    )


def _arm(runs: list[RunSummary], cells: list[Cell]) -> Arm:
    groups: dict[str, list[RunSummary]] = {}
    for record in runs:
        groups.setdefault(record.case.split("/", 1)[0], []).append(record)
    scored = [c for c in cells if c.figures.scored]
    ks = range(1, min((c.figures.scored for c in scored), default=0) + 1)
    return Arm(
        runs[0].arm, runs[0].provider, runs[0].prompt, figures(runs),
        groups={name: figures(group) for name, group in groups.items()},
        pass_at_k={k: sum(c.pass_at_k[k] for c in scored) / len(scored) for k in ks},
        pass_hat_k={k: sum(c.pass_hat_k[k] for c in scored) / len(scored) for k in ks}, tool_defs=runs[0].tool_defs,
        injection=injection_figures(runs),
    )
