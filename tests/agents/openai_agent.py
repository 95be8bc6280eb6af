"""A small agent program for the tests, written as its users would: the official ``openai`` SDK, and
tools of its own (``read_file``, ``write_file``) that it runs itself in its working folder.

It reads its task from its last argument (or stdin when there is none), finds the model where
tooltrial says (OPENAI_BASE_URL, OPENAI_API_KEY, TOOLTRIAL_MODEL), loops until a reply has no tool
call, prints that reply and exits 0. ``AGENT_STREAM=1`` asks for streams, ``AGENT_STREAM=alternate``
for every other reply (the first as JSON), so one run reads both with the SDK. ``AGENT_LOG=FILE`` appends
each request's messages and tools to FILE as a JSON line, as it sends them.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

from openai import OpenAI

TOOLS = [
    {"type": "function", "function": {"name": "read_file", "description": "Read a text file.",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                     "required": ["path"]}}},
    {"type": "function", "function": {"name": "write_file", "description": "Write a text file.",
                                      "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                                                                                     "content": {"type": "string"}},
                                                     "required": ["path", "content"]}}},
]


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    path = Path(arguments.get("path", ""))
    if name == "read_file":
        return path.read_text() if path.is_file() else f"error: no file {path}"
    if name == "write_file":
        path.write_text(arguments.get("content", ""))
        return f"wrote {len(arguments.get('content', ''))} characters to {path}"
    return f"error: unknown tool {name}"


def ask(client: OpenAI, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """One model request; the assistant message as a dict, a stream's deltas joined."""
    model = os.environ["TOOLTRIAL_MODEL"]
    if os.environ.get("AGENT_LOG"):
        with open(os.environ["AGENT_LOG"], "a") as log:
            log.write(json.dumps({"messages": messages, "tools": TOOLS}) + "\n")
    if not stream:
        return client.chat.completions.create(model=model, messages=messages, tools=TOOLS).choices[0].message.model_dump(
            exclude_none=True)
    content, calls = "", {}
    for chunk in client.chat.completions.create(model=model, messages=messages, tools=TOOLS, stream=True,
                                                stream_options={"include_usage": True}):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for call in delta.tool_calls or ():
            slot = calls.setdefault(call.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            slot["id"] = call.id or slot["id"]
            if call.function is not None:
                slot["function"]["name"] += call.function.name or ""
                slot["function"]["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def main() -> int:
    task = sys.argv[-1] if len(sys.argv) > 1 else sys.stdin.read()
    client = OpenAI(max_retries=0)
    mode = os.environ.get("AGENT_STREAM", "0")
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You edit files with your tools."},
                                      {"role": "user", "content": task}]
    for number in itertools.count():
        message = ask(client, messages, mode == "1" or (mode == "alternate" and number % 2 == 1))
        messages.append(message)
        if not message.get("tool_calls"):
            break
        for call in message["tool_calls"]:
            result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"] or "{}"))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    print(message.get("content") or "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
