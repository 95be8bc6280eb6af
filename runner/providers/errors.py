"""What a failed model request was: its kind, the provider's true HTTP status, and what it asked to wait.

litellm's exception class and ``status_code`` are not the provider's status (an OpenAI 413 arrives
as a RateLimitError 429, an Anthropic 529 as a 500, a refused connection as a 500), so the kind is
read from the ``httpx.HTTPStatusError`` in the exception's cause chain when there is one: its
status, headers and body are what the provider sent. Without one (no HTTP answer at all) the
chain's network or timeout error decides. An error the provider sent in the body of an HTTP 200 (a JSON
``{"error": {...}}``, an error event in a stream) is one litellm reports with a 4xx or 5xx of its own
making: its status stays 200, the body's own code (``error.code``, else litellm's status for it) is
``error_code``, and the kind is read from that code. See docs/providers.md, "Errors and retries".

An HTML page sent with a success status (runner.providers.page's ``NotAReply``) is a
``malformed_response`` with the page's own status, retried.

Whether a retry can help: the kinds in ``_RETRIED``, a body with Gemini's ``RetryInfo`` (quota or not);
the provider's ``x-should-retry`` header, when sent, decides either way. A 429 that says the request
itself is over the limit (OpenAI's "Request too large ... Requested N") can never succeed: the context
overflows, the agent's doing; a 429 marked ``x-should-retry: false`` is a request error, not a rate limit,
so the suite's shared window does not shrink for it. Ollama's 500 "error parsing tool call" is the model's
malformed call: asked again, and the agent's failure (``malformed_call``) when it keeps coming.

Waits asked for, first match (``retry_hint``): header ``retry-after-ms``; ``Retry-After`` as seconds
or as an HTTP-date; Gemini's ``google.rpc.RetryInfo.retryDelay`` in the error body; "try again in
4.5s" / "retry in 37s" in the message.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import regex

from runner.kinds import ErrorKind

_CHAIN_LIMIT = 10
_RETRIED = frozenset({ErrorKind.RATE_LIMIT, ErrorKind.SERVER_ERROR, ErrorKind.PROVIDER_TIMEOUT,
                      ErrorKind.CONNECTION, ErrorKind.MALFORMED_RESPONSE, ErrorKind.MALFORMED_CALL})
# Ollama's 500 for a call the model wrote that its parser could not read: the model's doing, asked again
_BAD_CALL = regex.compile(r"error parsing tool call")
# Wording of a used-up account (OpenAI insufficient_quota, Anthropic credit, Gemini's per-day limit),
# as opposed to a per-minute rate limit; both arrive as 429 (or 400, 402).
# Gemini says "exceeded your current quota" of a per-minute limit too: its quota id tells them apart.
_QUOTA = regex.compile(r"insufficient_quota|credit balance|billing_hard_limit|perday|per_day|per day|"
                       r"exceeded your current quota")
_CONTEXT = regex.compile(r"context_length_exceeded|context length|context window|maximum context|"
                         r"prompt is too long|input is too long|too many input tokens")
_TOO_LARGE = regex.compile(r"request too large")  # a 429 of a request over the per-minute token limit on its own
_PER_DAY = regex.compile(r"perday|per_day|per day")
_BAD_KEY = regex.compile(r"api_key_invalid|api key not valid|invalid api key|invalid x-api-key|incorrect api key")
_WAIT_TEXT = regex.compile(r"(?:try again|retry) in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds)\b")
_DURATION = regex.compile(r"^(\d+(?:\.\d+)?)s$")


@dataclass(frozen=True)
class Failure:
    """One failed request, classified: ``kind``; ``status`` (the provider's HTTP status, None when it
    sent none; 200 for an error sent in the body of an HTTP 200); ``retryable``; ``message`` (the error's
    first line, with the body's own message when litellm's left it out); ``headers`` (lower-cased names)
    and ``body`` (text) of the provider's error response, empty without one; ``error_code``, the code an
    error sent under HTTP 200 gave (its ``error.code`` as sent, an integer or a string, else the status
    litellm read from it), None for any other error."""

    kind: ErrorKind
    status: int | None
    retryable: bool
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: str = ""
    error_code: int | str | None = None


def classify(error: BaseException) -> Failure:
    """The Failure ``error`` (an exception litellm or the OpenAI client raised) stands for.

    Never raises: an error of no known shape is ``provider_error``, not retried.
    """
    chain = list(causes(error))
    message = (str(error).strip().splitlines() or [type(error).__name__])[0]
    page = next((e for e in chain if type(e).__name__ == "NotAReply"), None)  # runner.providers.page
    if page is not None:  # a page where a reply should be: its own status, retried
        return Failure(ErrorKind.MALFORMED_RESPONSE, _status(page), True, message)
    response = next((r for r in map(_http_response, chain) if r is not None), None)
    headers, body = _response_parts(response) if response is not None else ({}, "")
    status = response.status_code if response is not None else _status(error)
    in_body = _in_body(chain, status) if response is None else None
    if in_body is not None and in_body[1] and in_body[1] not in message:
        message = f"{message} {in_body[1]}"
    text = f"{error} {body} {in_body[1] if in_body else ''}".lower()
    kind = _kind(error, chain, response is not None, status, text)
    asked = _retry_info(body) is not None
    if kind is ErrorKind.QUOTA_EXHAUSTED and asked and not _PER_DAY.search(text):
        kind = ErrorKind.RATE_LIMIT  # Gemini words a per-minute limit as a quota; its RetryInfo says which
    should = headers.get("x-should-retry", "").strip().lower()
    if kind is ErrorKind.RATE_LIMIT and should == "false":
        kind = ErrorKind.BAD_REQUEST
    retryable = should == "true" if should in ("true", "false") else kind in _RETRIED or asked
    if in_body is not None:
        return Failure(kind, 200, retryable, message, headers, body, in_body[0])
    return Failure(kind, status if response is not None or kind not in _NO_ANSWER else None, retryable,
                   message, headers, body)


_NO_ANSWER = frozenset({ErrorKind.CONNECTION, ErrorKind.PROVIDER_TIMEOUT, ErrorKind.MALFORMED_RESPONSE})


def _kind(error: BaseException, chain: list[BaseException], answered: bool, status: int | None,
          text: str) -> ErrorKind:
    names = {c.__name__ for e in chain for c in type(e).__mro__}
    if not answered:
        if names & {"TimeoutException", "APITimeoutError", "TimeoutError", "Timeout"}:
            return ErrorKind.PROVIDER_TIMEOUT
        if names & {"ConnectError", "ConnectionError", "RemoteProtocolError", "NetworkError"}:
            return ErrorKind.CONNECTION
        if "unable to convert" in text:  # litellm could not turn the history into Gemini's shape: nothing was sent
            return ErrorKind.BAD_REQUEST
        client_side = status is not None and 400 <= status < 500  # litellm refused the request before sending it
        if not client_side and (names & {"JSONDecodeError", "KeyError", "ValueError", "TypeError"}
                                or "expecting value" in text):
            return ErrorKind.MALFORMED_RESPONSE
    if "ContextWindowExceededError" in names or (status in (400, 413, None) and _CONTEXT.search(text)):
        return ErrorKind.CONTEXT_OVERFLOW
    if status in (401, 403) or _BAD_KEY.search(text):
        return ErrorKind.AUTH
    if status == 500 and _BAD_CALL.search(text):
        return ErrorKind.MALFORMED_CALL
    if status == 429 and _TOO_LARGE.search(text):
        return ErrorKind.CONTEXT_OVERFLOW
    if status in (402, 429, 400) and _QUOTA.search(text) and "perminute" not in text:
        return ErrorKind.QUOTA_EXHAUSTED
    if status == 429:
        return ErrorKind.RATE_LIMIT
    if status in (400, 404, 413, 422):
        return ErrorKind.BAD_REQUEST
    if (status is not None and (status >= 500 or status in (408, 409))) or "MidStreamFallbackError" in names:
        return ErrorKind.SERVER_ERROR
    return ErrorKind.PROVIDER_ERROR


def retry_hint(error: BaseException, failure: Failure, now: float | None = None) -> tuple[float, str] | None:
    """Seconds the provider asked to wait before the next try, and where that came from
    (``retry-after-ms``, ``retry-after``, ``http-date``, ``retry-info``, ``text``); None when it asked
    nothing. ``now`` is the wall clock (``time.time()``) an HTTP-date is measured from."""
    headers = {**_headers_of(getattr(error, "response", None)),
               **_lower(getattr(error, "litellm_response_headers", None)), **failure.headers}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            seconds = float(headers[key]) * scale
        except (KeyError, ValueError):
            continue
        if seconds >= 0:
            return seconds, key
    when = _http_date(headers.get("retry-after"))
    if when is not None:
        return max(0.0, when - (time.time() if now is None else now)), "http-date"
    delay = _retry_info(failure.body)
    if delay is not None:
        return delay, "retry-info"
    found = _WAIT_TEXT.search(f"{error} {failure.body}".lower())
    if found:
        return float(found.group(1)) * (0.001 if found.group(2) == "ms" else 1.0), "text"
    return None


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what caused it (``__cause__``, ``__context__``, litellm's ``original_exception``),
    at most _CHAIN_LIMIT of them, each once."""
    seen: set[int] = set()
    todo = [error]
    while todo and len(seen) < _CHAIN_LIMIT:
        one = todo.pop(0)
        if id(one) in seen:
            continue
        seen.add(id(one))
        yield one
        for nxt in (one.__cause__, one.__context__, getattr(one, "original_exception", None)):
            if isinstance(nxt, BaseException):
                todo.append(nxt)


def _in_body(chain: list[BaseException], status: int | None) -> tuple[int | str | None, str] | None:
    """The code and message of an error the provider sent in the body of an HTTP 200, None when the chain
    holds none: litellm's bare ``Exception`` with ``status_code`` and ``message`` (a JSON body's ``error``),
    the OpenAI client's plain ``APIError`` with the SSE event's ``body``, or litellm's
    ``MidStreamFallbackError`` (an error after the stream began; its code is litellm's status)."""
    for one in chain:
        if type(one) is Exception and _status(one) is not None:
            return _status(one), str(getattr(one, "message", "") or "")
        body = getattr(one, "body", None)
        if type(one).__name__ == "APIError" and isinstance(body, dict):
            code = body.get("code")
            return (code if isinstance(code, (int, str)) and not isinstance(code, bool) else status,
                    str(body.get("message") or ""))
    if any(type(one).__name__ == "MidStreamFallbackError" for one in chain):
        return status, ""
    return None


def _http_response(error: BaseException) -> Any:
    """The ``response`` of an ``httpx.HTTPStatusError`` (known by its class name) with an int status; else None."""
    response = getattr(error, "response", None)
    if type(error).__name__ == "HTTPStatusError" and isinstance(getattr(response, "status_code", None), int):
        return response
    return None


def _response_parts(response: Any) -> tuple[dict[str, str], str]:
    return _headers_of(response), response_text(response)


def response_text(response: Any) -> str:
    """The body of an ``httpx.Response`` as text; ``""`` for a streamed one nobody read (its body is gone)."""
    try:
        return str(response.text)
    except RuntimeError:  # httpx.ResponseNotRead
        return ""


def _headers_of(response: Any) -> dict[str, str]:
    return _lower(getattr(response, "headers", None))


def _lower(headers: Any) -> dict[str, str]:
    try:
        return {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}
    except (TypeError, ValueError):
        return {}


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _http_date(value: str | None) -> float | None:
    """An HTTP-date (RFC 9110 5.6.7) as a Unix time, or None."""
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def _retry_info(body: str) -> float | None:
    """Gemini's ``error.details[@type=type.googleapis.com/google.rpc.RetryInfo].retryDelay`` (a
    protobuf Duration such as ``"37s"``) in seconds, or None."""
    try:
        details = json.loads(body)["error"]["details"]
    except (ValueError, KeyError, TypeError):
        return None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            found = _DURATION.match(str(detail.get("retryDelay", "")))
            if found:
                return float(found.group(1))
    return None
