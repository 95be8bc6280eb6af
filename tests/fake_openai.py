"""A loopback OpenAI-compatible chat server, and a minimal client Provider for it, for judge tests.

``FakeOpenAI`` serves ``POST /v1/chat/completions`` on 127.0.0.1 (a free port)
from a daemon thread, answering each request with the next queued reply text
and recording every request body. ``OpenAIClient`` is the Provider protocol
over plain HTTP (urllib), so the judge is exercised through a real socket.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from runner.providers.base import Completion, ProviderError


class FakeOpenAI:
    """``with FakeOpenAI() as server: server.push('{"score": 1}'); ... server.url ...``"""

    def __init__(self) -> None:
        self.replies: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *contents: str) -> None:
        self.replies.extend(contents)

    def __enter__(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                content = server.replies.popleft() if server.replies else None
                status, payload = (200, _completion(content)) if content is not None else (500, {"error": "no reply queued"})
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class OpenAIClient:
    """The Provider protocol over ``POST {base}/v1/chat/completions``; any failure is a ProviderError."""

    name = "fake-judge"

    def __init__(self, base: str, timeout: float = 5.0) -> None:
        self.base, self.timeout = base, timeout

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        body = json.dumps({"model": "fake", "messages": messages}).encode()
        request = urllib.request.Request(f"{self.base}/v1/chat/completions", body, {"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())
        except (urllib.error.URLError, OSError) as e:
            raise ProviderError(f"cannot reach {self.base}: {e}") from e
        return Completion(content=data["choices"][0]["message"]["content"])


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
