"""The agent loop: turn -> model -> tool calls -> tool results -> ... -> reply.

It records the whole trajectory. A stop (turn limit, provider failure, run
timeout, cancellation by Ctrl-C, replies cut off at the output limit, empty, with a call the
provider could not parse or paused by the provider, again and again) ends the loop early; what
happened up to then is kept and the stop is recorded on the trajectory, never raised to the caller.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from runner.kinds import StopReason
from runner.providers.base import Completion, Provider, ProviderError, ToolCall
from runner.providers.history import arguments_for
from runner.providers.limits import TurnLimitExceeded
from runner.providers.parse import ReplyKind, reply_kind
from runner.providers.textcalls import find_text_calls
from runner.run.context import RunContext
from runner.run.events import CallDone, Event, RequestDone
from runner.run.trajectory import NextTurn, RunCancelled, RunTimeout, Step, Trajectory
from runner.tools.toolbox import Toolbox


class _Stopped(Exception):
    """The replies themselves end the run: truncated, empty or malformed too often."""

    def __init__(self, reason: StopReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason


TRUNCATED_LIMIT = 2  # consecutive replies cut off at the output limit that stop the run
EMPTY_RETRIES = 2  # re-requests of an empty or malformed-call reply before the run stops
PAUSE_RETRIES = 3  # continuations of a turn the provider paused (pause_turn), in a row, before the run stops
RECOVERED = "Results of the tool calls in your last message:\n\n"
CUT_OFF = ("not run: your reply was cut off at the output limit (max_tokens), so this call may be incomplete. "
           "Send it again, shorter, or split the work.")


def run_agent(
    provider: Provider,
    toolbox: Toolbox,
    system: str,
    turns: Sequence[str] | NextTurn,
    run: RunContext,
    recover_text_calls: bool = False,
    emit: Callable[[Event], None] | None = None,
) -> Trajectory:
    """Send each turn and serve tool calls until the model replies without any.

    Args:
        provider: the model, already wrapped in the turn limit.
        toolbox: the offered tools; every call goes through it.
        system: the rendered system prompt.
        turns: the rendered turn prompts, or what gives each next one from the replies so far (a
            simulated user: runner.run.simuser), which ends the conversation by giving None.
        run: the run's time and Ctrl-C: after ``run.deadline`` (``time.monotonic()`` seconds) the run stops
            with ``timeout``, and model requests are cut short there too (the provider raises OutOfTime, kind
            ``timeout``); once ``run.cancel`` is set, it stops with ``cancelled`` before its next model request
            or tool call.
        recover_text_calls: run the calls a reply wrote as text (steps ``recovered``, ids
            ``text_<request>_<n>``), their results sent back as one user message; else only record them.
        emit: told each model request answered and each tool call done (runner.run.events), as it happens.
    """
    trajectory = Trajectory(messages=[{"role": "system", "content": system}])
    tell = emit or _ignore
    next_turn = turns if callable(turns) else _fixed(turns)
    try:
        for index in itertools.count():
            turn = next_turn(trajectory.replies)
            if turn is None:
                break
            trajectory.messages.append({"role": "user", "content": turn})
            trajectory.replies.append(_run_turn(provider, toolbox, trajectory, index, run, recover_text_calls, tell))
    except TurnLimitExceeded as e:
        trajectory.stop, trajectory.stop_message = StopReason.TURN_LIMIT, str(e)
    except ProviderError as e:
        trajectory.stop, trajectory.stop_message = StopReason(e.kind), str(e)
    except RunTimeout as e:
        trajectory.stop, trajectory.stop_message = StopReason.TIMEOUT, str(e) or None
    except RunCancelled as e:
        trajectory.stop, trajectory.stop_message = StopReason.CANCELLED, str(e)
    except _Stopped as e:
        trajectory.stop, trajectory.stop_message = e.reason, str(e)
    return trajectory


def _fixed(turns: Sequence[str]) -> NextTurn:
    return lambda replies: turns[len(replies)] if len(replies) < len(turns) else None


def _run_turn(
    provider: Provider,
    toolbox: Toolbox,
    trajectory: Trajectory,
    turn: int,
    run: RunContext,
    recover: bool,
    tell: Callable[[Event], None],
) -> str:
    specs = toolbox.specs()
    empty = truncated = paused = 0  # replies in a row that were empty or malformed; cut off; paused
    while True:
        _check_stop(run)
        completion = provider.complete(trajectory.messages, specs, run.deadline)
        request = len(trajectory.request_turns)
        trajectory.request_turns.append(turn)
        usage = completion.usage
        tell(RequestDone(request, turn, completion.finish_reason, None if usage is None else usage.prompt_tokens,
                         None if usage is None else usage.completion_tokens, completion.latency,
                         len(completion.tool_calls)))
        kind = reply_kind(completion)
        if kind in (ReplyKind.EMPTY, ReplyKind.MALFORMED_CALL):  # not an answer: ask again, the history unchanged
            empty += 1
            if empty > EMPTY_RETRIES:
                raise _Stopped(*_no_reply(kind, empty, completion))
            continue
        empty = 0
        truncated = truncated + 1 if kind is ReplyKind.TRUNCATED else 0
        message = completion.message if completion.message is not None else _assistant_message(completion)
        paused_work = kind is ReplyKind.PAUSED and len(message) > 1  # a paused reply's server tool use, text or not
        if message.get("content") or message.get("tool_calls") or paused_work:  # litellm would drop or fill in an empty one
            trajectory.messages.append(dict(message))
        if kind is ReplyKind.PAUSED:  # not final: its content goes back as it came and the provider goes on
            paused += 1
            if paused > PAUSE_RETRIES:
                raise _Stopped(StopReason.TRUNCATED, f"{paused} replies in a row were paused by the provider "
                                                     f"({completion.native_finish_reason}) and never finished")
            continue
        paused = 0
        if not completion.tool_calls and (kind is not ReplyKind.TRUNCATED or (completion.content or "").strip()):
            written = find_text_calls(completion.content, [s["function"]["name"] for s in specs])
            if written:
                trajectory.text_calls[request] = written
            if written and recover:
                _recover(toolbox, trajectory, written, turn, request, run, tell)
                continue
            if kind is ReplyKind.TRUNCATED:  # a reply cut off in its text still ends the turn with that text
                trajectory.cut_replies.add(turn)
            return completion.content or ""
        for call in completion.tool_calls:
            _check_stop(run)
            if kind is ReplyKind.TRUNCATED:
                step = _cut_off(call, turn, request)
            else:
                step = _run_call(toolbox, call, turn, request)
            trajectory.steps.append(step)
            tell(_call_done(step))
            trajectory.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                        "content": step.result})
        if truncated >= TRUNCATED_LIMIT:
            reason = completion.native_finish_reason or completion.finish_reason
            raise _Stopped(StopReason.TRUNCATED,
                           f"{truncated} replies in a row were cut off at the output limit (finish reason {reason})")


def _run_call(toolbox: Toolbox, call: ToolCall, turn: int, request: int) -> Step:
    wall, started = time.time(), time.monotonic()
    result = toolbox.call(call.name, call.arguments, call.error)
    status = "refused" if result.refused else "invalid" if call.error else "executed"
    return Step(turn, call.id, call.name, toolbox.own(call.name, call.arguments), result.content, result.is_error,
                time.monotonic() - started, request, status, wall, call.repaired, result.fault)


def _call_done(step: Step) -> CallDone:
    return CallDone(step.name, step.arguments, step.status, step.is_error, step.result, step.duration, step.fault)


def _ignore(event: Event) -> None:
    """The listener of a run nobody watches."""


def _recover(toolbox: Toolbox, trajectory: Trajectory, calls: Sequence[ToolCall], turn: int, request: int,
             run: RunContext, tell: Callable[[Event], None]) -> None:
    """Run calls written as text. The model's message stays as it wrote it, so no ``tool`` message can
    answer them: their results go back in one user message."""
    results = []
    for n, call in enumerate(calls, 1):
        _check_stop(run)
        step = _run_call(toolbox, replace(call, id=f"text_{request}_{n}"), turn, request)
        step = replace(step, status="recovered") if step.status == "executed" else step
        trajectory.steps.append(step)
        tell(_call_done(step))
        results.append(f"{call.name}: {step.result}")
    trajectory.messages.append({"role": "user", "content": RECOVERED + "\n\n".join(results)})


def _cut_off(call: ToolCall, turn: int, request: int) -> Step:
    """A call from a truncated reply: not run, whether or not its arguments parse (they may be cut short
    where they still parse); the model is told why."""
    return Step(turn, call.id, call.name, call.arguments, CUT_OFF, True, 0.0, request, "truncated", time.time())


def _no_reply(kind: ReplyKind, times: int, completion: Completion) -> tuple[StopReason, str]:
    reason = completion.native_finish_reason or completion.finish_reason or "no choices"
    if kind is ReplyKind.MALFORMED_CALL:
        return StopReason.MALFORMED_CALL, f"the provider rejected the model's tool call {times} times in a row ({reason})"
    return StopReason.EMPTY_REPLY, f"{times} replies in a row held no text and no tool call (finish reason {reason})"


def _check_stop(run: RunContext) -> None:
    if run.cancel.is_set():
        raise RunCancelled("cancelled: the suite was interrupted")
    if time.monotonic() > run.deadline:
        raise RunTimeout()


def _assistant_message(completion: Completion) -> dict[str, Any]:
    """The history entry of a reply that carries no provider message (scripted): content only when
    there is some, the calls as ``runner.providers.history`` sends a provider's back."""
    message: dict[str, Any] = {"role": "assistant"}
    if completion.content:
        message["content"] = completion.content
    if completion.tool_calls:
        message["tool_calls"] = [_wire_call(c) for c in completion.tool_calls]
    return message


def _wire_call(call: ToolCall) -> dict[str, Any]:
    arguments = arguments_for(call, call.raw_arguments)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
