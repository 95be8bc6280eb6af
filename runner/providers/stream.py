"""Reading a streamed reply: chunks in, one litellm ``ModelResponse`` out, assembled by litellm.

litellm's ``stream_chunk_builder`` joins argument fragments, thinking deltas and
their ``signature_delta``, usage-only chunks and the rest, but it drops every tool
call whose first fragment has no id (streamed Ollama sends its first call so; some
OpenAI-compatible servers send none), and Ollama sends every call at index 0:
each call gets an index and an id of its own first. The builder also makes up
token counts when the provider sent none, so the usage recorded is the last one
the provider sent in a chunk, from the stream wrapper's own list of them.

litellm's chunks carry only its mapped finish reason, so the provider's own is read from each event as
the provider sent it (``watch``): Anthropic ``message_delta.delta.stop_reason``, Gemini
``candidates[0].finishReason``, OpenAI ``choices[0].finish_reason``, the last one sent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class PastDeadline(Exception):
    """The run's deadline passed while the reply was still streaming in."""


@dataclass(frozen=True)
class Streamed:
    """A whole streamed reply: ``response`` (litellm's ModelResponse), ``usage``, the last usage the
    provider reported in a chunk (litellm's ``Usage`` shape as a dict; None when it reported none:
    the response's own usage is then litellm's estimate), ``ttft``, the seconds from ``started``
    to the first chunk with content, reasoning or a tool call (None when none came), and
    ``native_finish_reason``, the last finish reason the provider itself sent (None when none came)."""

    response: Any
    usage: dict[str, Any] | None
    ttft: float | None
    native_finish_reason: str | None = None


def collect(wrapper: Any, build: Callable[[list[Any]], Any], started: float, deadline: float | None) -> Streamed:
    """Read every chunk of ``wrapper`` (litellm's CustomStreamWrapper) and assemble them with
    ``build`` (``litellm.stream_chunk_builder``).

    ``started`` and ``deadline`` are ``time.monotonic()`` values. Raises PastDeadline when
    the deadline passes mid-stream (the stream is closed), and whatever litellm raises for an
    error the provider sent after its HTTP 200 (a ``MidStreamFallbackError``, a timeout).
    """
    chunks: list[Any] = []
    ttft: float | None = None
    native = watch(wrapper)
    for chunk in wrapper:
        if ttft is None and _has_payload(chunk):
            ttft = time.monotonic() - started
        chunks.append(chunk)
        if deadline is not None and time.monotonic() > deadline:
            _close(wrapper)
            raise PastDeadline()
    fill_missing_ids(chunks)
    reported = [u for u in (_get(c, "usage") for c in getattr(wrapper, "chunks", None) or ()) if u is not None]
    usage = reported[-1] if reported else None  # the provider's running totals: the last is the whole reply's
    as_dict = usage.model_dump() if usage is not None and hasattr(usage, "model_dump") else usage
    return Streamed(build(chunks), as_dict, ttft, native[-1] if native else None)


def watch(wrapper: Any) -> list[str]:
    """The list the provider's own finish reasons will be added to, in order, as ``wrapper`` (litellm's
    CustomStreamWrapper, not yet read) reads its events: each event is seen where litellm's provider
    iterator parses it (its ``chunk_parser``, given the event's JSON object) or, for the OpenAI client's
    stream, as the chunk it yields. A stream opened only when first read (Gemini's) is watched once opened.
    """
    seen: list[str] = []
    opener = getattr(wrapper, "make_call", None)
    if getattr(wrapper, "completion_stream", None) is None and callable(opener):
        def opened(**kwargs: Any) -> Any:
            stream = opener(**kwargs)
            _watch_stream(stream, seen)
            return stream

        wrapper.make_call = opened
    else:
        _watch_stream(wrapper.completion_stream, seen)
    return seen


def _watch_stream(stream: Any, seen: list[str]) -> None:
    """Add each finish reason ``stream``'s events carry to ``seen``: through its ``chunk_parser`` where it
    has one, else through the OpenAI client's ``Stream._iterator``."""
    parse = getattr(stream, "chunk_parser", None)
    if callable(parse):
        def parser(chunk: Any) -> Any:
            _note(_native_of(chunk), seen)
            return parse(chunk=chunk)

        stream.chunk_parser = parser
    elif hasattr(stream, "_iterator"):
        stream._iterator = _noting(stream._iterator, seen)


def _noting(items: Any, seen: list[str]) -> Any:
    for item in items:
        _note(_native_of(item.model_dump() if hasattr(item, "model_dump") else item), seen)
        yield item


def _note(reason: str | None, seen: list[str]) -> None:
    if reason is not None:
        seen.append(reason)


def _native_of(event: Any) -> str | None:
    """The finish reason an event as the provider sent it carries: Anthropic ``message_delta``'s
    ``delta.stop_reason``, Gemini's ``candidates[0].finishReason``, OpenAI's ``choices[0].finish_reason``."""
    if not isinstance(event, dict):
        return None
    delta = event.get("delta")
    if event.get("type") == "message_delta" and isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
        return str(delta["stop_reason"])
    for key, field in (("candidates", "finishReason"), ("choices", "finish_reason")):
        first = event.get(key)
        if isinstance(first, list) and first and isinstance(first[0], dict) and isinstance(first[0].get(field), str):
            return str(first[0][field])
    return None


def fill_missing_ids(chunks: list[Any]) -> None:
    """Give every streamed tool call an index and an id of its own, in place, for the chunk builder,
    which joins fragments by index and drops a call whose first fragment has no id.

    A fragment continues the call at its index unless it names a function and either carries an id other
    than that call's or comes once that call's arguments are whole JSON: some OpenAI-compatible servers
    repeat the name, without the id, on every fragment of one call, while Ollama sends each call whole, all
    at index 0, the first without an id. A call without an id gets ``call_<n>`` (n from 1, skipping ids
    the stream uses); its later fragments keep theirs, as the builder takes the first id of a call.
    """
    deltas = [(choice.index, call) for chunk in chunks for choice in chunk.choices or ()
              for call in (getattr(choice.delta, "tool_calls", None) or ())]
    taken = {call.id for _, call in deltas if call.id}
    started: dict[tuple[int, int], tuple[int, str | None]] = {}  # (choice, index as sent) -> (index, id)
    arguments: dict[tuple[int, int], str] = {}  # (choice, index as sent) -> the current call's arguments so far
    used: dict[int, int] = {}  # choice -> indexes given out
    counter = 0
    for choice_index, call in deltas:
        key = (choice_index, call.index or 0)
        name = getattr(call.function, "name", None) if call.function is not None else None
        fragment = (getattr(call.function, "arguments", None) if call.function is not None else None) or ""
        current = started.get(key)
        if current is not None and not (name and (call.id != current[1] if call.id else _whole(arguments[key]))):
            call.index = current[0]
            arguments[key] += fragment
            continue
        arguments[key] = fragment
        call.index = used.get(choice_index, 0)
        used[choice_index] = call.index + 1
        if not call.id:
            counter += 1
            while f"call_{counter}" in taken:
                counter += 1
            call.id = f"call_{counter}"
            taken.add(call.id)
        started[key] = (call.index, call.id)


def _whole(arguments: str) -> bool:
    """Whether a call's arguments so far are one whole JSON value (no fragment of them is still to come)."""
    try:
        json.loads(arguments)
    except ValueError:
        return False
    return True


def _has_payload(chunk: Any) -> bool:
    """Whether ``chunk`` carries some of the reply: text, reasoning, thinking or a tool call (not only
    a role, a finish reason or usage)."""
    for choice in chunk.choices or ():
        delta = choice.delta
        if any(getattr(delta, name, None) for name in ("content", "reasoning_content", "thinking_blocks", "tool_calls")):
            return True
    return False


def _get(chunk: Any, key: str) -> Any:
    return chunk.get(key) if hasattr(chunk, "get") else getattr(chunk, key, None)


def _close(wrapper: Any) -> None:
    """Close the stream's HTTP response (``CustomStreamWrapper.close``), so the server stops sending."""
    close = getattr(wrapper, "close", None)
    if callable(close):
        close()
