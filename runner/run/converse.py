"""The agent's part of one run (runner.run.execute): the tools, prompts and model it is given, then the loop
(runner.run.agent) or the case's external agent (runner.run.external); what it did and cost put on the record.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

from runner.kinds import StopReason, UserStop
from runner.providers.breaker import Breaker, Guarded
from runner.providers.cache import Cached
from runner.providers.limits import TurnLimited
from runner.providers.ratelimit import RateLimiter
from runner.providers.redact import RunSecrets
from runner.providers.scripted import script_reply
from runner.run.agent import run_agent
from runner.run.context import RunContext
from runner.run.events import Event, Listener, RunRef, RunStarted
from runner.run.external import run_external
from runner.run.faulted import FaultUse
from runner.run.injection import inject_tools
from runner.run.options import Arm, RunOptions
from runner.run.prompts import context_for, system_prompt, turn_prompts, user_prompts
from runner.run.provenance import provenance
from runner.run.record import CacheUse, RunRecord
from runner.run.requests import RequestStats, Tokens, request_stats
from runner.run.simuser import UserSide, user_provider
from runner.run.trajectory import RunTimeout, Trajectory
from runner.run.transcript import Transcript, bounded
from runner.run.workspace import Workspace
from runner.spec.case import Case
from runner.spec.tooldefs import ToolDefs
from runner.sums import known_sum
from runner.tools.base import ToolContext
from runner.tools.faults import Injector
from runner.tools.mcp import McpError, McpServers
from runner.tools.mocks import mock_tools
from runner.tools.toolbox import Toolbox, build_toolbox


@dataclass(frozen=True)
class Job:
    """One run as runner.run.execute.execute was asked for it: the case, the arm, the options, the record it fills,
    the secrets the record is scrubbed of, and the arm's breaker and the provider's rate limiter, when given."""

    case: Case
    arm: Arm
    options: RunOptions
    record: RunRecord
    secrets: RunSecrets
    breaker: Breaker | None
    limiter: RateLimiter | None


def converse(job: Job, run: RunContext, workspace: Workspace, env: dict[str, str],
             servers: McpServers) -> tuple[Trajectory, UserSide | None]:
    """Run the agent in ``workspace`` with the case's environment ``env``, its MCP servers started into
    ``servers``; its steps, reply, requests, tokens, cost and cache use are put on ``job.record``. Returns its
    trajectory and the simulated user (None for fixed turns). Raises, before the agent starts, McpError for an MCP
    server that did not start (RunTimeout once the run's time is up), UserError for a template that does not
    render, HiddenFile for an agent command naming a file the sandbox hides, ProviderError from the model's setup."""
    case, arm, record = job.case, job.arm, job.record
    toolbox = _toolbox(case, run, workspace, env, servers, arm.tools, _injector(job, run, workspace, env))
    inject_tools(toolbox, case, record.injection)
    context = context_for(case, toolbox.specs(), str(workspace.path))
    system = system_prompt(arm.prompt, case, context)
    user = _user_side(case, context, job.options, run)
    turns = user if user is not None else turn_prompts(case, context)
    record.prompt_overridden = case.system is not None  # runner.run.prompts.system_prompt: the case's own wins
    record.prompt_used = f"{case.full_id}.system" if record.prompt_overridden else arm.prompt.name
    record.provenance = provenance(case, arm.prompt.source if case.system is None else case.system, toolbox.specs(),
                                   arm.provider.cache_identity, arm.provider.name, run.sandbox.mode,
                                   None if arm.tools is None else arm.tools.fingerprint,
                                   None if arm.faults is None else arm.faults.digest)
    provider, cached = _model(job, workspace)
    emit = None
    if job.options.listener is not None:
        emit = functools.partial(_tell, job.options.listener, RunRef(case.full_id, arm.label, record.run), job.secrets)
        emit(RunStarted())
    if case.agent is not None:  # an external program instead of the loop (runner.run.external)
        record.agent = {"name": getattr(case.agent, "name", case.agent), "command": getattr(case.agent, "command", None)}
        trajectory, record.agent["wire"], record.agent["tools"], transcript = run_external(
            case, provider, turns, workspace.path, env, run, emit, job.secrets.add)
    else:
        trajectory = run_agent(provider, toolbox, system, turns, run, arm.provider.recover_text_calls, emit)
        transcript = Transcript(trajectory.messages, toolbox.specs(), [(0, n) for n in provider.carried])
    _account(record, provider, trajectory, cached is not None, transcript.spans)
    record.messages, cuts = bounded(transcript.messages)
    record.message_cuts, record.tools = cuts, transcript.tools
    if cached is not None:
        record.cache = CacheUse.of(record.model_requests)
        record.warnings.extend(dict.fromkeys(cached.warnings))  # each once
    if user is not None:
        _account_user(record, user, trajectory)
    return trajectory, user


def _tool_context(case: Case, run: RunContext, workspace: Workspace, env: dict[str, str]) -> ToolContext:
    return ToolContext(workspace.path, run.sandbox, env, run.command_timeout, run.deadline, case.network, run.cancel)


def _injector(job: Job, run: RunContext, workspace: Workspace, env: dict[str, str]) -> Injector | None:
    """The run's faults (the case's, unless the arm is ``off``, then the arm's profile's), its ``faults`` record
    begun; None, and no record, for a run of no fault arm whose case has none."""
    profile = job.arm.faults
    faults = (*(job.case.faults if profile is None or profile.case_faults else ()),
              *(profile.faults if profile is not None else ()))
    if profile is None and not faults:
        return None
    seed = 0 if profile is None else profile.seed
    job.record.faults = FaultUse(None if profile is None else profile.name, seed)
    key = f"{job.case.full_id}#{job.record.run}"
    return Injector(faults, seed, key, _tool_context(job.case, run, workspace, env)) if faults else None


def _toolbox(case: Case, run: RunContext, workspace: Workspace, env: dict[str, str], servers: McpServers,
             defs: ToolDefs | None, faults: Injector | None) -> Toolbox:
    """The tools the case offers as the arm's tool definitions ``defs`` show them, ``faults`` applied to their
    calls, its MCP servers started; one that fails once the run's time is up: RunTimeout."""
    tool_context = _tool_context(case, run, workspace, env)
    try:
        served = servers.start(case, tool_context)
    except McpError as e:
        if time.monotonic() >= run.deadline:
            raise RunTimeout(run.timed_out(f"starting MCP servers: {e}")) from e
        raise
    return build_toolbox(case, tool_context, {**mock_tools(case.mocks), **served}, defs, faults)


def _model(job: Job, workspace: Workspace) -> tuple[TurnLimited, Cached | None]:
    """The run's model (the arm's provider behind the rate limiter, the breaker and the cache where given, then the
    case's turn limit) and its cache layer, None without one."""
    case, arm, options = job.case, job.arm, job.options
    limited = arm.provider.limited
    model = limited(case, job.limiter) if limited is not None and job.limiter is not None else arm.provider.create(case)
    guarded = Guarded(model, job.breaker) if job.breaker else model
    cached = None
    if options.cache is not None and arm.provider.cache_identity is not None:  # a hit asks no breaker
        cached = Cached(guarded, options.cache, arm.provider.cache_identity, job.record.run, str(workspace.path),
                        lambda reply: job.secrets.current.scrub(reply)[0])
    return TurnLimited(cached or guarded, case.max_turns), cached


def _tell(listener: Listener, ref: RunRef, secrets: RunSecrets, event: Event) -> None:
    """Tell ``listener`` the run's ``event``, scrubbed of its secrets (the live view prints tool results)."""
    listener(ref, secrets.current.scrub(event)[0])


def _user_side(case: Case, context: dict[str, Any], options: RunOptions, run: RunContext) -> UserSide | None:
    """The simulated user of the run, its templates rendered; None for a case with fixed turns."""
    if case.user is None:
        return None
    persona, first = user_prompts(case, context)
    return UserSide(case.user, user_provider(case, options.users), persona, first, run.deadline, run.cancel)


def _account_user(record: RunRecord, user: UserSide, trajectory: Trajectory) -> None:
    """The simulated user's model, messages and why it stopped talking (the agent's stop when it was first)."""
    record.user_model, record.user_turns = user.user.model, list(user.turns)
    stops = {StopReason.TIMEOUT: UserStop.TIMEOUT, StopReason.CANCELLED: UserStop.CANCELLED}
    record.user_stop = user.stop or (stops.get(trajectory.stop, UserStop.AGENT_ERROR) if trajectory.stop else None)


def _account(record: RunRecord, provider: TurnLimited, trajectory: Trajectory, cached: bool,
             spans: list[tuple[int, int]]) -> None:
    """What the agent did (steps, final reply) and what its model requests cost, carried (``spans``: each one's
    ``(start, end)`` in the run's messages) and returned, on ``record``."""
    record.steps = list(trajectory.steps)
    record.final_reply = trajectory.final_reply
    record.truncated_reply = trajectory.final_reply_cut
    turns, done = trajectory.request_turns, len(provider.completions)
    sent = provider.started
    failed = [RequestStats(latency=sum(a.duration for a in provider.failed), attempts=list(provider.failed), index=done,
                           turn=turns[done] if done < len(turns) else None,
                           started=sent[done] if done < len(sent) else None,
                           cache="miss" if cached else None,
                           messages=list(spans[done]) if done < len(spans) else None)] if provider.failed else []
    record.script = [script_reply(c) for c in provider.completions]
    record.tokens = Tokens.of([c.usage for c in provider.completions])
    record.cost = known_sum(c.usage.cost for c in provider.completions if c.usage is not None)
    record.model_requests = [
        request_stats(i, c, turns[i] if i < len(turns) else None, trajectory.steps, trajectory.text_calls.get(i, ()),
                      sent[i] if i < len(sent) else None, spans[i] if i < len(spans) else None)
        for i, c in enumerate(provider.completions)] + failed
    record.requests = sum(max(1, len(r.attempts)) for r in record.model_requests if r.cache != "hit")  # every try sent
    record.latency = known_sum(c.latency for c in provider.completions)
    record.rate_limited = sum(a.rate_limited for r in record.model_requests for a in r.attempts)
