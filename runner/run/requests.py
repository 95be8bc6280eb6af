"""What one model request of a run cost and returned (``RequestStats``), and token counts summed over
requests (``Tokens``), as the run record keeps them.

Token counts have one vocabulary in every shape: a reply's (runner.providers.base.Usage), a request's
(``RequestStats``), a run's or a group of runs' (``Tokens``, summed by ``Tokens.of``, the one summing rule):
``prompt_tokens`` (cached ones included), ``completion_tokens`` (reasoning ones included), ``total_tokens``,
``reasoning_tokens``, ``cached_tokens`` (prompt tokens read from the provider's cache), ``cache_write_tokens``
(prompt tokens written to it); each None when no request reported it. The run file keeps its own older key
for some of them (``prompt``, ``completion``, ``total``...: ``JSON_KEY``), documented in docs/reference/results.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner.providers.base import Attempt, Completion, ToolCall, Usage
from runner.providers.parse import reply_kind
from runner.run.trajectory import Step
from runner.sums import known_sum

JSON_KEY = "alias"  # a field's metadata entry naming its key in the run file, where that is not the field's name
# (pydantic's name for it, which it reads from a dataclass field's metadata: runner.output.decode)


def _count(key: str) -> Any:
    """A token count field, None by default, written to the run file as ``key``."""
    return field(default=None, metadata={JSON_KEY: key})


class Counts(Protocol):
    """Anything with the token counts of the vocabulary (module docstring): Usage, RequestStats, Tokens."""

    @property
    def prompt_tokens(self) -> int | None: ...
    @property
    def completion_tokens(self) -> int | None: ...
    @property
    def total_tokens(self) -> int | None: ...
    @property
    def reasoning_tokens(self) -> int | None: ...
    @property
    def cached_tokens(self) -> int | None: ...
    @property
    def cache_write_tokens(self) -> int | None: ...


@dataclass(frozen=True)
class Tokens:
    """Token counts summed over requests (a run's, its judges', a group of runs'); a count is None when no
    request reported it. ``unreported`` is how many requests reported no usage at all, so a total over
    fewer requests than were made says so. In the run file: ``{prompt, completion, total, reasoning,
    cached, cache_write, unreported}``.
    """

    prompt_tokens: int | None = _count("prompt")
    completion_tokens: int | None = _count("completion")
    total_tokens: int | None = _count("total")
    reasoning_tokens: int | None = _count("reasoning")
    cached_tokens: int | None = _count("cached")
    cache_write_tokens: int | None = _count("cache_write")
    unreported: int = 0

    @classmethod
    def of(cls, counts: Sequence[Counts | None]) -> Tokens:
        """``counts`` summed count by count: replies' usages, requests, or runs' Tokens (their ``unreported``
        added up). A None is a request that reported no usage, counted in ``unreported``; a count stays None
        when none of ``counts`` reported it."""
        known = [c for c in counts if c is not None]
        return cls(
            prompt_tokens=known_sum(c.prompt_tokens for c in known),
            completion_tokens=known_sum(c.completion_tokens for c in known),
            total_tokens=known_sum(c.total_tokens for c in known),
            reasoning_tokens=known_sum(c.reasoning_tokens for c in known),
            cached_tokens=known_sum(c.cached_tokens for c in known),
            cache_write_tokens=known_sum(c.cache_write_tokens for c in known),
            unreported=len(counts) - len(known) + sum(getattr(c, "unreported", 0) for c in known),
        )


@dataclass(frozen=True)
class RequestStats:
    """One model request: its token counts (module docstring; None when not reported; in the run file
    ``prompt``, ``completion`` and ``total`` for the first three), cost in USD (None when
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
    got the reply) or ``miss`` (sent; its reply then kept unless it failed), else None; ``messages``, the
    messages it carried as ``[start, end]``: the run record's ``messages[start:end]`` (None in records of
    earlier versions)."""

    prompt_tokens: int | None = _count("prompt")
    completion_tokens: int | None = _count("completion")
    total_tokens: int | None = _count("total")
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
    messages: list[int] | None = None


def request_stats(index: int, completion: Completion, turn: int | None, steps: Sequence[Step],
                  text_calls: Sequence[ToolCall] = (), started: float | None = None,
                  messages: tuple[int, int] | None = None) -> RequestStats:
    """The record of model request ``index`` (0-based) whose reply is ``completion``, made in case turn
    ``turn`` and sent at ``started`` (epoch seconds) carrying the run's messages ``messages`` (``(start, end)``);
    ``steps`` are the run's, which say what became of each of its calls; ``text_calls`` are those its reply
    wrote as text (runner.run.trajectory.Trajectory.text_calls)."""
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
        started=started, cache=completion.cache, messages=list(messages) if messages is not None else None)


def _call(call: ToolCall) -> dict[str, Any]:
    raw = call.raw_arguments if call.error else None  # a valid one's text is its arguments (and a replay has none)
    return {"id": call.id, "name": call.name, "arguments": call.arguments, "raw_arguments": raw, "error": call.error}
