"""What one model request of a run cost and returned (``RequestStats``, its ``Tokens``), as the run record keeps it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from runner.providers.base import Attempt, Completion, ToolCall, Usage
from runner.providers.parse import reply_kind
from runner.run.agent import Step
from runner.sums import known_sum


@dataclass(frozen=True)
class Tokens:
    """Token totals of a run; a field is None when no request reported it.

    ``prompt`` includes ``cached`` (read from the provider's cache) and ``cache_write`` (written to
    it); ``completion`` includes ``reasoning``. ``unreported`` is how many requests reported no
    usage at all, so a total over fewer requests than were made says so.
    """

    prompt: int | None = None
    completion: int | None = None
    total: int | None = None
    reasoning: int | None = None
    cached: int | None = None
    cache_write: int | None = None
    unreported: int = 0

    @classmethod
    def of(cls, usages: Sequence[Usage | None]) -> Tokens:
        """The token counts of ``usages`` summed field by field (a None usage is a request that reported
        none, counted in ``unreported``); a field stays None when no usage reported it."""
        known = [u for u in usages if u is not None]
        return cls(
            prompt=known_sum(u.prompt_tokens for u in known),
            completion=known_sum(u.completion_tokens for u in known),
            total=known_sum(u.total_tokens for u in known),
            reasoning=known_sum(u.reasoning_tokens for u in known),
            cached=known_sum(u.cached_tokens for u in known),
            cache_write=known_sum(u.cache_write_tokens for u in known),
            unreported=len(usages) - len(known),
        )


@dataclass(frozen=True)
class RequestStats:
    """One model request: tokens (None when not reported; ``prompt`` includes ``cached_tokens`` and
    ``cache_write_tokens``, ``completion`` includes ``reasoning_tokens``), cost in USD (None when
    unknown), latency in seconds (retries and their waits included), the provider's finish reason,
    whether the reply ``streamed``, and for a stream ``ttft``: seconds to its first content or call.
    ``usage_reported`` says whether the provider reported any usage (None in records of earlier versions).

    What the reply was (each None or empty in records of earlier versions): ``index`` (0-based, in the
    run) and ``turn`` (0-based case turn it served); ``outcome`` (runner.providers.parse.ReplyKind:
    ``reply``, ``truncated``, ``filtered``, ``empty``, ``malformed_call``); ``native_finish_reason``,
    the provider's own where known (not for a stream); ``text``, its content (None for none or "");
    ``reasoning``, its thinking text (never part of the final reply); ``tool_calls``, each ``{id,
    name, arguments, raw_arguments, error, status}``: the full provider id, the text as sent for
    arguments that did not parse (else None), ``status`` as on the step (``executed``, ``refused``,
    ``invalid``, ``truncated``) or ``not_run`` when the run stopped first; ``text_calls``, calls written as text
    in the content, ``{name, arguments}`` each, never run.;
    ``attempts``, every try the request took (runner.providers.base.Attempt), the last the one that
    answered, or for a request that failed for good (``finish_reason`` None) the one that failed last;
    ``started``, when its first try was sent, epoch seconds (None in records of earlier versions): it
    ended ``latency`` seconds later; ``cache``, with ``run --cache``: ``hit`` (replayed, nothing sent: no
    ``attempts``, ``latency`` the look-up's, tokens, cost and ``ttft`` those of the request that first
    got the reply) or ``miss`` (sent; its reply then kept unless it failed), else None."""

    prompt: int | None = None
    completion: int | None = None
    total: int | None = None
    cost: float | None = None
    latency: float = 0.0
    finish_reason: str | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    ttft: float | None = None
    streamed: bool = False
    usage_reported: bool | None = None
    index: int = 0
    turn: int | None = None
    outcome: str | None = None
    native_finish_reason: str | None = None
    text: str | None = None
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    text_calls: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    started: float | None = None
    cache: str | None = None


def request_stats(index: int, completion: Completion, turn: int | None, steps: Sequence[Step],
                  text_calls: Sequence[ToolCall] = (), started: float | None = None) -> RequestStats:
    """The record of model request ``index`` (0-based) whose reply is ``completion``, made in case turn
    ``turn`` and sent at ``started`` (epoch seconds); ``steps`` are the run's, which say what became of
    each of its calls; ``text_calls`` are those its reply wrote as text (runner.run.agent.Trajectory.text_calls)."""
    usage = completion.usage or Usage()
    status = {s.call_id: s.status for s in steps if s.request == index}
    return RequestStats(
        usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.cost, completion.latency,
        completion.finish_reason, usage.reasoning_tokens, usage.cached_tokens, usage.cache_write_tokens,
        completion.ttft, completion.streamed, completion.usage is not None, index=index, turn=turn,
        outcome=reply_kind(completion), native_finish_reason=completion.native_finish_reason,
        text=completion.content or None, reasoning=completion.reasoning or None,
        tool_calls=[{**_call(c), "status": status.get(c.id, "not_run")} for c in completion.tool_calls],
        text_calls=[{"name": c.name, "arguments": c.arguments} for c in text_calls], attempts=list(completion.attempts),
        started=started, cache=completion.cache)


def _call(call: ToolCall) -> dict[str, Any]:
    raw = call.raw_arguments if call.error else None  # a valid one's text is its arguments (and a replay has none)
    return {"id": call.id, "name": call.name, "arguments": call.arguments, "raw_arguments": raw, "error": call.error}
