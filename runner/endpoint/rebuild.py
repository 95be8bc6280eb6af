"""An external agent's trajectory rebuilt from what went through its endpoint (runner.endpoint.server).

Each reply's tool calls become steps; the result of each is the ``tool`` message (a Messages
``tool_result`` block) the agent sent back under the call's id in a later request, the first that
holds it. What the wire cannot tell is left as it cannot be known: a call whose result never came
back has status ``no_result`` (not counted as ran, runner.run.trajectory.Step), a tool the agent ran
without telling its model has no step, and a step's ``duration`` is the time from the reply that
asked for it to the request that brought its result (the agent's own work in between included).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runner.endpoint.server import Exchange
from runner.endpoint.wire import text_of
from runner.kinds import StopReason
from runner.providers.base import Completion
from runner.providers.textcalls import find_text_calls
from runner.run.trajectory import Step, Trajectory

NO_RESULT = "no_result"  # the step status of a call whose result the agent never sent back


def wire_trajectory(exchanges: Sequence[Exchange], turns: Sequence[str], finished: int,
                    stop: StopReason | None = None, stop_message: str | None = None) -> Trajectory:
    """The Trajectory of a run whose endpoint answered ``exchanges``, in order; ``turns`` are the turn
    texts the agent was given, the first ``finished`` of them ended by the agent itself (each one's
    reply: the last text through the endpoint during it, ``""`` for none).

    ``messages`` is the conversation as the built-in loop would hold it: each turn, then per reply
    the assistant message and a ``tool`` message per call that got a result.
    """
    answered = [e for e in exchanges if e.completion is not None]
    results = _results(exchanges)
    trajectory = Trajectory(stop=stop, stop_message=stop_message)
    for index, exchange in enumerate(answered):
        completion = exchange.completion
        assert completion is not None
        trajectory.request_turns.append(exchange.turn)
        replied = exchange.started + exchange.duration
        for call in completion.tool_calls:
            result = results.get(call.id)
            status = "invalid" if call.error else "executed" if result is not None and result[2] > index else NO_RESULT
            text, failed, _, came = result if status != NO_RESULT and result is not None else ("", False, 0, replied)
            trajectory.steps.append(Step(exchange.turn, call.id, call.name, call.arguments, text, failed,
                                         max(0.0, came - replied), index, status, replied))
        if not completion.tool_calls and exchange.request is not None:
            written = find_text_calls(completion.content, tool_names(exchange.request.tools))
            if written:
                trajectory.text_calls[index] = written
    for turn in range(finished):
        trajectory.replies.append(turn_reply(exchanges, turn))
        replies = [e.completion for e in answered if e.turn == turn and e.completion is not None]
        if replies and replies[-1].finish_reason == "length":
            trajectory.cut_replies.add(turn)
    trajectory.messages = _conversation(answered, trajectory.steps, turns)
    return trajectory


def tool_names(tools: Sequence[dict[str, Any]]) -> list[str]:
    """The names of chat function-tool specs, in order, those with none left out."""
    functions = [t.get("function") for t in tools]
    return [f["name"] for f in functions if isinstance(f, dict) and isinstance(f.get("name"), str)]


def turn_reply(exchanges: Sequence[Exchange], turn: int) -> str:
    """The reply of turn ``turn`` (0-based): the last reply text with more than blanks through the
    endpoint during it, ``""`` for none."""
    texts = [e.completion.content for e in exchanges
             if e.turn == turn and e.completion is not None and (e.completion.content or "").strip()]
    return texts[-1] or "" if texts else ""


def _results(exchanges: Sequence[Exchange]) -> dict[str, tuple[str, bool, int, float]]:
    """Call id -> its result text, whether the agent marked it an error, the index among the
    answered requests of the first request that brought it, and when that request came (epoch s)."""
    found: dict[str, tuple[str, bool, int, float]] = {}
    answered = -1
    for exchange in exchanges:
        request = exchange.request
        if exchange.completion is not None:
            answered += 1
        if request is None:
            continue
        at = answered if exchange.completion is not None else answered + 1  # a refused one follows the last reply
        for message in request.messages:
            call_id = message.get("tool_call_id")
            if message.get("role") == "tool" and isinstance(call_id, str) and call_id not in found:
                found[call_id] = (text_of(message.get("content")), call_id in request.failed_results, at,
                                  exchange.started)
    return found


def _conversation(answered: Sequence[Exchange], steps: Sequence[Step], turns: Sequence[str]) -> list[dict[str, Any]]:
    by_request: dict[int, list[Step]] = {}
    for step in steps:
        by_request.setdefault(step.request or 0, []).append(step)
    messages: list[dict[str, Any]] = []
    said = -1
    for index, exchange in enumerate(answered):
        while said < exchange.turn and said + 1 < len(turns):
            said += 1
            messages.append({"role": "user", "content": turns[said]})
        messages.append(_assistant(exchange.completion))
        messages += [{"role": "tool", "tool_call_id": s.call_id, "name": s.name, "content": s.result}
                     for s in by_request.get(index, ()) if s.status != NO_RESULT]
    messages += [{"role": "user", "content": turn} for turn in turns[said + 1:]]
    return messages


def _assistant(completion: Completion | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant"}
    if completion is not None and completion.content:
        message["content"] = completion.content
    if completion is not None and completion.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in completion.tool_calls]
    return message
