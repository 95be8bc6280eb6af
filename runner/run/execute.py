"""One run (DESIGN.md "One run"): make the workspace, render the prompts, run the agent loop
through the turn limit, snapshot, check, score, record, clean up. Every failure of a run
becomes data on its record, a bug in tooltrial too; the suite always goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import traceback
from typing import Any

from runner.checks.base import CheckContext
from runner.checks.registry import run_checks
from runner.errors import THREAD_REFUSED, MachineBusy, UserError, thread_refused
from runner.kinds import ErrorKind, FailureCause, StopReason, UserStop
from runner.providers.base import ProviderError
from runner.providers.breaker import Breaker, Guarded
from runner.providers.cache import Cached
from runner.providers.limits import TurnLimited
from runner.providers.ratelimit import RateLimiter
from runner.providers.scripted import script_reply
from runner.redact import RunSecrets, Secrets
from runner.run.agent import run_agent
from runner.run.events import Event, Listener, RunRef, RunStarted
from runner.run.external import run_external
from runner.run.options import DEFAULT_RUN_TIMEOUT, Arm, RunOptions
from runner.run.prompts import (
    context_for,
    system_prompt,
    turn_prompts,
    user_prompts,
)
from runner.run.record import (
    COMMAND_OUTPUT_LIMIT,
    ERROR,
    FAIL,
    PASS,
    CacheUse,
    CommandRun,
    RunRecord,
)
from runner.run.requests import RequestStats, Tokens, request_stats
from runner.run.simuser import UserSide, user_provider
from runner.run.trajectory import RunTimeout, Trajectory
from runner.run.workspace import SetupError, SnapshotStopped, Workspace, WorkspaceError
from runner.sandbox.command import CommandResult, budget
from runner.sandbox.started import CommandNotStarted
from runner.sandbox.visible import HiddenFile
from runner.scoring.metrics import fill_metrics
from runner.spec.case import Case
from runner.sums import known_sum
from runner.tools.base import ToolContext
from runner.tools.mcp import McpError, McpServers
from runner.tools.mocks import mock_tools
from runner.tools.toolbox import build_toolbox

_KEPT = frozenset({"case", "provider", "prompt", "run", "duration", "sandbox", "queued", "rate_limited",
                   "started"})  # what _clear keeps


def execute(case: Case, arm: Arm, options: RunOptions, number: int = 1, breaker: Breaker | None = None,
            limiter: RateLimiter | None = None) -> RunRecord:
    """Run ``number`` (1-based) of one case in one arm, scored (runner.scoring); its model requests go through the
    arm's ``breaker`` when given (runner.providers.breaker), and their tries wait for the provider's ``limiter``
    (runner.providers.ratelimit): that wait is the record's ``rate_limited``, not part of its ``duration``.

    Never raises an Exception: whatever goes wrong, in the run or in tooltrial's own code
    around it (cleanup, scoring), is on the record, a bug as error kind ``internal``. The record, the events
    and the replies kept in the cache are scrubbed of ``options.secrets`` and the run's endpoint key
    (runner.redact), once scored: a warning says how many values were replaced.
    """
    record = RunRecord(case=case.full_id, provider=arm.provider.name, prompt=arm.prompt.name, run=number,
                       sandbox=options.sandbox.confinement, started=time.time())
    started = time.monotonic()
    secrets = RunSecrets(options.secrets)
    try:
        _execute(case, arm, options, record, started, breaker, limiter, secrets)
        fill_metrics(case, record)
    except Exception as e:  # a bug in tooltrial is this run's error, not the suite's end
        internal_error(record, e)
    return _scrubbed(record, secrets.current)


def _scrubbed(record: RunRecord, secrets: Secrets) -> RunRecord:
    """``record`` with ``secrets`` replaced by markers, and a warning naming them when any was."""
    clean, found = secrets.scrub(record)
    if found:
        times = ", ".join(f"{name} ({'once' if n == 1 else f'{n} times'})" for name, n in sorted(found.items()))
        clean.warnings = [*clean.warnings, f"redacted in this run's record: {times}; a provider, the agent or a "
                                           "command showed the value (docs/safety.md)"]
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


def _execute(case: Case, arm: Arm, options: RunOptions, record: RunRecord, started: float,
             breaker: Breaker | None, limiter: RateLimiter | None, secrets: RunSecrets) -> None:
    workspace: Workspace | None = None
    try:
        workspace = Workspace.create(case, options.sandbox)
        with McpServers() as servers:  # stopped before the workspace goes
            _run_in(workspace, case, arm, options, record, started, breaker, limiter, servers, secrets)
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
    except Exception as e:  # a bug in tooltrial must not stop the suite; a thread refused is no bug
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


def _run_in(workspace: Workspace, case: Case, arm: Arm, options: RunOptions, record: RunRecord, started: float,
            breaker: Breaker | None, limiter: RateLimiter | None, servers: McpServers, secrets: RunSecrets) -> None:
    timeout = options.timeout or case.timeout or DEFAULT_RUN_TIMEOUT
    deadline = started + timeout
    command_timeout = case.command_timeout or options.command_timeout
    try:
        workspace.run_setup(case, timeout=command_timeout, deadline=deadline, log=record.commands)
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
    try:
        served = servers.start(case, tool_context)
    except McpError as e:
        if time.monotonic() >= deadline:
            raise RunTimeout(f"run timed out after {timeout:g}s, starting MCP servers: {e}") from e
        raise
    toolbox = build_toolbox(case, tool_context, {**mock_tools(case.mocks), **served})
    context = context_for(case, toolbox.specs(), str(workspace.path))
    system = system_prompt(arm.prompt, case, context)
    user = _user_side(case, context, options, deadline)
    turns = user if user is not None else turn_prompts(case, context)
    record.prompt_overridden = case.system is not None  # runner.run.prompts.system_prompt: the case's own wins
    record.prompt_used = f"{case.full_id}.system" if record.prompt_overridden else arm.prompt.name
    limited = arm.provider.limited
    model = limited(case, limiter) if limited is not None and limiter is not None else arm.provider.create(case)
    guarded = Guarded(model, breaker) if breaker else model
    cached = None
    if options.cache is not None and arm.provider.cache_identity is not None:  # a hit asks no breaker
        cached = Cached(guarded, options.cache, arm.provider.cache_identity, record.run, str(workspace.path),
                        lambda reply: secrets.current.scrub(reply)[0])
    provider = TurnLimited(cached or guarded, case.max_turns)
    emit = None
    if options.listener is not None:
        emit = functools.partial(_tell, options.listener, RunRef(case.full_id, arm.label, record.run), secrets)
        emit(RunStarted())
    if case.agent is not None:  # an external program instead of the loop (runner.run.external)
        record.agent = {"name": getattr(case.agent, "name", case.agent), "command": getattr(case.agent, "command", None)}
        trajectory, record.agent["wire"], record.agent["tools"] = run_external(
            case, provider, turns, workspace.path, env, options.sandbox, deadline, options.cancel, record.commands,
            record.warnings, emit, secrets.add)
    else:
        trajectory = run_agent(provider, toolbox, system, turns, deadline=deadline, cancel=options.cancel,
                               recover_text_calls=arm.provider.recover_text_calls, emit=emit)
    _account(record, provider, trajectory, cached is not None)
    if cached is not None:
        record.cache = CacheUse.of(record.model_requests)
        record.warnings.extend(dict.fromkeys(cached.warnings))  # each once
    if user is not None:
        _account_user(record, user, trajectory)
    if trajectory.stop is StopReason.CANCELLED:  # not a result: nothing to check
        _error(record, ErrorKind.CANCELLED, trajectory.stop_message or ErrorKind.CANCELLED)
        return
    if trajectory.stop is StopReason.TIMEOUT:  # no time is left for the snapshot and the checks
        _error(record, ErrorKind.TIMEOUT, _timed_out(timeout, trajectory.stop_message))
        return
    try:
        changes = workspace.changes(before, deadline, options.cancel)
    except SnapshotStopped as e:
        return _stopped(record, options, timeout, e)
    record.changes = {k: list(v) for k, v in vars(changes).items()}

    def run_command(command: str) -> CommandResult:  # expect.verify's, each kept on the record
        allowed = budget(command_timeout, deadline)
        done = options.sandbox.run(command, workspace.path, env, allowed, COMMAND_OUTPUT_LIMIT, case.network,
                                   options.cancel, split=True)
        record.commands.append(CommandRun.of("verify", command, done))
        return done

    context = CheckContext(case, workspace.path, trajectory, run_command, options.judges, record.tokens.total_tokens,
                           record.cost, deadline)
    record.checks = run_checks(context)
    broken = next((c for c in record.checks if c.error_kind), None)
    late = next((c for c in record.checks if c.error_kind == ErrorKind.TIMEOUT), None)  # a judge cut short
    if options.cancel.is_set():  # a check may have been cut short: the run did not finish
        _error(record, ErrorKind.CANCELLED, "cancelled: the suite was interrupted")
    elif trajectory.stop:
        _error(record, trajectory.stop.error_kind, trajectory.stop_message or trajectory.stop)
    elif user is not None and user.failure is not None:
        _error(record, ErrorKind.USER_ERROR, user.cause)
    elif late is not None or time.monotonic() > deadline:
        _error(record, ErrorKind.TIMEOUT, _timed_out(timeout, late.message if late else "in the checks"))
    elif broken is not None:
        _error(record, broken.error_kind, broken.message)
    else:
        record.status = FAIL if record.failed_checks else PASS


def _tell(listener: Listener, ref: RunRef, secrets: RunSecrets, event: Event) -> None:
    """Tell ``listener`` the run's ``event``, scrubbed of its secrets (the live view prints tool results)."""
    listener(ref, secrets.current.scrub(event)[0])


def _user_side(case: Case, context: dict[str, Any], options: RunOptions, deadline: float) -> UserSide | None:
    """The simulated user of the run, its templates rendered; None for a case with fixed turns."""
    if case.user is None:
        return None
    persona, first = user_prompts(case, context)
    return UserSide(case.user, user_provider(case, options.users), persona, first, deadline, options.cancel)


def _account_user(record: RunRecord, user: UserSide, trajectory: Trajectory) -> None:
    """The simulated user's model, messages and why it stopped talking (the agent's stop when it was first)."""
    record.user_model, record.user_turns = user.user.model, list(user.turns)
    stops = {StopReason.TIMEOUT: UserStop.TIMEOUT, StopReason.CANCELLED: UserStop.CANCELLED}
    record.user_stop = user.stop or (stops.get(trajectory.stop, UserStop.AGENT_ERROR) if trajectory.stop else None)


def _stopped(record: RunRecord, options: RunOptions, timeout: float, error: SnapshotStopped) -> None:
    """Record a run whose workspace snapshot was stopped: cancelled by Ctrl-C, else out of time."""
    if options.cancel.is_set():
        _error(record, ErrorKind.CANCELLED, f"cancelled: {error}")
    else:
        _error(record, ErrorKind.TIMEOUT, _timed_out(timeout, "in the workspace snapshot"))


def _timed_out(timeout: float, doing: str | None) -> str:
    """The cause of a run out of time: ``run timed out after 5s``, then what it was doing, if known."""
    return f"run timed out after {timeout:g}s" + (f", {doing}" if doing else "")


def _account(record: RunRecord, provider: TurnLimited, trajectory: Trajectory, cached: bool) -> None:
    record.steps = list(trajectory.steps)
    record.final_reply = trajectory.final_reply
    record.truncated_reply = trajectory.final_reply_cut
    turns, done = trajectory.request_turns, len(provider.completions)
    sent = provider.started
    failed = [RequestStats(latency=sum(a.duration for a in provider.failed), attempts=list(provider.failed), index=done,
                           turn=turns[done] if done < len(turns) else None,
                           started=sent[done] if done < len(sent) else None,
                           cache="miss" if cached else None)] if provider.failed else []
    record.script = [script_reply(c) for c in provider.completions]
    record.tokens = Tokens.of([c.usage for c in provider.completions])
    record.cost = known_sum(c.usage.cost for c in provider.completions if c.usage is not None)
    record.model_requests = [
        request_stats(i, c, turns[i] if i < len(turns) else None, trajectory.steps, trajectory.text_calls.get(i, ()),
                      sent[i] if i < len(sent) else None)
        for i, c in enumerate(provider.completions)] + failed
    record.requests = sum(max(1, len(r.attempts)) for r in record.model_requests if r.cache != "hit")  # every try sent
    record.latency = known_sum(c.latency for c in provider.completions)
    record.rate_limited = sum(a.rate_limited for r in record.model_requests for a in r.attempts)


def _error(record: RunRecord, kind: ErrorKind, cause: str) -> None:
    record.status, record.error_kind, record.cause = ERROR, kind, cause
