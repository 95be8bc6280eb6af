"""The provider seam: what the agent loop sends a model and what comes back.

Messages and tool specs use the OpenAI chat-completions shapes
(https://platform.openai.com/docs/api-reference/chat), which litellm speaks
for every provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner.kinds import ErrorKind


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model.

    Attributes:
        id: the provider's call id (synthesized when missing or duplicated).
        name: the tool name as the model wrote it.
        arguments: the parsed arguments object, or None when they did not parse.
        error: why the arguments were unusable (e.g. invalid JSON), else None.
        raw_arguments: the arguments as sent, when they came as a string.
        repaired: how the call as sent was made usable, else None: ``null`` (the arguments text ``null``,
            taken as ``{}``), ``double_encoded`` (a JSON string holding a JSON object, parsed once more) or
            ``unwrapped`` (a call with no name whose arguments were the whole call; an alias's ``unwrap_calls``).
    """

    id: str
    name: str
    arguments: dict[str, Any] | None
    error: str | None = None
    raw_arguments: str | None = None
    repaired: str | None = None


@dataclass(frozen=True)
class Usage:
    """Token counts of one model request; None means the provider did not say.

    ``prompt_tokens`` includes cached ones, ``completion_tokens`` includes reasoning ones (as litellm
    reports them); ``reasoning_tokens``, ``cached_tokens`` (prompt tokens read from the provider's
    cache) and ``cache_write_tokens`` (prompt tokens written to it) are those parts on their own.
    A ``total_tokens`` left out is ``prompt_tokens + completion_tokens`` when both are known, else None:
    one part alone says nothing of the other.
    """

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cost: float | None = None  # USD, from litellm's cost table when the model is known
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.total_tokens is None and self.prompt_tokens is not None and self.completion_tokens is not None:
            object.__setattr__(self, "total_tokens", self.prompt_tokens + self.completion_tokens)


@dataclass(frozen=True)
class Completion:
    """One model reply.

    Attributes:
        content: the reply text (None or "" when the reply is only tool calls).
        tool_calls: the calls requested, in order.
        finish_reason: the provider's finish reason (``stop``, ``tool_calls``, ``length``...).
        usage: token counts, or None when the provider reported none.
        latency: seconds the request took.
        message: the assistant message as the provider returned it (OpenAI chat shape, with the
            provider's extra fields: thinking blocks and their signatures, thought signatures), ready
            to go back in the history; None for a provider that has none (scripted).
        reasoning: the reasoning or thinking text the model sent beside its reply, else None.
        ttft: seconds from sending a streamed request to its first content or call; None unstreamed.
        streamed: whether the reply came as a stream.
        native_finish_reason: the provider's own finish reason where litellm's hides it (Gemini
            ``MALFORMED_FUNCTION_CALL``, Anthropic ``max_tokens``), else None; unknown for a stream.
        attempts: every try the request took, in order, the last the one that answered (empty for a
            provider that does not retry: scripted, and for a reply from the response cache).
        cache: ``hit`` (replayed from ``run --cache``'s folder: nothing sent, ``usage`` and ``ttft`` are
            those of the request that first got it), ``miss`` (sent, then kept), None without a cache.
    """

    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    latency: float = 0.0
    message: Mapping[str, Any] | None = None
    reasoning: str | None = None
    ttft: float | None = None
    streamed: bool = False
    native_finish_reason: str | None = None
    attempts: tuple[Attempt, ...] = ()
    cache: str | None = None


@dataclass(frozen=True)
class Attempt:
    """One try of a model request (one HTTP request sent).

    Attributes:
        number: 1 for the first try.
        duration: seconds the try took, its wait afterwards not included.
        error_kind: how it failed (runner.kinds.ErrorKind), None when it answered.
        status: the provider's HTTP status; None when none came (no connection, a timeout); 200 for an
            error the provider sent in the body of an HTTP 200, and for a stream the run's deadline cut short.
        message: the failure's first line (at most 300 characters), None when it answered.
        wait: seconds waited after it before the next try, None when none followed; after a 429 with a
            rate limiter (runner.providers.ratelimit), the cool-down left when it came, waited out in the
            next try's ``rate_limited``.
        wait_source: where the wait came from: ``retry-after-ms``, ``retry-after``, ``http-date``,
            ``retry-info`` (Gemini's RetryInfo), ``text`` (the message), ``backoff``.
        rate_limited: seconds it waited for its provider's rate limiter before it was sent (a cool-down
            after a 429, a place among the requests in flight); 0.0 in records of earlier versions.
        error_code: the code of an error the provider sent under HTTP 200 (its body's ``error.code``, an
            integer or a string, else the status litellm read from it); None otherwise.
    """

    number: int
    duration: float
    error_kind: ErrorKind | None = None
    status: int | None = None
    message: str | None = None
    wait: float | None = None
    wait_source: str | None = None
    rate_limited: float = 0.0
    error_code: int | str | None = None


class ProviderError(Exception):
    """A model request failed for good (after any retries, or at once for a failure no retry can
    fix); the run becomes an ERROR of ``kind``. ``status`` is the provider's last HTTP status (None
    when none came), ``attempts`` the tries made (empty when none was sent)."""

    kind = ErrorKind.PROVIDER_ERROR

    def __init__(self, message: str, kind: ErrorKind | None = None, status: int | None = None,
                 attempts: tuple[Attempt, ...] = ()) -> None:
        super().__init__(message)
        if kind is not None:
            self.kind = kind
        self.status = status
        self.attempts = attempts


class NoVerdict(ProviderError):
    """A judge answered but gave no verdict, and the message says why in its own words (the scripted judge: no
    rule of its file matches the final reply): the check is a ``judge_error``, a calibration item is left out."""

    kind = ErrorKind.JUDGE_ERROR


class OutOfTime(ProviderError):
    """The run's deadline came before the model answered: the run is a timeout, not a provider failure.

    The message says what was waited for (``waiting for the model: ...``).
    """

    kind = ErrorKind.TIMEOUT


class Provider(Protocol):
    """A model: given the conversation and the offered tools, one reply.

    ``messages`` are OpenAI-style dicts (role/content/tool_calls/tool_call_id);
    ``tools`` are OpenAI function-tool specs. ``deadline`` (``time.monotonic()``,
    None for none) is the end of the run's time: no request waits past it. Raises
    ProviderError; OutOfTime when the deadline came first.
    """

    name: str

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None
    ) -> Completion: ...


@dataclass
class RequestLog:
    """Per-run accounting of model requests, filled by the turn-limit wrapper."""

    requests: int = 0
    completions: list[Completion] = field(default_factory=list)
