"""Anthropic Messages on the wire (https://docs.anthropic.com/en/api/messages, .../messages-streaming): an
agent's request read into the chat shapes every provider takes, and a reply written back as a ``message``
object or as its stream of events (``message_start``, per block ``content_block_start`` / ``_delta`` /
``_stop``, ``message_delta``, ``message_stop``), with ``thinking``, ``text`` and ``tool_use`` blocks.

Written here rather than with litellm's adapters (litellm.llms.anthropic.experimental_pass_through):
those take and give litellm's own response types, and the scripted provider's runs must not import litellm.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from runner.endpoint.wire import WireError, WireRequest, body_object, text_of
from runner.providers.base import Completion

_STOPS = {"tool_calls": "tool_use", "length": "max_tokens", "stop": "end_turn", "content_filter": "refusal"}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 411: "invalid_request_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}


def read_messages(body: Any) -> WireRequest:
    """A ``POST /v1/messages`` body as a WireRequest: ``system`` first, each ``tool_result`` block a
    ``tool`` message (its ``is_error`` in ``failed_results``), ``tool_use`` blocks the assistant's
    ``tool_calls``, ``thinking`` blocks kept as ``thinking_blocks``; tools' ``input_schema`` as
    ``parameters``. Raises WireError for a body that is no Messages request."""
    body = body_object(body)
    messages: list[dict[str, Any]] = []
    system = text_of(body.get("system"))
    if system:
        messages.append({"role": "system", "content": system})
    failed: set[str] = set()
    for message in body["messages"]:
        role, content = message.get("role"), message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if role not in ("user", "assistant") or not isinstance(blocks, list):
            raise WireError("each message needs a role 'user' or 'assistant' and a string or list content")
        blocks = [b for b in blocks if isinstance(b, dict)]
        messages += _assistant(blocks) if role == "assistant" else _user(blocks, failed)
    tools = [{"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                                "parameters": t.get("input_schema") or {"type": "object"}}}
             for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
    system_sent = [{"role": "system", "content": body["system"]}] if body.get("system") else []
    return WireRequest("messages", messages, tools, bool(body.get("stream")), str(body.get("model", "")),
                       frozenset(failed), sent=system_sent + body["messages"], sent_tools=body.get("tools") or [])


def _user(blocks: list[dict[str, Any]], failed: set[str]) -> list[dict[str, Any]]:
    """A user message's blocks: each tool result a ``tool`` message, then its text as one user message."""
    found: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("type") == "tool_result":
            call_id = str(block.get("tool_use_id", ""))
            found.append({"role": "tool", "tool_call_id": call_id, "content": text_of(block.get("content"))})
            if block.get("is_error"):
                failed.add(call_id)
    text = text_of([b for b in blocks if b.get("type") == "text"])
    return found + ([{"role": "user", "content": text}] if text else [])


def _assistant(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    message: dict[str, Any] = {"role": "assistant"}
    text = text_of([b for b in blocks if b.get("type") == "text"])
    if text:
        message["content"] = text
    calls = [{"id": str(b.get("id", "")), "type": "function",
              "function": {"name": str(b.get("name", "")), "arguments": json.dumps(b.get("input") or {})}}
             for b in blocks if b.get("type") == "tool_use"]
    if calls:
        message["tool_calls"] = calls
    thinking = [dict(b) for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
    if thinking:
        message["thinking_blocks"] = thinking
    return [message]


def _blocks(completion: Completion) -> list[dict[str, Any]]:
    """The reply's content blocks: thinking (the provider's own blocks, signatures included, else its
    reasoning text unsigned), text, then one ``tool_use`` per call."""
    own = (completion.message or {}).get("thinking_blocks")
    blocks: list[dict[str, Any]] = [dict(b) for b in own] if isinstance(own, list) and own else (
        [{"type": "thinking", "thinking": completion.reasoning, "signature": ""}] if completion.reasoning else [])
    if completion.content:
        blocks.append({"type": "text", "text": completion.content})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}} for c in completion.tool_calls]
    return blocks


def _stop_reason(completion: Completion) -> str:
    return "tool_use" if completion.tool_calls else _STOPS.get(completion.finish_reason or "stop", "end_turn")


def _usage(completion: Completion) -> dict[str, int]:
    usage = completion.usage
    return {"input_tokens": (usage and usage.prompt_tokens) or 0, "output_tokens": (usage and usage.completion_tokens) or 0}


def messages_reply(completion: Completion, model: str, reply_id: str) -> dict[str, Any]:
    """The ``message`` object of ``completion`` (token counts the provider did not report as 0)."""
    return {"id": reply_id, "type": "message", "role": "assistant", "model": model, "content": _blocks(completion),
            "stop_reason": _stop_reason(completion), "stop_sequence": None, "usage": _usage(completion)}


def messages_stream(completion: Completion, model: str, reply_id: str) -> Iterator[bytes]:
    """``completion`` as the Messages stream's events, each block opened empty and filled by one delta
    (``thinking_delta`` then ``signature_delta``, ``text_delta``, ``input_json_delta``)."""
    usage = _usage(completion)
    start: dict[str, Any] = {"id": reply_id, "type": "message", "role": "assistant", "model": model, "content": [],
             "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 0}}
    yield _event("message_start", {"message": start})
    for index, block in enumerate(_blocks(completion)):
        kind = block["type"]
        empty: dict[str, dict[str, Any]] = {"tool_use": {"input": {}}, "text": {"text": ""},
                                            "thinking": {"thinking": "", "signature": ""}}
        opened = {**block, **empty.get(kind, {})}
        yield _event("content_block_start", {"index": index, "content_block": opened})
        for delta in _deltas(block):
            yield _event("content_block_delta", {"index": index, "delta": delta})
        yield _event("content_block_stop", {"index": index})
    yield _event("message_delta", {"delta": {"stop_reason": _stop_reason(completion), "stop_sequence": None},
                                   "usage": {"output_tokens": usage["output_tokens"]}})
    yield _event("message_stop", {})


def _deltas(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = block["type"]
    if kind == "text":
        return [{"type": "text_delta", "text": block["text"]}]
    if kind == "tool_use":
        return [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
    if kind == "thinking":
        return [{"type": "thinking_delta", "thinking": block.get("thinking", "")},
                {"type": "signature_delta", "signature": block.get("signature", "")}]
    return []  # redacted_thinking: whole in its start event


def messages_error(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error body, ``{type: error, error: {type, message}}``, its type from the HTTP status."""
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _event(name: str, body: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: ".encode() + json.dumps({"type": name, **body}).encode() + b"\n\n"
