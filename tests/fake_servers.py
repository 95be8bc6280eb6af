"""Loopback model servers for tests: OpenAI ``/v1/chat/completions`` and Ollama ``/api/chat``.

Each server is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1 (a free port) in a
daemon thread. A test queues the replies it wants, in order; each POST to the
server's route takes the next one (or ``fallback`` once the queue is empty,
else a 500 saying the queue ran dry). Every request received is recorded with
its path, headers and JSON body so tests can assert on what tooltrial sent.
A ``responder`` (request -> Reply) can answer instead once the queue is empty.

    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("bash", {"command": "ls"})]), openai_reply("done"))
        ... model="openai/fake", api_base=server.api_base ...
        assert server.requests[1].body["messages"][-1]["role"] == "tool"
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

Call = tuple[str, Any]  # (tool name, arguments as a dict or a raw JSON string)


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # the default 5 refuses connections when a suite at -j 16 sends at once


@dataclass(frozen=True)
class Reply:
    """One queued HTTP response. ``body`` is JSON-encoded unless it is a str; ``delay`` is seconds before answering.

    The body is sent as ``content_type``. With ``chunks`` (already framed text: SSE events, NDJSON lines)
    the body is those, sent one by one with ``Transfer-Encoding: chunked``, the way a streaming server
    sends them, ``pause`` seconds apart.
    """

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    chunks: tuple[str, ...] | None = None
    content_type: str = "application/json"
    pause: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request the server got: path, lower-cased headers, parsed JSON body (None if not JSON)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Base of both fakes: a queue of replies served on ``route``; see the module docstring."""

    route = "/"
    static: ClassVar[dict[str, Reply]] = {}  # other routes answered the same way every time (model-info probes)

    def __init__(self, fallback: Reply | None = None, responder: Callable[[Received], Reply] | None = None) -> None:
        self.replies: deque[Reply] = deque()
        self.fallback = fallback
        self.responder = responder
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_base(self) -> str:
        """What to pass as litellm's ``api_base`` for this server."""
        return self.base_url

    @property
    def chats(self) -> list[Received]:
        """The requests made to the chat route (not e.g. model-info probes)."""
        return [r for r in self.requests if self.is_chat(r.path)]

    def is_chat(self, path: str) -> bool:
        """Whether a request to ``path`` (query included) is a chat request."""
        return path == self.route

    def push(self, *replies: Reply) -> FakeServer:
        self.replies.extend(replies)
        return self

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if not self.is_chat(received.path):
                return self.static.get(received.path) or Reply({"error": f"no route {received.path}"}, status=404)
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(received)
        return self.fallback or Reply({"error": {"message": "fake server: reply queue is empty"}}, status=500)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._next(Received(self.command, self.path, headers, body))
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.chunks is not None:
                    return self._stream(reply)
                data = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def _stream(self, reply: Reply) -> None:
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Transfer-Encoding", "chunked")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    for index, chunk in enumerate(reply.chunks or ()):
                        if index and reply.pause:
                            time.sleep(reply.pause)
                        data = chunk.encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_POST = do_GET = _serve

        return Handler


class OpenAIServer(FakeServer):
    """Speaks the OpenAI chat-completions API; use model ``openai/<any>`` with ``api_base``."""

    route = "/v1/chat/completions"

    @property
    def api_base(self) -> str:
        return f"{self.base_url}/v1"


class OllamaServer(FakeServer):
    """Speaks Ollama's ``/api/chat`` (non-streaming); use model ``ollama_chat/<any>`` with ``api_base``."""

    route = "/api/chat"
    static: ClassVar[dict[str, Reply]] = {"/api/show": Reply({"template": "{{ .Tools }}", "capabilities": ["completion", "tools"],
                                  "model_info": {"general.context_length": 8192}})}


def openai_reply(
    content: str | None = None,
    tool_calls: Sequence[Call] = (),
    usage: tuple[int, int] | None = (10, 5),
    finish_reason: str | None = None,
    ids: Sequence[str | None] | None = None,
    model: str = "fake",
) -> Reply:
    """A 200 chat.completion body. ``usage`` is (prompt, completion) tokens, None to omit the block;
    ``ids`` overrides the tool-call ids (None leaves one out); arguments that are not a str are JSON-encoded."""
    calls = []
    for i, (name, arguments) in enumerate(tool_calls):
        call: dict[str, Any] = {"type": "function", "function": {
            "name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}}
        call_id = ids[i] if ids is not None else f"call_{i}"
        if call_id is not None:
            call["id"] = call_id
        calls.append(call)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}],
    }
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply(body)


def ollama_reply(
    content: str = "",
    tool_calls: Sequence[Call] = (),
    usage: tuple[int, int] | None = (10, 5),
    done_reason: str = "stop",
    model: str = "fake",
) -> Reply:
    """A 200 non-streaming ``/api/chat`` body; tool arguments go as objects, as Ollama sends them."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [{"function": {"name": n, "arguments": a}} for n, a in tool_calls]
    body: dict[str, Any] = {
        "model": model, "created_at": "2024-01-01T00:00:00Z", "message": message,
        "done": True, "done_reason": done_reason,
    }
    if usage is not None:
        body.update(prompt_eval_count=usage[0], eval_count=usage[1])
    return Reply(body)


def error_reply(status: int, message: str = "fake failure", headers: dict[str, str] | None = None,
                delay: float = 0.0) -> Reply:
    """An error response with an OpenAI-style error body."""
    body = {"error": {"message": message, "type": "server_error", "code": status}}
    return Reply(body, status=status, headers=headers or {}, delay=delay)


def script_replies(script: Sequence[Any], ollama: bool = False, usage: tuple[int, int] | None = (10, 5)) -> list[Reply]:
    """A case's ``script:`` items as server replies (OpenAI shape, or Ollama's with ``ollama``)."""
    make = ollama_reply if ollama else openai_reply
    return [make(item.get("content") or "", [(c["name"], c.get("arguments") or {}) for c in item.get("tool_calls") or ()],
                 usage=usage) for item in script]


class ScriptResponder:
    """Answers each chat request from the script of the case it belongs to, so a whole suite runs over HTTP.

    The case is the one whose first turn is the conversation's first user message
    (the closest match when none is equal: a turn may be a template); the reply is
    script item number "assistant messages so far".
    """

    def __init__(self, cases: Sequence[Any], ollama: bool = False) -> None:
        self.by_turn = {case.turns[0]: script_replies(case.script or (), ollama) for case in cases}
        self.ollama = ollama

    def __call__(self, received: Received) -> Reply:
        import difflib

        messages = (received.body or {}).get("messages", [])
        first = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
        turn = first if first in self.by_turn else max(  # difflib costs ~30 ms a request over a suite
            self.by_turn, key=lambda t: difflib.SequenceMatcher(None, t, first).ratio())
        index = sum(m.get("role") == "assistant" for m in messages)
        replies = self.by_turn[turn]
        return replies[index] if index < len(replies) else error_reply(400, "script exhausted")
