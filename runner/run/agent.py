"""The agent loop: turn -> model -> tool calls -> tool results -> ... -> reply.

It records the whole trajectory. A stop (turn limit, provider failure, run
timeout, cancellation by Ctrl-C) ends the loop early; what happened up to then is kept and the stop
is recorded on the trajectory, never raised to the caller.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from runner.kinds import StopReason
from runner.providers.base import Completion, Provider, ProviderError, ToolCall
from runner.providers.history import arguments_for
from runner.providers.limits import TurnLimitExceeded
from runner.tools.toolbox import Toolbox


class RunTimeout(Exception):
    """The run's wall-clock budget (case ``timeout``) ran out."""


class RunCancelled(Exception):
    """The suite was interrupted (Ctrl-C): the run stops before its next step."""


@dataclass(frozen=True)
class Step:
    """One executed tool call. ``duration`` is in seconds; ``turn`` is 0-based."""

    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    result: str
    is_error: bool
    duration: float


@dataclass
class Trajectory:
    """What the agent did in one run.

    Attributes:
        messages: the conversation in OpenAI chat shape, system prompt first.
        steps: every tool call with its result, in order.
        replies: the final reply text of each turn that finished.
        stop: why the loop ended early (runner.kinds.StopReason: ``turn_limit``, ``provider_error``,
            ``script_exhausted``, ``timeout``, ``cancelled``) or None.
        stop_message: the human cause of that stop; for ``timeout``, what the run was
            doing when its time ran out (``waiting for the model ...``), or None.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    stop: StopReason | None = None
    stop_message: str | None = None

    @property
    def final_reply(self) -> str:
        return self.replies[-1] if self.replies else ""


def run_agent(
    provider: Provider,
    toolbox: Toolbox,
    system: str,
    turns: Sequence[str],
    deadline: float | None = None,
    cancel: threading.Event | None = None,
) -> Trajectory:
    """Send each turn and serve tool calls until the model replies without any.

    Args:
        provider: the model, already wrapped in the turn limit.
        toolbox: the offered tools; every call goes through it.
        system: the rendered system prompt.
        turns: the rendered turn prompts.
        deadline: ``time.monotonic()`` value after which the run stops with ``timeout``; model
            requests are cut short there too (the provider raises OutOfTime, kind ``timeout``).
        cancel: once set, the run stops with ``cancelled`` before its next model request
            or tool call.
    """
    trajectory = Trajectory(messages=[{"role": "system", "content": system}])
    try:
        for index, turn in enumerate(turns):
            trajectory.messages.append({"role": "user", "content": turn})
            trajectory.replies.append(_run_turn(provider, toolbox, trajectory, index, deadline, cancel))
    except TurnLimitExceeded as e:
        trajectory.stop, trajectory.stop_message = StopReason.TURN_LIMIT, str(e)
    except ProviderError as e:
        trajectory.stop, trajectory.stop_message = StopReason(e.kind), str(e)
    except RunTimeout as e:
        trajectory.stop, trajectory.stop_message = StopReason.TIMEOUT, str(e) or None
    except RunCancelled as e:
        trajectory.stop, trajectory.stop_message = StopReason.CANCELLED, str(e)
    return trajectory


def _run_turn(
    provider: Provider,
    toolbox: Toolbox,
    trajectory: Trajectory,
    turn: int,
    deadline: float | None,
    cancel: threading.Event | None,
) -> str:
    specs = toolbox.specs()
    while True:
        _check_stop(deadline, cancel)
        completion = provider.complete(trajectory.messages, specs, deadline)
        message = completion.message if completion.message is not None else _assistant_message(completion)
        if message.get("content") or message.get("tool_calls"):  # litellm would drop or fill in an empty one
            trajectory.messages.append(dict(message))
        if not completion.tool_calls:
            return completion.content or ""
        for call in completion.tool_calls:
            _check_stop(deadline, cancel)
            started = time.monotonic()
            result = toolbox.call(call.name, call.arguments, call.error)
            step = Step(turn, call.id, call.name, call.arguments, result.content, result.is_error,
                        time.monotonic() - started)
            trajectory.steps.append(step)
            trajectory.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                        "content": result.content})


def _check_stop(deadline: float | None, cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise RunCancelled("cancelled: the suite was interrupted")
    if deadline is not None and time.monotonic() > deadline:
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
