"""Turning a raw chat-completion response into a Completion, robustly.

Real providers return odd shapes: tool-call arguments as a JSON string or as
an object, arguments that are not valid JSON, missing or repeated call ids,
``content`` null beside tool calls, no usage block. This module accepts
litellm's ``ModelResponse`` or a plain dict of the OpenAI chat-completion
shape (https://platform.openai.com/docs/api-reference/chat/object) and never
guesses: what the provider did not say stays None. It is pure (no I/O, no
litellm import), so it is tested on its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from runner.providers.base import Completion, ProviderError, ToolCall, Usage

_UNSET: Any = object()


def parse_completion(response: Any, *, latency: float = 0.0, usage: Usage | None = _UNSET,
                     raw: Mapping[str, Any] | None = None, unwrap: bool = False) -> Completion:
    """The first choice of ``response`` as a Completion.

    Args:
        response: a litellm ``ModelResponse`` (anything with ``model_dump()``) or a
            mapping ``{"choices": [{"message": {...}, "finish_reason": ...}], "usage": {...}}``.
        latency: seconds the request took, stored as is.
        usage: token counts to record instead of reading them from ``response``
            (the provider passes what the raw HTTP body said, cost included).
        raw: the provider's raw response body, where its own finish reason is read
            (Anthropic ``stop_reason``, Gemini ``finishReason``); None when there is none (a stream).
        unwrap: take a call with an empty name whose arguments are ``{name, arguments}`` as that inner
            call (``repaired: unwrapped``; an alias's ``unwrap_calls``).

    A response with no choice (``choices: []``) is an empty reply: content None, no calls, finish
    reason None (``reply_kind`` says ``empty``). Raises ProviderError when a choice has no message.
    """
    body = as_dict(response)
    choices = body.get("choices")
    recorded = parse_usage(body) if usage is _UNSET else usage
    if isinstance(choices, list) and not choices:
        return Completion(content=None, usage=recorded, latency=latency, native_finish_reason=_native(None, raw))
    if not isinstance(choices, list) or not isinstance(choices[0], Mapping):
        raise ProviderError(f"the model's response has no choices: {_preview(body)}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise ProviderError(f"the model's response has no message: {_preview(body)}")
    finish = choice.get("finish_reason")
    return Completion(
        content=_content(message.get("content")),
        tool_calls=parse_tool_calls(_raw_calls(message), unwrap),
        finish_reason=str(finish) if finish is not None else None,
        usage=recorded,
        latency=latency,
        native_finish_reason=_native(choice, raw),
    )


class ReplyKind(StrEnum):
    """What a reply is to the agent loop (``ModelRequest.outcome``): an answer or calls to run
    (``reply``), one cut off at the output limit (``truncated``), one the provider blocked
    (``filtered``), one with no text and no calls (``empty``), a call the provider could not
    parse (``malformed_call``, Gemini's ``MALFORMED_FUNCTION_CALL``...), or the first part of a
    long turn the provider paused, to be continued (``paused``, Anthropic's ``pause_turn``)."""

    REPLY = "reply"
    PAUSED = "paused"
    TRUNCATED = "truncated"
    MALFORMED_CALL = "malformed_call"
    FILTERED = "filtered"
    EMPTY = "empty"


# Gemini's finish reasons for a call it could not take; litellm maps them all to "stop".
MALFORMED_REASONS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS",
                               "MALFORMED_RESPONSE"})
_TRUNCATED_REASONS = frozenset({"MAX_TOKENS", "max_tokens", "length"})
PAUSE_TURN = "pause_turn"  # Anthropic's stop reason of a turn it paused (litellm reports finish reason "length")


def reply_kind(completion: Completion) -> ReplyKind:
    """The kind of ``completion``, first match: ``paused`` (native ``pause_turn``), ``truncated``
    (finish reason ``length``, or a native ``MAX_TOKENS`` / ``max_tokens``, which litellm reports as
    ``tool_calls`` beside a call),
    ``malformed_call`` (a native reason in MALFORMED_REASONS, with no call), ``filtered``
    (``content_filter``), ``empty`` (no text, no call), else ``reply``."""
    if completion.native_finish_reason == PAUSE_TURN:
        return ReplyKind.PAUSED
    if completion.finish_reason == "length" or completion.native_finish_reason in _TRUNCATED_REASONS:
        return ReplyKind.TRUNCATED
    if completion.native_finish_reason in MALFORMED_REASONS and not completion.tool_calls:
        return ReplyKind.MALFORMED_CALL
    if completion.finish_reason == "content_filter":
        return ReplyKind.FILTERED
    if not (completion.content or "").strip() and not completion.tool_calls:
        return ReplyKind.EMPTY
    return ReplyKind.REPLY


def _native(choice: Mapping[str, Any] | None, raw: Mapping[str, Any] | None) -> str | None:
    """The provider's own finish reason: litellm's ``provider_specific_fields.native_finish_reason``
    (Gemini), else the raw body's Anthropic ``stop_reason``, Gemini ``candidates[0].finishReason`` or
    OpenAI ``choices[0].finish_reason``, else the Anthropic ``stop_reason`` litellm keeps in the message's
    ``provider_specific_fields`` (``pause_turn`` and ``refusal``, streamed too); None when none says."""
    fields = choice.get("provider_specific_fields") if choice is not None else None
    if isinstance(fields, Mapping) and isinstance(fields.get("native_finish_reason"), str):
        return str(fields["native_finish_reason"])
    if isinstance(raw, Mapping):
        if isinstance(raw.get("stop_reason"), str):
            return str(raw["stop_reason"])
        for key, field in (("candidates", "finishReason"), ("choices", "finish_reason")):
            first = raw.get(key)
            if isinstance(first, list) and first and isinstance(first[0], Mapping) and isinstance(first[0].get(field), str):
                return str(first[0][field])
    message = choice.get("message") if choice is not None else None
    kept = message.get("provider_specific_fields") if isinstance(message, Mapping) else None
    return str(kept["stop_reason"]) if isinstance(kept, Mapping) and isinstance(kept.get("stop_reason"), str) else None


def as_dict(response: Any) -> dict[str, Any]:
    """``response`` as plain dicts: pydantic models via ``model_dump()``, mappings copied."""
    if hasattr(response, "model_dump"):
        response = response.model_dump()
    if not isinstance(response, Mapping):
        raise ProviderError(f"the model's response is not a JSON object: {_preview(response)}")
    return dict(response)


def _content(content: Any) -> str | None:
    """Text content; a list of parts (``[{"type": "text", "text": ...}]``) is joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, Mapping) else p for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


def _raw_calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        return distinct_calls(calls)
    legacy = message.get("function_call")  # the pre-tools single-call shape
    return [{"function": legacy}] if isinstance(legacy, Mapping) else []


def distinct_calls(raw_calls: list[Any]) -> list[Any]:
    """``raw_calls`` without the exact repeats of an earlier one in the same reply (the same id, name and
    arguments as sent): a provider that sends one call twice asked for it once, so it runs once."""
    seen: set[str] = set()
    kept = []
    for raw in raw_calls:
        if isinstance(raw, Mapping) and isinstance(raw.get("id"), str) and raw["id"]:
            function = raw.get("function")
            key = json.dumps([raw["id"], function], sort_keys=True, default=str)
            if key in seen:
                continue
            seen.add(key)
        kept.append(raw)
    return kept


def parse_tool_calls(raw_calls: Iterable[Any], unwrap: bool = False) -> tuple[ToolCall, ...]:
    """Tool calls in order, each with a unique id and parsed arguments.

    An id that is missing, empty or already used gets a fresh ``call_<n>``.
    Arguments: an object is used as is; a string is parsed as JSON; empty means
    ``{}``. Anything else gives ``arguments=None`` and ``error`` (``invalid JSON
    arguments: ...``), which the agent loop answers with an error result.
    """
    raw_calls = list(raw_calls)
    calls: list[ToolCall] = []
    given = [c.get("id") if isinstance(c, Mapping) else None for c in raw_calls]
    taken: set[str] = set()
    counter = 0
    for raw, call_id in zip(raw_calls, given, strict=True):
        function = raw.get("function") if isinstance(raw, Mapping) else None
        function = function if isinstance(function, Mapping) else {}
        if not isinstance(call_id, str) or not call_id or call_id in taken:
            counter += 1
            while f"call_{counter}" in taken or f"call_{counter}" in given:
                counter += 1
            call_id = f"call_{counter}"
        taken.add(call_id)
        arguments, error, text, repaired = parse_arguments(function.get("arguments"))
        name = function.get("name")
        inner = _wrapped(name, arguments) if unwrap else None
        if inner is not None:
            name, (arguments, error, _, _), repaired = inner[0], parse_arguments(inner[1]), "unwrapped"
        calls.append(ToolCall(id=call_id, name=name if isinstance(name, str) else "", arguments=arguments,
                              error=error, raw_arguments=text, repaired=repaired))
    return tuple(calls)


def _wrapped(name: Any, arguments: dict[str, Any] | None) -> tuple[str, Any] | None:
    """``(inner name, inner arguments)`` of a call with no name whose arguments are a whole call
    ``{"name": ..., "arguments": ...}``, else None."""
    if name or not isinstance(arguments, dict) or set(arguments) != {"name", "arguments"}:
        return None
    inner = arguments["name"]
    return (inner, arguments["arguments"]) if isinstance(inner, str) and inner else None


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str | None, str | None, str | None]:
    """``(arguments, error, raw_text, repaired)`` for one call's arguments as the provider sent them.

    ``raw_text`` is the string as sent (None when it came as an object). Two shapes are repaired, as
    the text says (``repaired``): ``"null"`` is ``{}`` (``null``), and a JSON string whose text is a
    JSON object is that object (``double_encoded``); anything else that is not an object is an error.
    """
    if raw is None:
        return {}, None, None, None
    if isinstance(raw, Mapping):
        return dict(raw), None, None, None
    if not isinstance(raw, str):
        return None, f"invalid JSON arguments: expected a JSON object, got {type(raw).__name__}", None, None
    if not raw.strip():
        return {}, None, raw, None
    try:
        value = json.loads(raw)
    except ValueError as e:
        return None, f"invalid JSON arguments: {e}", raw, None
    if value is None:
        return {}, None, raw, "null"
    if isinstance(value, str):
        try:
            inner = json.loads(value)
        except ValueError:
            inner = None
        if isinstance(inner, dict):
            return inner, None, raw, "double_encoded"
    if not isinstance(value, dict):
        return None, f"invalid JSON arguments: expected a JSON object, got {type(value).__name__}", raw, None
    return value, None, raw, None


def parse_usage(body: Mapping[str, Any]) -> Usage | None:
    """Token counts from a raw response body, or None when it reports none.

    Understands the OpenAI ``usage`` block (``prompt_tokens``/``completion_tokens``/
    ``total_tokens``), Anthropic's (``input_tokens``/``output_tokens``), Gemini's
    ``usageMetadata`` and Ollama's top-level ``prompt_eval_count``/``eval_count``.
    A missing total is the sum of the two parts when both are known (``Usage`` adds
    them); nothing is estimated. ``cost`` is left None (the provider fills it from litellm's table).
    """
    usage = body.get("usage")
    if isinstance(usage, Mapping):
        prompt = _count(usage, "prompt_tokens", "input_tokens")
        completion = _count(usage, "completion_tokens", "output_tokens")
        total = _count(usage, "total_tokens")
    elif isinstance(body.get("usageMetadata"), Mapping):
        meta = body["usageMetadata"]
        prompt = _count(meta, "promptTokenCount")
        completion = _count(meta, "candidatesTokenCount")
        total = _count(meta, "totalTokenCount")
    else:
        prompt = _count(body, "prompt_eval_count")
        completion = _count(body, "eval_count")
        total = None
    if prompt is None and completion is None and total is None:
        return None
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _count(mapping: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _preview(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[:limit] + "..."
