"""What the agent did in one run, as the loop (runner.run.agent), an external agent's rebuilt wire
(runner.endpoint.rebuild), the checks, the scoring and the record all read it: ``Trajectory``, its
``Step``s, ``NextTurn`` (where each next turn comes from), and the two ways a run's own limits stop it
(``RunTimeout``, ``RunCancelled``). Data only: it imports no behaviour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.kinds import StopReason
from runner.providers.base import ToolCall

RAN = frozenset({"executed", "recovered"})  # the step statuses of calls whose tool ran


class RunTimeout(Exception):
    """The run's wall-clock budget (case ``timeout``) ran out."""


class RunCancelled(Exception):
    """The suite was interrupted (Ctrl-C): the run stops before its next step."""



@dataclass(frozen=True)
class Step:
    """One tool call the model made. ``duration`` is in seconds; ``turn`` is 0-based; ``request`` is the
    0-based index of the model request whose reply held the call (None in records of earlier versions):
    parallel calls share one. ``status``: ``executed``, ``refused`` (not run: the tool is unknown,
    denied by the case, or its arguments fail the tool's JSON Schema; the model got the error),
    ``invalid`` (its arguments did not parse, the model got the error), ``truncated`` (not run: its
    reply was cut off at the output limit) or ``recovered`` (written as text in the reply's content,
    run because the alias says ``recover_text_calls``). Only ``executed`` and ``recovered`` calls
    ``ran``: the trace checks that ask for calls count no other (runner.checks.trace). ``started``: when
    the call began, epoch seconds (None in records of earlier versions). ``repaired``: how its arguments
    were made usable (runner.providers.base.ToolCall.repaired), else None. ``fault``: the kind of the injected
    fault its result got (runner.tools.faults: ``error``, ``timeout``, ``empty``, ``truncated``, ``garbage``,
    ``slow``), else None."""

    turn: int
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    result: str
    is_error: bool
    duration: float
    request: int | None = None
    status: str = "executed"
    started: float | None = None
    repaired: str | None = None
    fault: str | None = None

    @property
    def ran(self) -> bool:
        """Whether the tool ran: the call was ``executed`` or ``recovered``."""
        return self.status in RAN


@dataclass
class Trajectory:
    """What the agent did in one run.

    Attributes:
        messages: the conversation in OpenAI chat shape, system prompt first.
        steps: every tool call with its result, in order.
        replies: the final reply text of each turn that finished.
        stop: why the loop ended early (runner.kinds.StopReason: ``turn_limit``, ``provider_error``,
            ``script_exhausted``, ``timeout``, ``cancelled``, ``truncated``, ``empty_reply``,
            ``malformed_call``) or None.
        stop_message: the human cause of that stop; for ``timeout``, what the run was
            doing when its time ran out (``waiting for the model ...``), or None.
        request_turns: the 0-based case turn of each model request that got a reply, in order.
        text_calls: per request index, the tool calls its reply wrote as text instead of calling
            (runner.providers.textcalls), found in replies without native calls; never run.
        cut_replies: the 0-based turns whose reply was cut off at the output limit (finish reason
            ``length``) and still ended the turn with its text.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    stop: StopReason | None = None
    stop_message: str | None = None
    request_turns: list[int] = field(default_factory=list)
    text_calls: dict[int, tuple[ToolCall, ...]] = field(default_factory=dict)
    cut_replies: set[int] = field(default_factory=set)

    @property
    def final_reply(self) -> str:
        return self.replies[-1] if self.replies else ""

    @property
    def final_reply_cut(self) -> bool:
        """Whether the final reply (``final_reply``) was cut off at the output limit."""
        return bool(self.replies) and len(self.replies) - 1 in self.cut_replies


NextTurn = Callable[[Sequence[str]], "str | None"]  # the replies so far -> the next turn, None to end
