"""OpenAI chat completions on the wire (https://platform.openai.com/docs/api-reference/chat): an agent's
request read, and a reply (runner.providers.base.Completion) written back as JSON or as a stream of
``chat.completion.chunk`` server-sent events ending ``data: [DONE]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from runner.endpoint.wire import WireRequest, body_object
from runner.providers.base import Completion, ToolCall, Usage


def read_chat(body: Any) -> WireRequest:
    """A ``POST /v1/chat/completions`` body as a WireRequest: messages and tools as the agent sent them.
    Raises runner.endpoint.wire.WireError for a body that is no chat request."""
    body = body_object(body)
    options = body.get("stream_options")
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    messages, tools = [dict(m) for m in body["messages"]], [dict(t) for t in body.get("tools") or []]
    return WireRequest("chat", messages, tools, bool(body.get("stream")), str(body.get("model", "")),
                       include_usage=usage, sent=body["messages"], sent_tools=body.get("tools") or [])


def arguments_text(call: ToolCall) -> str:
    """A call's arguments as the model sent them: the raw text where there was one, else its JSON."""
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments or {})


def chat_reply(completion: Completion, model: str, reply_id: str) -> dict[str, Any]:
    """The ``chat.completion`` object of ``completion``: one choice; ``usage`` only where the provider
    reported it, ``reasoning_content`` only where the reply had reasoning."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.content or None}
    if completion.reasoning:
        message["reasoning_content"] = completion.reasoning
    if completion.tool_calls:
        message["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": arguments_text(c)}}
                                 for c in completion.tool_calls]
    reply = {"id": reply_id, "object": "chat.completion", "created": int(time.time()), "model": model,
             "choices": [{"index": 0, "message": message, "finish_reason": completion.finish_reason or "stop"}]}
    if completion.usage is not None:
        reply["usage"] = usage_of(completion.usage)
    return reply


def usage_of(usage: Usage) -> dict[str, int]:
    """The chat ``usage`` object: the counts the provider reported (an unreported one as 0)."""
    prompt, completion = usage.prompt_tokens or 0, usage.completion_tokens or 0
    total = usage.total_tokens if usage.total_tokens is not None else prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def chat_stream(completion: Completion, model: str, reply_id: str, include_usage: bool) -> Iterator[bytes]:
    """``completion`` as server-sent events: the role, reasoning and text deltas, then each tool call
    (its ``index``, ``id`` and name, then its arguments in two deltas), the finish reason, the usage
    chunk when asked for (``stream_options.include_usage``), and ``data: [DONE]``."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {"id": reply_id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return _event(body)

    yield chunk({"role": "assistant", "content": ""})
    if completion.reasoning:
        yield chunk({"reasoning_content": completion.reasoning})
    for part in _halves(completion.content or ""):
        yield chunk({"content": part})
    for index, call in enumerate(completion.tool_calls):
        yield chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                     "function": {"name": call.name, "arguments": ""}}]})
        for part in _halves(arguments_text(call)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
    yield chunk({}, completion.finish_reason or "stop")
    if include_usage and completion.usage is not None:
        yield _event({"id": reply_id, "object": "chat.completion.chunk", "created": created, "model": model,
                      "choices": [], "usage": usage_of(completion.usage)})
    yield b"data: [DONE]\n\n"


def chat_error(status: int, kind: str, message: str) -> dict[str, Any]:
    """OpenAI's error body: ``{error: {message, type, code}}``; ``kind`` is tooltrial's error kind."""
    return {"error": {"message": message, "type": kind, "code": status}}


def _halves(text: str) -> list[str]:
    """``text`` in two non-empty pieces (one when it is a single character, none when empty), so a
    client's joining of deltas is exercised."""
    cut = len(text) // 2
    return [part for part in (text[:cut], text[cut:]) if part]


def _event(body: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(body).encode() + b"\n\n"
