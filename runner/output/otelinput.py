"""What a model request carried, as the OpenTelemetry GenAI conventions' content attributes of its ``chat`` span
(runner.output.otel): ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.tool.definitions``.

The shapes are the conventions' JSON schemas (semantic conventions 1.41,
https://github.com/open-telemetry/semantic-conventions/blob/v1.41.0/docs/gen-ai/gen-ai-input-messages.json,
``gen-ai-system-instructions.json``, ``gen-ai-tool-definitions.json``): a message is ``{role, parts}``, a part
``text`` (``content``), ``reasoning`` (``content``), ``tool_call`` (``id``, ``name``, ``arguments``),
``tool_call_response`` (``id``, ``response``), ``uri`` or ``blob`` (an image); any other part goes as sent, the
schemas' generic part. The record keeps the messages as sent: OpenAI chat for the built-in loop, and for an
external agent OpenAI chat or Anthropic Messages blocks (``tool_use``, ``tool_result``, ``thinking``), both read
here. Texts the record keeps cut (runner.run.transcript) stay cut. Pure: no I/O, no OpenTelemetry import.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

Part = dict[str, Any]


def request_content(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The content attributes of a request that carried ``messages`` and offered ``tools`` (both as the record keeps
    them), each a JSON string: ``gen_ai.system_instructions`` (the parts of the system messages the request
    begins with; absent when they hold none), ``gen_ai.input.messages`` (the messages after them) and
    ``gen_ai.tool.definitions`` (absent when no tool was offered)."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    attributes = {"gen_ai.input.messages": json.dumps([input_message(m) for m in messages[lead:]])}
    instructions = [p for m in messages[:lead] for p in _parts(m.get("content"))]
    if instructions:
        attributes["gen_ai.system_instructions"] = json.dumps(instructions)
    if tools:
        attributes["gen_ai.tool.definitions"] = json.dumps([tool_definition(t) for t in tools])
    return attributes


def input_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One message as sent, OpenAI chat or Anthropic Messages, as ``{role, parts}`` (and ``name`` where it has one):
    its reasoning first, then its content's parts, then its tool calls; a ``tool`` message is one
    ``tool_call_response`` part holding its content."""
    role = str(message.get("role") or "user")
    if role == "tool":
        parts: list[Part] = [{"type": "tool_call_response", "id": message.get("tool_call_id"),
                              "response": message.get("content")}]
    else:
        reasoning = _reasoning(message) if role == "assistant" else None
        parts = [{"type": "reasoning", "content": reasoning}] if reasoning else []
        parts += _parts(message.get("content"))
        parts += [_tool_call(c) for c in message.get("tool_calls") or () if isinstance(c, Mapping)]
    named = {"name": message["name"]} if isinstance(message.get("name"), str) and role != "tool" else {}
    return {"role": role, "parts": parts, **named}


def tool_definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool as offered, OpenAI's ``{type: function, function: {...}}`` or Anthropic's ``{name, input_schema}``,
    as the conventions' function tool definition ``{type, name, description, parameters}``; any other kind (a
    provider's own tool) as sent."""
    function = tool.get("function")
    if tool.get("type") == "function" and isinstance(function, Mapping):
        return _function(function.get("name"), function.get("description"), function.get("parameters"))
    if "input_schema" in tool:
        return _function(tool.get("name"), tool.get("description"), tool.get("input_schema"))
    return dict(tool)


def _function(name: Any, description: Any, parameters: Any) -> dict[str, Any]:
    shown = {"description": description, "parameters": parameters}
    return {"type": "function", "name": name, **{k: v for k, v in shown.items() if v is not None}}


def _reasoning(message: Mapping[str, Any]) -> str | None:
    """An assistant message's reasoning as the loop keeps it (litellm's): ``reasoning_content``, else its
    ``thinking_blocks``' text joined; None for none."""
    text = message.get("reasoning_content")
    if not text:
        blocks = message.get("thinking_blocks")
        text = "".join(str(b.get("thinking") or "") for b in blocks if isinstance(b, Mapping)) if isinstance(blocks, list) else ""
    return text if isinstance(text, str) and text else None


def _parts(content: Any) -> list[Part]:
    """A message's ``content``: a string is one text part (none when empty), a list its blocks each as a part."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}] if content else []
    if isinstance(content, list):
        return [_part(block) for block in content if isinstance(block, Mapping)]
    return []


def _part(block: Mapping[str, Any]) -> Part:
    """One content block, OpenAI chat's or Anthropic's, as a part."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text")}
    if kind in ("thinking", "reasoning"):
        return {"type": "reasoning", "content": block.get("thinking") or block.get("text") or ""}
    if kind == "tool_use":
        return {"type": "tool_call", "id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
    if kind == "tool_result":
        return {"type": "tool_call_response", "id": block.get("tool_use_id"), "response": block.get("content")}
    image, source = block.get("image_url"), block.get("source")
    if kind == "image_url" and isinstance(image, Mapping):
        return _image(str(image.get("url") or ""))
    if kind == "image" and isinstance(source, Mapping) and source.get("type") == "base64":
        return {"type": "blob", "modality": "image", "mime_type": source.get("media_type"), "content": source.get("data")}
    if kind == "image" and isinstance(source, Mapping) and source.get("type") == "url":
        return {"type": "uri", "modality": "image", "uri": source.get("url")}
    return dict(block)


def _image(url: str) -> Part:
    """An OpenAI ``image_url``: a ``data:`` URL is a blob of its base64 data, any other a uri part."""
    head, comma, data = url.partition(",")
    if url.startswith("data:") and comma and head.endswith(";base64"):
        return {"type": "blob", "modality": "image", "mime_type": head[5:].removesuffix(";base64") or None, "content": data}
    return {"type": "uri", "modality": "image", "uri": url}


def _tool_call(call: Mapping[str, Any]) -> Part:
    """An OpenAI tool call as a ``tool_call`` part, its arguments as the object they encode (the conventions ask
    for an object), else the text as sent."""
    function = call.get("function")
    function = function if isinstance(function, Mapping) else {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass  # not JSON: the text as the model sent it
    return {"type": "tool_call", "id": call.get("id"), "name": function.get("name"), "arguments": arguments}
