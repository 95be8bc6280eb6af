"""One run (DESIGN.md "One run"): make the workspace, render the prompts, run the agent loop
through the turn limit, snapshot, check, score, record, clean up. Every failure of a run
becomes data on its record, a bug in tooltrial too; the suite always goes on.
"""

from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from runner.checks.base import CheckCommand, CheckContext
from runner.checks.registry import run_checks
from runner.errors import THREAD_REFUSED, MachineBusy, UserError, thread_refused
from runner.kinds import ErrorKind, FailureCause, StopReason
from runner.providers.base import ProviderError
from runner.providers.breaker import Breaker
from runner.providers.ratelimit import RateLimiter
from runner.providers.redact import RunSecrets, Secrets
from runner.run.context import RunContext
from runner.run.converse import Job, converse
from runner.run.faulted import FaultUse
from runner.run.injection import judge_attack, plant_files
from runner.run.options import DEFAULT_RUN_TIMEOUT, Arm, RunOptions
from runner.run.record import COMMAND_OUTPUT_LIMIT, ERROR, FAIL, PASS, CommandRun, RunRecord
from runner.run.savedfiles import saved_files
from runner.run.simuser import UserSide
from runner.run.trajectory import RunTimeout, Trajectory
from runner.run.workspace import SetupError, SnapshotStopped, Workspace, WorkspaceError
from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.command import CommandResult, budget
from runner.sandbox.started import CommandNotStarted
from runner.sandbox.visible import HiddenFile
from runner.scoring.metrics import fill_metrics
from runner.spec.case import Case
from runner.tools.mcp import McpError, McpServers

_KEPT = frozenset({"case", "provider", "prompt", "run", "tool_defs", "faults", "duration", "sandbox", "queued",
                   "rate_limited", "started"})  # what _clear keeps: the arm (its tool definitions, its fault arm) too


def execute(case: Case, arm: Arm, options: RunOptions, number: int = 1, breaker: Breaker | None = None,
            limiter: RateLimiter | None = None) -> RunRecord:
    """Run ``number`` (1-based) of one case in one arm, scored (runner.scoring); its model requests go through the
    arm's ``breaker`` when given (runner.providers.breaker), and their tries wait for the provider's ``limiter``
    (runner.providers.ratelimit): that wait is the record's ``rate_limited``, not part of its ``duration``.

    Never raises an Exception: whatever goes wrong, in the run or in tooltrial's own code
    around it (cleanup, scoring), is on the record, a bug as error kind ``internal``. The record, the events
    and the replies kept in the cache are scrubbed of ``options.secrets`` and the run's endpoint key
    (runner.providers.redact), once scored: a warning says how many values were replaced.
    """
    record = RunRecord(case=case.full_id, provider=arm.provider.name, prompt=arm.prompt.name, run=number,
                       sandbox=options.sandbox.confinement, started=time.time(), tool_defs=arm.tool_defs,
                       faults=None if arm.faults is None else FaultUse(arm.faults.name, arm.faults.seed))
    started = time.monotonic()
    secrets = RunSecrets(options.secrets)
    try:
        _execute(Job(case, arm, options, record, secrets, breaker, limiter), started)
        fill_metrics(case, record)
    except Exception as e:  # noqa: BLE001 (the run's boundary: a bug in tooltrial is this run's error, not the suite's end)
        internal_error(record, e)
    return _scrubbed(record, secrets.current)


def _scrubbed(record: RunRecord, secrets: Secrets) -> RunRecord:
    """``record`` with ``secrets`` replaced by markers, and a warning naming them when any was."""
    clean, found = secrets.scrub(record)
    if found:
        times = ", ".join(f"{name} ({'once' if n == 1 else f'{n} times'})" for name, n in sorted(found.items()))
        clean.warnings = [*clean.warnings, (f"redacted in this run's record: {times}; a provider, the agent or a "
                                            "command showed the value (docs/safety.md)")]
    return clean


def internal_error(record: RunRecord, error: Exception, clear: bool = False) -> None:
    """Make ``record`` an error of kind ``internal`` whose cause names ``error`` and holds its traceback;
    with ``clear``, every field but those naming the run, its duration and sandbox is reset first."""
    if clear:
        _clear(record)
    trace = "".join(traceback.format_exception(error))
    _error(record, ErrorKind.INTERNAL, f"internal error: {type(error).__name__}: {error}\n{trace}")
    record.failure = FailureCause.RUN_ERROR  # runner.scoring's cause of any error but the turn limit


def _clear(record: RunRecord) -> None:
    """Reset every field of ``record`` to its default but those naming the run and its duration."""
    for item in dataclasses.fields(record):
        if item.name not in _KEPT:
            fresh = item.default if item.default_factory is dataclasses.MISSING else item.default_factory()
            setattr(record, item.name, fresh)


def _execute(job: Job, started: float) -> None:
    """The run whose time starts at ``started`` (``time.monotonic()``), every failure of it an error on the record."""
    case, options, record = job.case, job.options, job.record
    workspace: Workspace | None = None
    try:
        timeout = options.timeout or case.timeout or DEFAULT_RUN_TIMEOUT
        run = RunContext(options.sandbox, timeout, started + timeout, case.command_timeout or options.command_timeout,
                         options.cancel, record.commands, record.warnings)
        workspace = Workspace.create(case)
        with McpServers() as servers:  # stopped before the workspace goes
            _run_in(job, run, workspace, servers)
        record.warnings.extend(servers.warnings)
    except RunTimeout as e:
        _error(record, ErrorKind.TIMEOUT, str(e))
    except (SetupError, McpError, HiddenFile) as e:  # an MCP server that did not start fails the run's setup
        _error(record, ErrorKind.SETUP, str(e))
    except WorkspaceError as e:
        _error(record, ErrorKind.WORKSPACE, str(e))
    except ProviderError as e:
        _error(record, e.kind, str(e))
    except (CommandNotStarted, MachineBusy) as e:  # the machine's or the sandbox's failure: never run otherwise
        _error(record, ErrorKind.START_FAILED, str(e))
    except UserError as e:
        _error(record, ErrorKind.TEMPLATE, e.render())
    except Exception as e:  # noqa: BLE001 (a bug in tooltrial must not stop the suite; a thread refused is no bug)
        if thread_refused(e):
            _error(record, ErrorKind.START_FAILED, f"{THREAD_REFUSED}: {e}")
        else:
            internal_error(record, e)
    finally:
        record.duration = time.monotonic() - started - record.rate_limited
        if workspace is not None:
            if options.keep:
                record.workspace = str(workspace.path)
            else:
                record.warnings.extend(workspace.cleanup())


def _run_in(job: Job, run: RunContext, workspace: Workspace, servers: McpServers) -> None:
    """The run in ``workspace``, its MCP servers started into ``servers``: setup, the agent, the checks."""
    record = job.record
    try:
        workspace.run_setup(job.case, run)
    except SetupError as e:
        if time.monotonic() >= run.deadline:
            raise RunTimeout(run.timed_out(f"in setup: {e.command}")) from e
        raise
    record.injection = plant_files(job.case, workspace.path)
    try:
        before = workspace.snapshot(run)
    except SnapshotStopped as e:
        return _stopped(record, run, e)
    env = workspace.env(job.case)
    trajectory, user = converse(job, run, workspace, env, servers)
    if trajectory.stop is StopReason.CANCELLED:  # not a result: nothing to check
        _error(record, ErrorKind.CANCELLED, trajectory.stop_message or ErrorKind.CANCELLED)
        return
    if trajectory.stop is StopReason.TIMEOUT:  # no time is left for the snapshot and the checks
        _error(record, ErrorKind.TIMEOUT, run.timed_out(trajectory.stop_message))
        return
    try:
        changes = workspace.changes(before, run)
    except SnapshotStopped as e:
        return _stopped(record, run, e)
    record.changes = {k: list(v) for k, v in vars(changes).items()}
    record.files = saved_files(workspace.path, [*changes.added, *changes.changed])
    _check(job, run, workspace, env, trajectory, user)


def _check(job: Job, run: RunContext, workspace: Workspace, env: dict[str, str], trajectory: Trajectory,
           user: UserSide | None) -> None:
    """The case's checks on what the agent did and left, then the run's status."""
    case, record = job.case, job.record

    run_command, run_check = command_runners(case, run, workspace.path, env, run.commands)
    context = CheckContext(case, workspace.path, trajectory, run_command, job.options.judges,
                           record.tokens.total_tokens, record.cost, run.deadline, run_check,
                           job.options.judging)
    record.checks = run_checks(context)
    late = next((c for c in record.checks if c.error_kind == ErrorKind.TIMEOUT), None)  # a judge cut short
    if run.cancel.is_set():  # a check may have been cut short: the run did not finish
        _error(record, ErrorKind.CANCELLED, "cancelled: the suite was interrupted")
    elif trajectory.stop:
        _error(record, trajectory.stop.error_kind, trajectory.stop_message or trajectory.stop)
    elif user is not None and user.failure is not None:
        _error(record, ErrorKind.USER_ERROR, user.cause)
    elif late is not None or time.monotonic() > run.deadline:
        _error(record, ErrorKind.TIMEOUT, run.timed_out(late.message if late else "in the checks"))
    else:
        settle(record)
    judge_attack(context, record.status, record.injection)


def command_runners(case: Case, run: RunContext, path: Path, env: dict[str, str], commands: list[CommandRun],
                    ) -> tuple[Callable[[str], CommandResult], Callable[[CheckCommand], CommandResult]]:
    """A CheckContext's ``run_command`` (``expect.verify``'s) and ``run_check`` (``expect.check``'s): each runs in the
    workspace at ``path`` under ``run``'s sandbox and bounds, and is kept on ``commands`` in order (``run`` and
    ``rescore`` alike)."""

    def run_command(command: str) -> CommandResult:
        bounds = Bounds(run.command_seconds(), COMMAND_OUTPUT_LIMIT, run.cancel)
        done = run.sandbox.run(command, path, env, bounds, Access(network=case.network), split=True)
        commands.append(CommandRun.of("verify", command, done))
        return done

    def run_check(check: CheckCommand) -> CommandResult:
        bounds = Bounds(budget(check.timeout or run.command_timeout, run.deadline), COMMAND_OUTPUT_LIMIT, run.cancel)
        access = Access(network=case.network, readable=check.readable)
        done = run.sandbox.run(check.command, path, {**env, **check.env}, bounds, access, split=True)
        commands.append(CommandRun.of("check", check.command, done))
        return done

    return run_command, run_check


def settle(record: RunRecord) -> None:
    """The status of a run whose checks all ran to the end (``run`` and ``rescore`` alike): an error of the first
    check that could not be made (its ``error_kind``, its message the cause), else ``fail`` when any check failed,
    else ``pass``."""
    broken = next((c for c in record.checks if c.error_kind), None)
    if broken is not None and broken.error_kind:
        _error(record, broken.error_kind, broken.message)
    else:
        record.status = FAIL if record.failed_checks else PASS


def _stopped(record: RunRecord, run: RunContext, error: SnapshotStopped) -> None:
    """Record a run whose workspace snapshot was stopped: cancelled by Ctrl-C, else out of time."""
    if run.cancel.is_set():
        _error(record, ErrorKind.CANCELLED, f"cancelled: {error}")
    else:
        _error(record, ErrorKind.TIMEOUT, run.timed_out("in the workspace snapshot"))


def _error(record: RunRecord, kind: ErrorKind, cause: str) -> None:
    record.status, record.error_kind, record.cause = ERROR, kind, cause
