"""A loopback OpenAI-compatible chat server for the benchmark, and the smallest provider that calls it.

The server answers ``POST /v1/chat/completions`` after ``delay`` seconds, playing a
fixed agent of three requests: write ``out.txt``, read it back, reply ``done``
(chosen by how many tool results the conversation already holds). It runs in a
process of its own and keeps connections alive (HTTP/1.1), as a real provider's
server does: in tooltrial's process its request handling would compete for the
same interpreter lock it is measuring. HttpProvider is the least a provider can
do: one urllib POST per request, the reply turned into a Completion, so the
figure is tooltrial's own; ``run.py --litellm`` runs the same cases through
tooltrial's litellm provider against the same server.

    python benchmarks/fake_openai.py [DELAY_SECONDS [CALLS]]   # prints its URL, serves until killed
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from runner.providers.base import Completion, ToolCall, Usage

_PLAN = [
    ("write_file", {"path": "out.txt", "content": "hello\n"}),
    ("read_file", {"path": "out.txt"}),
]


def _reply(messages: list[dict[str, Any]], calls: int = len(_PLAN)) -> dict[str, Any]:
    """The chat-completion body for the conversation so far, ``calls`` tool calls of the plan before the reply."""
    step = sum(1 for m in messages if m.get("role") == "tool")
    if step < calls:
        name, arguments = _PLAN[step]
        call = {"id": f"call_{step}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": "done: out.txt says hello"}, "stop"
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    return {"object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage}


def serve(delay: float, calls: int = len(_PLAN)) -> None:
    """Serve on 127.0.0.1 (a free port) until killed; the first line printed is the base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so clients reuse their connections
        disable_nagle_algorithm = True  # headers and body go out in two writes: no 40 ms delayed-ACK stall

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(delay)
            data = json.dumps(_reply(body["messages"], calls)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # the model list, which `tooltrial doctor` asks for
            data = json.dumps({"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]}).encode()
            self.send_response(200 if self.path.rstrip("/").endswith("/models") else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    print(f"http://{host}:{port}/v1", flush=True)
    server.serve_forever()


class FakeOpenAI:
    """The server in a child process; use it as a context manager, ``url`` once entered."""

    def __init__(self, delay: float = 0.1, calls: int = len(_PLAN)) -> None:
        self.delay, self.calls = delay, calls
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> Self:
        command = [sys.executable, str(Path(__file__)), str(self.delay), str(self.calls)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.url = (self._process.stdout.readline() if self._process.stdout else "").strip()
        if not self.url:
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._process:
            self._process.kill()
            self._process.wait()


class HttpProvider:
    """A provider that POSTs each request to an OpenAI-compatible ``url`` (``.../v1``) with urllib."""

    name = "fake-openai"

    def __init__(self, url: str) -> None:
        self.url = url

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        started = time.monotonic()
        body = json.dumps({"model": "fake", "messages": messages, "tools": tools}).encode()
        request = urllib.request.Request(f"{self.url}/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            data = json.load(response)
        choice = data["choices"][0]
        calls = tuple(
            ToolCall(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in choice["message"].get("tool_calls") or ()
        )
        usage = Usage(**data["usage"])
        return Completion(choice["message"].get("content"), calls, choice["finish_reason"], usage,
                          time.monotonic() - started)


if __name__ == "__main__":
    serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1, int(sys.argv[2]) if len(sys.argv) > 2 else len(_PLAN))
