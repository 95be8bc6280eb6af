"""One run's agent when it is an external program (a case's ``agent``, runner.spec.agentspec): each turn
one invocation of its command in the workspace, under the run's sandbox, talking to the run's model
endpoint (runner.endpoint.server); its trajectory rebuilt from the wire (runner.endpoint.rebuild).
"""

from __future__ import annotations

import itertools
import shlex
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from runner.endpoint.rebuild import tool_names, turn_reply, wire_trajectory
from runner.endpoint.server import Endpoint
from runner.errors import UserError
from runner.kinds import StopReason
from runner.providers.base import Provider
from runner.providers.redact import ENDPOINT_KEY
from runner.run.context import RunContext
from runner.run.events import Event
from runner.run.prompts import render_in_case
from runner.run.record import COMMAND_OUTPUT_LIMIT, CommandRun
from runner.run.trajectory import NextTurn, Trajectory
from runner.run.transcript import Transcript
from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.command import CommandResult, Sandbox
from runner.sandbox.visible import HiddenFile, hidden_file, hidden_message, hidden_path
from runner.spec.agentspec import AgentSpec
from runner.spec.case import Case


class _Halt(threading.Event):
    """The agent command's stop: set by the endpoint when a request ends the run, and set whenever
    the suite's ``cancel`` is (what runner.sandbox reads is ``is_set``)."""

    def __init__(self, cancel: threading.Event) -> None:
        super().__init__()
        self._cancel = cancel

    def is_set(self) -> bool:
        return super().is_set() or self._cancel.is_set()


def run_external(case: Case, provider: Provider, turns: Sequence[str] | NextTurn, workspace: Path,
                 env: Mapping[str, str], run: RunContext, emit: Callable[[Event], None] | None = None,
                 secret: Callable[[str, str], None] | None = None
                 ) -> tuple[Trajectory, list[dict[str, Any]], list[str], Transcript]:
    """Run ``case.agent`` for each turn (or each turn a simulated user gives, from the replies so far) until
    the turns end or the run stops; return its trajectory rebuilt from the wire, and each request the
    endpoint answered as ``{turn, api, stream, status, error, started, duration, messages}`` (``api``: ``chat``
    or ``messages``; ``stream``: whether the agent asked for one, None when its body did not read; ``error``:
    the message of an error answer, else None; ``started``: epoch seconds; ``duration``: seconds;
    ``messages``: ``[start, end]`` into the transcript's messages, None when its body did not read), the
    names of the tools it offered its model, in the order first offered, and the transcript: its requests'
    messages as it sent them (runner.endpoint.server.Endpoint.transcript).

    ``provider`` answers every request through the endpoint (already wrapped in the turn limit);
    ``env`` is the case's scrubbed environment, to which the agent's ``env`` and the endpoint's
    variables are added. Each invocation runs under ``run.sandbox`` and is appended to ``run.commands``
    (phase ``agent``); requests refused for a wrong key are a line in ``run.warnings``. The trajectory's
    stop is the endpoint's (turn limit, a provider failure), ``timeout`` at ``run.deadline``, ``cancelled``
    on ``run.cancel``, or ``agent_failed`` for a non-zero exit or the agent's own timeout (seconds).
    ``emit`` is told each request answered and each call whose result came back (runner.run.events, for
    ``--live``); ``secret`` is told the endpoint's key (named runner.providers.redact.ENDPOINT_KEY) before the agent
    starts, to be scrubbed from the record. Raises UserError (a template error) for a command that does not
    render or an agent name never resolved, and HiddenFile, before it runs, for a command that names a file
    the sandbox hides (runner.sandbox.visible).
    """
    agent = case.agent
    if not isinstance(agent, AgentSpec):
        raise UserError(f"agent {agent!r} was not resolved from tooltrial.yml's agents", path=f"{case.full_id}.agent")
    next_turn = turns if callable(turns) else _fixed(turns)
    given: list[str] = []
    replies: list[str] = []
    stop: StopReason | None = None
    message: str | None = None
    halt = _Halt(run.cancel)
    visible = (agent.here,) if agent.here else ()
    _check_visible(agent, case, workspace, {**env, **agent.env}, run.sandbox, visible)
    with Endpoint(provider, run.deadline, agent.model, halt, emit) as endpoint:
        if secret is not None:
            secret(ENDPOINT_KEY, endpoint.token)
        for index in itertools.count():
            turn = next_turn(replies)
            if turn is None:
                break
            given.append(turn)
            endpoint.turn = index
            command, stdin = _invocation(agent, case, turn, workspace)
            started = time.monotonic()
            left = max(0.0, run.deadline - started)
            allowed = left if agent.timeout is None else min(agent.timeout, left)
            done = run.sandbox.run(command, workspace, {**env, **agent.env, **endpoint.env()},
                                   Bounds(allowed, COMMAND_OUTPUT_LIMIT, halt),
                                   Access(case.network, endpoint.port, visible), split=True, stdin=stdin)
            run.commands.append(CommandRun.of("agent", command, done))
            stop, message = _stopped(endpoint, done, run.cancel, agent, allowed < (agent.timeout or float("inf")), index)
            if stop is not None:
                break
            replies.append(turn_reply(endpoint.exchanges, index))
    run.warnings.extend(_endpoint_warnings(endpoint))
    wire = [{"turn": e.turn, "api": e.api, "stream": e.request.stream if e.request is not None else None,
             "status": e.status, "error": e.error, "started": e.started, "duration": e.duration,
             "messages": list(e.messages) if e.messages is not None else None}
            for e in endpoint.exchanges]
    offered = list(dict.fromkeys(name for e in endpoint.exchanges if e.request is not None
                                 for name in tool_names(e.request.tools)))
    return wire_trajectory(endpoint.exchanges, given, len(replies), stop, message), wire, offered, endpoint.transcript


def _endpoint_warnings(endpoint: Endpoint) -> list[str]:
    """A line each for the requests the agent's endpoint refused for a wrong key and the paths it does not serve."""
    warnings: list[str] = []
    if endpoint.refused:
        warnings.append(f"the agent's endpoint refused {endpoint.refused} request(s) without the run's key "
                        "(OPENAI_API_KEY / ANTHROPIC_API_KEY)")
    if endpoint.unserved:
        warnings.append(f"the agent's endpoint does not serve {', '.join(endpoint.unserved)}: it serves POST "
                        "/v1/chat/completions (OpenAI), POST /v1/messages (Anthropic) and GET /v1/models")
    return warnings


def _check_visible(agent: AgentSpec, case: Case, workspace: Path, env: Mapping[str, str], sandbox: Sandbox,
                   visible: tuple[str, ...]) -> None:
    """Raise HiddenFile when the agent's command (its turn left empty) names a file the sandbox hides; the fix
    offers ``{{ here }}`` where the agent's own folder is there."""
    relayed = not case.network  # the endpoint's port is forwarded to it (runner.sandbox.bounds.Access.forward)
    hidden = hidden_file(sandbox, _invocation(agent, case, "", workspace)[0], workspace, env, visible, relayed)
    if hidden is None:
        return
    here_seen = agent.here and hidden_path(sandbox, agent.here, workspace, env, visible, relayed) is None
    raise HiddenFile(hidden_message("agent command", hidden, "name it relative to the case with {{ here }}"
                                    if here_seen else ""))


def _fixed(turns: Sequence[str]) -> NextTurn:
    return lambda replies: turns[len(replies)] if len(replies) < len(turns) else None


def _invocation(agent: AgentSpec, case: Case, turn: str, workspace: Path) -> tuple[str, bytes | None]:
    """The command line of one turn (rendered; the turn appended shell-quoted for ``input: argument``)
    and its stdin (the turn, for ``input: stdin``)."""
    context = {"turn": turn, "model": agent.model, "workspace": str(workspace), "here": agent.here}
    command = render_in_case(case, ("agent", "command"), agent.command, context)
    if agent.input == "argument":
        command = f"{command} {shlex.quote(turn)}"
    return command, turn.encode() if agent.input == "stdin" else None


def _stopped(endpoint: Endpoint, done: CommandResult, cancel: threading.Event, agent: AgentSpec, by_deadline: bool,
             index: int) -> tuple[StopReason | None, str | None]:
    """Why the run stops after invocation ``index`` (0-based), with its message; (None, None) to go on."""
    if endpoint.stop is not None:
        return endpoint.stop, endpoint.stop_message
    if cancel.is_set():
        return StopReason.CANCELLED, "cancelled: the suite was interrupted"
    if done.timed_out and by_deadline:
        return StopReason.TIMEOUT, f"running the agent command (turn {index + 1})"
    if done.timed_out:
        return StopReason.AGENT_FAILED, f"the agent command passed its timeout of {agent.timeout:g}s in turn {index + 1}"
    if done.exit_code != 0:
        said = _last_line(done.stderr or done.output)
        return StopReason.AGENT_FAILED, (f"the agent command exited {done.exit_code} in turn {index + 1}"
                                         + (f": {said}" if said else ""))
    return None, None


def _last_line(text: str) -> str:
    """The last line with text in a command's output (a traceback's error), at most 200 characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""
