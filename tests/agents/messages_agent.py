"""An agent program shaped like one built on the Anthropic SDK, for the tests: raw HTTP (standard
library) to ``$ANTHROPIC_BASE_URL/v1/messages`` with ``x-api-key`` and ``anthropic-version`` headers,
the Messages JSON or (``AGENT_STREAM=1``) its server-sent events, ``tool_use`` blocks answered with
``tool_result`` blocks (``is_error`` for a failed tool) from tools of its own.

Its task is its stdin. ``AGENT_QUIT_ON_CALL=1``: exit 0 at the first tool call, its result never
sent; ``AGENT_SLEEP=S``: sleep S seconds first, writing its process id to ``agent.pid``; ``AGENT_KEY``:
the key to send instead of the one it was given.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

TOOLS = [
    {"name": "read_file", "description": "Read a text file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
    {"name": "write_file", "description": "Write a text file.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                      "required": ["path", "content"]}},
]


def run_tool(name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    path = Path(arguments.get("path", ""))
    if name == "read_file":
        return (path.read_text(), False) if path.is_file() else (f"no file {path}", True)
    path.write_text(arguments.get("content", ""))
    return f"wrote {path}", False


def post(body: dict[str, Any]) -> tuple[int, Any]:
    """One request; the status and the message (JSON), or the blocks assembled from the stream's events."""
    base = urlparse(os.environ["ANTHROPIC_BASE_URL"])
    connection = http.client.HTTPConnection(base.hostname, base.port, timeout=60)
    key = os.environ.get("AGENT_KEY", os.environ["ANTHROPIC_API_KEY"])
    connection.request("POST", "/v1/messages", json.dumps(body), {
        "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json"})
    response = connection.getresponse()
    if response.status != 200 or not body.get("stream"):
        return response.status, json.loads(response.read())
    blocks: list[dict[str, Any]] = []
    for line in response.read().decode().splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[6:])
        if event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"], partial=""))
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            for key, field in (("text_delta", "text"), ("thinking_delta", "thinking"), ("signature_delta", "signature")):
                if delta["type"] == key:
                    block[field] = block.get(field, "") + delta[field]
            if delta["type"] == "input_json_delta":
                block["partial"] += delta["partial_json"]
    for block in blocks:
        partial = block.pop("partial")
        if block["type"] == "tool_use":
            block["input"] = json.loads(partial or "{}")
    return 200, {"content": blocks}


def main() -> int:
    if os.environ.get("AGENT_SLEEP"):
        Path("agent.pid").write_text(str(os.getpid()))
        time.sleep(float(os.environ["AGENT_SLEEP"]))
    messages: list[dict[str, Any]] = [{"role": "user", "content": sys.stdin.read()}]
    stream = os.environ.get("AGENT_STREAM") == "1"
    while True:
        status, reply = post({"model": os.environ["TOOLTRIAL_MODEL"], "max_tokens": 1024, "system": "Be brief.",
                              "messages": messages, "tools": TOOLS, "stream": stream})
        if status != 200:
            print(f"model error {status}: {reply['error']['message']}", file=sys.stderr)
            return 2
        messages.append({"role": "assistant", "content": reply["content"]})
        calls = [b for b in reply["content"] if b["type"] == "tool_use"]
        if not calls:
            print("".join(b.get("text", "") for b in reply["content"] if b["type"] == "text"))
            return 0
        if os.environ.get("AGENT_QUIT_ON_CALL") == "1":
            return 0
        results = []
        for call in calls:
            text, failed = run_tool(call["name"], call["input"])
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": text, "is_error": failed})
        messages.append({"role": "user", "content": results})


if __name__ == "__main__":
    sys.exit(main())
