"""The run matrix: cases x arms (provider x prompt) x repeats, each run isolated.

One run (DESIGN.md "One run"): make the workspace, render the prompts, run the
agent loop through the turn limit, snapshot, check, record, clean up. Every
failure of a run becomes data on its record; the suite always goes on. Runs
execute concurrently on a bounded pool (runner.pool); they share no mutable
state, and their records come back in plan order whatever the concurrency.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import traceback
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterable, Mapping, Sequence

from runner.run.agent import RunTimeout, Trajectory, run_agent
from runner.spec.case import Case
from runner.checks.base import CheckContext
from runner.checks.registry import run_checks
from runner.errors import UserError, UserErrors
from runner.run.prompts import PromptTemplate, context_for, system_prompt, turn_prompt, turn_prompts
from runner.providers.registry import ProviderSpec
from runner.providers.base import Completion, ProviderError, Usage
from runner.providers.limits import TurnLimited
from runner.run.pool import InOrder, run_pool
from runner.providers.scripted import script_reply
from runner.run.record import ERROR, FAIL, PASS, RequestStats, RunRecord, Tokens
from runner.sandbox.command import CommandResult, Sandbox, budget
from runner.scoring.metrics import fill_metrics
from runner.scoring.stats import known_sum
from runner.tools.toolbox import build_toolbox
from runner.tools.base import ToolContext
from runner.tools.mocks import mock_tools
from runner.run.workspace import SetupError, SnapshotStopped, Workspace

DEFAULT_RUN_TIMEOUT = 600.0
DEFAULT_COMMAND_TIMEOUT = 60.0
DEFAULT_JOBS = 4
CANCELLED = "cancelled"  # error_kind of a run stopped by an interruption; it counts as not run
RunKey = tuple[str, str, str, int]  # case full id, provider name, prompt name, run index
INTERNAL = "internal"  # error_kind of a run that met a bug in tooltrial
_KEPT = frozenset({"case", "provider", "prompt", "run", "duration", "sandbox"})  # what _clear keeps


@dataclass(frozen=True)
class Arm:
    """One column of a comparison: a provider and a system prompt template."""

    provider: ProviderSpec
    prompt: PromptTemplate


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every run. Times are in seconds; ``timeout`` overrides each case's.

    ``judges`` are the judge providers by model name, None for the default (runner.checks.judge).

    ``jobs`` is how many runs go at once. Setting ``cancel`` (e.g. on Ctrl-C) starts
    no further run and stops running ones before their next model request or tool call.
    """

    sandbox: Sandbox
    keep: bool = False
    timeout: float | None = None
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)
    jobs: int = 1
    cancel: threading.Event = field(default_factory=threading.Event)


class Interrupted(Exception):
    """``run_matrix`` stopped early because ``RunOptions.cancel`` was set.

    Attributes:
        records: the runs that finished, in plan order.
        left: the key (``run_key``) of each planned run that did not finish, in plan order.
    """

    def __init__(self, records: list[RunRecord], left: list[RunKey]) -> None:
        self.records = records
        self.left = left
        super().__init__(f"interrupted: {len(records)} runs finished, {len(left)} not")


def preflight(cases: Sequence[Case], arms: Sequence[Arm]) -> None:
    """Render every prompt template against every case before anything runs.

    Raises UserErrors listing every template error (undefined variable, bad syntax), each
    template rendered on its own so one error does not hide the next.
    """
    errors: list[UserError] = []
    seen: set[str] = set()
    for case in cases:
        for arm in arms:
            context = context_for(case, [], "/workspace")
            renders = [partial(system_prompt, arm.prompt, case, context),
                       *(partial(turn_prompt, case, index, context) for index in range(len(case.turns)))]
            for render in renders:
                try:
                    render()
                except UserError as e:
                    if e.render() not in seen:
                        seen.add(e.render())
                        errors.append(e)
    if errors:
        raise UserErrors(errors)


def run_matrix(
    cases: Sequence[Case],
    arms: Sequence[Arm],
    options: RunOptions,
    repeats: int = 1,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    ordered: bool = True,
    on_finish: Callable[[RunRecord], None] = lambda record: None,
    earlier: Sequence[RunRecord] = (),
) -> list[RunRecord]:
    """Run every case in every arm ``repeats`` times (a case's own ``runs`` wins), ``options.jobs`` at once.

    Returns the records in plan order: by arm, then case, then run index. For each run
    that finishes, in the calling thread: ``on_finish`` at once (to save it), then
    ``on_record``, in plan order when ``ordered`` (so output is the same for any
    ``jobs``), else at once too. A planned run with the same key (``run_key``) as one
    of ``earlier`` (a previous invocation's records) is not run again: that record
    takes its place. A run for which ``on_finish`` raises (it could not be written
    out, say) becomes an internal error, cleared of all but its key and duration,
    and is given to ``on_finish`` again. Raises Interrupted, once running runs have
    stopped, when ``options.cancel`` is set.
    """
    plan = list(_plan(cases, arms, repeats))
    keys = plan_keys(cases, arms, repeats)
    reused = {run_key(record): record for record in earlier}
    todo = [i for i, key in enumerate(keys) if key not in reused]

    def work(job: int) -> RunRecord:
        case, arm, run = plan[todo[job]]
        return execute(case, arm, options, run)

    def show(job: int, record: RunRecord) -> None:
        if record.error_kind != CANCELLED:
            on_record(record)

    in_order = InOrder(show)

    def finished(job: int, record: RunRecord) -> None:
        if record.error_kind != CANCELLED:
            try:
                on_finish(record)
            except Exception as e:  # e.g. the record could not be written: save it as the run's internal error
                _clear(record)
                internal_error(record, e)
                on_finish(record)
        (in_order if ordered else show)(job, record)

    done = run_pool(work, len(todo), options.jobs, options.cancel, finished)
    in_order.flush()
    records = {todo[job]: record for job, record in done.items() if record.error_kind != CANCELLED}
    records.update({i: reused[key] for i, key in enumerate(keys) if key in reused})
    in_plan_order = [records[i] for i in sorted(records)]
    if len(records) < len(plan):
        raise Interrupted(in_plan_order, [key for i, key in enumerate(keys) if i not in records])
    return in_plan_order


def plan_keys(cases: Sequence[Case], arms: Sequence[Arm], repeats: int = 1) -> list[RunKey]:
    """The key of every run ``run_matrix`` plans for these arguments, in plan order."""
    return [(case.full_id, arm.provider.name, arm.prompt.name, run) for case, arm, run in _plan(cases, arms, repeats)]


def run_key(record: RunRecord) -> RunKey:
    """What identifies a run in a matrix: ``(case full id, provider name, prompt name, run index)``."""
    return record.case, record.provider, record.prompt, record.run


def _plan(cases: Sequence[Case], arms: Sequence[Arm], repeats: int) -> Iterable[tuple[Case, Arm, int]]:
    for arm in arms:
        for case in cases:
            for index in range(case.runs or repeats):
                yield case, arm, index


def execute(case: Case, arm: Arm, options: RunOptions, index: int = 0) -> RunRecord:
    """One run of one case in one arm, scored (runner.scoring).

    Never raises an Exception: whatever goes wrong, in the run or in tooltrial's own code
    around it (cleanup, scoring), is on the record, a bug as error kind ``internal``.
    """
    record = RunRecord(case=case.full_id, provider=arm.provider.name, prompt=arm.prompt.name, run=index,
                       sandbox=options.sandbox.confinement)
    started = time.monotonic()
    try:
        _execute(case, arm, options, record, started)
        fill_metrics(case, record)
    except Exception as e:  # a bug in tooltrial is this run's error, not the suite's end
        internal_error(record, e)
    return record


def internal_error(record: RunRecord, error: Exception) -> None:
    """Make ``record`` an error of kind ``internal`` whose cause names ``error`` and holds its traceback."""
    trace = "".join(traceback.format_exception(error))
    _error(record, INTERNAL, f"internal error: {type(error).__name__}: {error}\n{trace}")
    record.failure = "run_error"  # runner.scoring's cause of any error but the turn limit


def _clear(record: RunRecord) -> None:
    """Reset every field of ``record`` to its default but those naming the run and its duration."""
    for item in dataclasses.fields(record):
        if item.name not in _KEPT:
            fresh = item.default if item.default_factory is dataclasses.MISSING else item.default_factory()
            setattr(record, item.name, fresh)


def _execute(case: Case, arm: Arm, options: RunOptions, record: RunRecord, started: float) -> None:
    workspace: Workspace | None = None
    try:
        workspace = Workspace.create(case, options.sandbox)
        _run_in(workspace, case, arm, options, record, started)
    except RunTimeout as e:
        _error(record, "timeout", str(e))
    except SetupError as e:
        _error(record, "setup", str(e))
    except ProviderError as e:
        _error(record, e.kind, str(e))
    except UserError as e:
        _error(record, "template", e.render())
    except Exception as e:  # a bug in tooltrial must not stop the suite
        internal_error(record, e)
    finally:
        record.duration = time.monotonic() - started
        if workspace is not None:
            if options.keep:
                record.workspace = str(workspace.path)
            else:
                record.warnings.extend(workspace.cleanup())


def _run_in(workspace: Workspace, case: Case, arm: Arm, options: RunOptions, record: RunRecord, started: float) -> None:
    timeout = options.timeout or case.timeout or DEFAULT_RUN_TIMEOUT
    deadline = started + timeout
    command_timeout = case.command_timeout or options.command_timeout
    try:
        workspace.run_setup(case, timeout=command_timeout, deadline=deadline)
    except SetupError as e:
        if time.monotonic() >= deadline:
            raise RunTimeout(f"run timed out after {timeout:g}s, in setup: {e.command}") from e
        raise
    try:
        before = workspace.snapshot(deadline, options.cancel)
    except SnapshotStopped as e:
        return _stopped(record, options, timeout, e)
    env = workspace.env(case)
    tool_context = ToolContext(workspace.path, options.sandbox, env, command_timeout, deadline, case.network,
                               options.cancel)
    toolbox = build_toolbox(case, tool_context, mock_tools(case.mocks))
    context = context_for(case, toolbox.specs(), str(workspace.path))
    system, turns = system_prompt(arm.prompt, case, context), turn_prompts(case, context)
    provider = TurnLimited(arm.provider.create(case), case.max_turns)
    trajectory = run_agent(provider, toolbox, system, turns, deadline=deadline, cancel=options.cancel)
    _account(record, provider, trajectory)
    if trajectory.stop == CANCELLED:  # not a result: nothing to check
        _error(record, CANCELLED, trajectory.stop_message or CANCELLED)
        return
    if trajectory.stop == "timeout":  # no time is left for the snapshot and the checks
        _error(record, "timeout", _timed_out(timeout, trajectory.stop_message))
        return
    try:
        changes = workspace.changes(before, deadline, options.cancel)
    except SnapshotStopped as e:
        return _stopped(record, options, timeout, e)
    record.changes = {k: list(v) for k, v in vars(changes).items()}

    def run_command(command: str) -> CommandResult:
        allowed = budget(command_timeout, deadline)
        return options.sandbox.run(command, workspace.path, env, allowed, network=case.network, cancel=options.cancel)

    context = CheckContext(case, workspace.path, trajectory, run_command, options.judges, record.tokens.total,
                           record.cost, deadline)
    record.checks = run_checks(context)
    broken = next((c for c in record.checks if c.error_kind), None)
    late = next((c for c in record.checks if c.error_kind == "timeout"), None)  # a judge cut short
    if options.cancel.is_set():  # a check may have been cut short: the run did not finish
        _error(record, CANCELLED, "cancelled: the suite was interrupted")
    elif trajectory.stop:
        _error(record, trajectory.stop, trajectory.stop_message or trajectory.stop)
    elif late is not None or time.monotonic() > deadline:
        _error(record, "timeout", _timed_out(timeout, late.message if late else "in the checks"))
    elif broken is not None:
        _error(record, broken.error_kind, broken.message)
    else:
        record.status = FAIL if record.failed_checks else PASS


def _stopped(record: RunRecord, options: RunOptions, timeout: float, error: SnapshotStopped) -> None:
    """Record a run whose workspace snapshot was stopped: cancelled by Ctrl-C, else out of time."""
    if options.cancel.is_set():
        _error(record, CANCELLED, f"cancelled: {error}")
    else:
        _error(record, "timeout", _timed_out(timeout, "in the workspace snapshot"))


def _timed_out(timeout: float, doing: str | None) -> str:
    """The cause of a run out of time: ``run timed out after 5s``, then what it was doing, if known."""
    return f"run timed out after {timeout:g}s" + (f", {doing}" if doing else "")


def _account(record: RunRecord, provider: TurnLimited, trajectory: Trajectory) -> None:
    record.steps = list(trajectory.steps)
    record.final_reply = trajectory.final_reply
    record.requests = provider.requests
    record.script = [script_reply(c) for c in provider.completions]
    usages = [c.usage for c in provider.completions if c.usage is not None]
    record.tokens = Tokens.of(usages)
    record.cost = known_sum(u.cost for u in usages)
    record.model_requests = [_stats(c) for c in provider.completions]
    record.latency = known_sum(c.latency for c in provider.completions)


def _stats(completion: Completion) -> RequestStats:
    usage = completion.usage or Usage()
    return RequestStats(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.cost,
                        completion.latency, completion.finish_reason)


def _error(record: RunRecord, kind: str, cause: str) -> None:
    record.status, record.error_kind, record.cause = ERROR, kind, cause
