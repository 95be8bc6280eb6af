"""More wire shapes for the loopback fakes: Anthropic Messages and native Gemini servers, streamed bodies.

Each ``*_reply`` builds a JSON reply in that provider's own shape, and each ``*_stream``
turns such a reply into the stream that provider would send for the same content:
OpenAI and Anthropic as server-sent events, Gemini as SSE of partial
``GenerateContentResponse`` objects, Ollama as NDJSON. Streams split text and
argument strings in two, so the client has fragments to join. Shapes:
https://platform.openai.com/docs/api-reference/chat-streaming,
https://docs.anthropic.com/en/api/messages-streaming,
https://ai.google.dev/api/generate-content, https://github.com/ollama/ollama/blob/main/docs/api.md.

    with AnthropicServer() as server:
        server.push(anthropic_stream(anthropic_reply([text("Hi.")])))
        ... model="anthropic/claude-sonnet-4-5", api_base=server.api_base ...
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tests.fake_servers import FakeServer, Reply

ANTHROPIC_MODEL = "claude-sonnet-4-5-20250929"
GEMINI_MODEL = "gemini-2.5-flash"


class AnthropicServer(FakeServer):
    """Speaks Anthropic's Messages API; use model ``anthropic/<model>`` with ``api_base``."""

    route = "/v1/messages"


class GeminiServer(FakeServer):
    """Speaks Gemini's ``generateContent`` and ``streamGenerateContent``; use ``gemini/<model>`` with ``api_base``."""

    def is_chat(self, path: str) -> bool:
        return path.split("?")[0].endswith((":generateContent", ":streamGenerateContent"))


def sse(events: Sequence[Any]) -> Reply:
    """A server-sent-events reply: each event a JSON object (``data:`` only), a ``(name, object)`` pair
    (``event:`` and ``data:``), or a str sent as the data as is (``[DONE]``)."""
    framed = []
    for event in events:
        name, data = event if isinstance(event, tuple) else (None, event)
        text = data if isinstance(data, str) else json.dumps(data)
        framed.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return Reply(chunks=tuple(framed), content_type="text/event-stream")


def ndjson(lines: Sequence[Any]) -> Reply:
    """An NDJSON reply (Ollama's stream): one JSON object a line."""
    return Reply(chunks=tuple(json.dumps(line) + "\n" for line in lines), content_type="application/x-ndjson")


def _halves(text: str) -> list[str]:
    middle = len(text) // 2
    return [part for part in (text[:middle], text[middle:]) if part]


# OpenAI ---------------------------------------------------------------------------------------------

def openai_stream(reply: Reply) -> Reply:
    """The SSE stream of an ``openai_reply``: a role chunk, the text in two fragments, each call as an
    id+name delta with ``arguments: ""`` then its arguments in two fragments, the finish reason, a
    usage-only chunk (``choices: []``, when the reply has usage) and ``[DONE]``."""
    body = reply.body
    choice = body["choices"][0]
    message = choice["message"]
    head = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[Any] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": part}) for part in _halves(message.get("content") or "")]
    for index, call in enumerate(message.get("tool_calls") or ()):
        start = {"index": index, "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
        if "id" in call:
            start["id"] = call["id"]
        events.append(chunk({"tool_calls": [start]}))
        events += [chunk({"tool_calls": [{"index": index, "function": {"arguments": part}}]})
                   for part in _halves(call["function"]["arguments"])]
    events.append(chunk({}, choice["finish_reason"]))
    if "usage" in body:
        events.append({**head, "choices": [], "usage": body["usage"]})
    return sse([*events, "[DONE]"])


# Anthropic ------------------------------------------------------------------------------------------

def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def anthropic_reply(blocks: Sequence[dict[str, Any]], usage: dict[str, int] | None = None,
                    stop_reason: str | None = None) -> Reply:
    """A 200 Messages body with content ``blocks``; ``usage`` defaults to 20 in, 42 out."""
    return Reply({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": ANTHROPIC_MODEL, "content": list(blocks),
        "stop_reason": stop_reason or ("tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"),
        "stop_sequence": None, "usage": usage or {"input_tokens": 20, "output_tokens": 42},
    })


def anthropic_stream(reply: Reply) -> Reply:
    """The SSE stream of an ``anthropic_reply``: ``message_start`` (input usage), a ``ping``, each block as
    start / deltas (text and thinking in two fragments, the signature as a ``signature_delta``, tool input
    as ``input_json_delta`` fragments, ``partial_json: ""`` for no arguments) / stop, then ``message_delta``
    with the stop reason and output tokens, and ``message_stop``."""
    body = reply.body
    usage = body["usage"]
    start_usage = {k: v for k, v in usage.items() if k != "output_tokens"} | {"output_tokens": 1}
    events: list[Any] = [("message_start", {"type": "message_start", "message": {
        **{k: body[k] for k in ("id", "type", "role", "model")}, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": start_usage}}), ("ping", {"type": "ping"})]
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        empty = {"text": {"type": "text", "text": ""}, "thinking": {"type": "thinking", "thinking": "", "signature": ""},
                 "tool_use": {**block, "input": {}}}.get(kind, block)
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}))
        deltas: list[dict[str, Any]] = []
        if kind == "text":
            deltas = [{"type": "text_delta", "text": part} for part in _halves(block["text"])]
        elif kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": part} for part in _halves(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            arguments = json.dumps(block["input"]) if block["input"] else ""
            deltas = [{"type": "input_json_delta", "partial_json": part} for part in _halves(arguments) or [""]]
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": body["stop_reason"],
                                                                          "stop_sequence": None},
                                     "usage": {"output_tokens": usage["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return sse(events)


# Gemini ---------------------------------------------------------------------------------------------

def gemini_reply(parts: Sequence[dict[str, Any]], usage: dict[str, int] | None = None, finish: str = "STOP") -> Reply:
    """A 200 ``generateContent`` body with one candidate of ``parts``; ``usage`` is its ``usageMetadata``."""
    return Reply({
        "candidates": [{"index": 0, "content": {"role": "model", "parts": list(parts)}, "finishReason": finish}],
        "usageMetadata": usage or {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": GEMINI_MODEL, "responseId": "resp-fake",
    })


def gemini_stream(reply: Reply) -> Reply:
    """The SSE stream of a ``gemini_reply``: one event per part (the text parts in two), the last one
    with the finish reason and usage."""
    body = reply.body
    candidate = body["candidates"][0]
    pieces: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "text" in part:
            pieces += [{**part, "text": half} for half in _halves(part["text"])]
        else:
            pieces.append(part)
    events = [{"candidates": [{"index": 0, "content": {"role": "model", "parts": [piece]}}],
               "modelVersion": body["modelVersion"], "responseId": body["responseId"]} for piece in pieces]
    events[-1]["candidates"][0]["finishReason"] = candidate["finishReason"]
    events[-1]["usageMetadata"] = body["usageMetadata"]
    return sse(events)


# Ollama ---------------------------------------------------------------------------------------------

def ollama_stream(reply: Reply) -> Reply:
    """The NDJSON stream of an ``ollama_reply``: the text in two lines, each call in a line of its own
    (without an id, as Ollama sends them), then a ``done`` line with the reason and usage."""
    body = reply.body
    message = body["message"]

    def line(**fields: Any) -> dict[str, Any]:
        return {"model": body["model"], "created_at": body["created_at"],
                "message": {"role": "assistant", "content": "", **fields}, "done": False}

    lines = [line(content=part) for part in _halves(message.get("content") or "")]
    lines += [line(tool_calls=[call]) for call in message.get("tool_calls") or ()]
    last = {**line(), "done": True, "done_reason": body["done_reason"]}
    last.update({k: body[k] for k in ("prompt_eval_count", "eval_count") if k in body})
    return ndjson([*lines, last])
