"""A small agent program with tools of its own, as tooltrial tests one (docs/agents.md).

It speaks OpenAI chat completions over plain HTTP (the standard library only, so any python3 runs
it), at the endpoint tooltrial gives it: OPENAI_BASE_URL, OPENAI_API_KEY and TOOLTRIAL_MODEL. Its
task is its last argument. It runs its tools itself, in its working folder (the case's workspace),
loops until a reply asks for no tool, prints that reply and exits 0.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path
from typing import Any

TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file of the project.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Write a text file of the project, replacing what it held.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                       "required": ["path", "content"]}}},
]


def run_tool(name: str, arguments: dict[str, Any]) -> str:
    """One tool call, run here; an error is a result the model reads, as with any tool."""
    path = Path(arguments.get("path", ""))
    if name == "read_file":
        return path.read_text(encoding="utf-8") if path.is_file() else f"error: no file {path}"
    if name == "write_file":
        path.write_text(arguments.get("content", ""), encoding="utf-8")
        return f"wrote {path}"
    return f"error: unknown tool {name}"


def complete(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One chat-completions request; the reply's message."""
    body = json.dumps({"model": os.environ["TOOLTRIAL_MODEL"], "messages": messages, "tools": TOOLS}).encode()
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, headers={
        "Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)["choices"][0]["message"]


def main() -> int:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You maintain this project's files. Use your tools; answer in one line."},
        {"role": "user", "content": sys.argv[-1]}]
    while True:
        message = complete(messages)
        messages.append(message)
        if not message.get("tool_calls"):
            print(message.get("content") or "")
            return 0
        for call in message["tool_calls"]:
            result = run_tool(call["function"]["name"], json.loads(call["function"]["arguments"] or "{}"))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})


if __name__ == "__main__":
    sys.exit(main())
