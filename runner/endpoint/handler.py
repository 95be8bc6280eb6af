"""The HTTP side of the model endpoint (runner.endpoint.server): each request's line and headers are read
within HEAD_SECONDS of the connection or of the end of the connection's last request, its key is checked, then its
route, then its body's length, before a byte of its body is read; only then is the body read, whole and
within BODY_SECONDS, and handed to the run's Endpoint.

A POST whose body is not read (a wrong key: 401; a route not served: 404; a length missing: 411,
unreadable: 400, or over BODY_LIMIT: 413; a body not all sent within BODY_SECONDS: 408) is answered with ``Connection: close``; what the client
still sends of the body is then read and dropped for LINGER seconds at most, so closing the connection
does not reset it before the client has read the answer. Every answer has a JSON body, http.server's
own refusals (a request line or headers that do not read or are too long, a method not served) included.
A connection whose request line and headers do not all come within HEAD_SECONDS is closed: silently when no byte
of a request came (an idle keep-alive connection: its client connects again), else after a 408.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import sys
import time
from collections.abc import Iterable
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from runner.endpoint.timed import Stalled, TimedSocket

if TYPE_CHECKING:
    from runner.endpoint.server import Endpoint

BODY_LIMIT = 16 * 1024 * 1024  # bytes of one request body: a long conversation with a few images is a few MiB
BODY_SECONDS = 10.0  # seconds a request's whole body may take to arrive once its headers are read (loopback: ms)
HEAD_SECONDS = 10.0  # seconds a request line and headers may take, from the connection or the last request's end
LINGER = 2.0  # seconds at most that the unread body of a refused request is read and dropped
ROUTES = {"/v1/chat/completions": "chat", "/chat/completions": "chat", "/v1/messages": "messages"}


class Unread(Exception):
    """A request whose body is not read: ``status`` (400, 411, 413) and why (the message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def body_length(headers: Message) -> int:
    """The byte count of a request's body, from its Content-Length. Raises Unread: 411 for none, or a
    body sent with a Transfer-Encoding (chunks are not read); 400 for one that is not ASCII digits, or
    two that differ; 413 for one over BODY_LIMIT."""
    values = {value.strip(" \t") for value in headers.get_all("content-length") or ()}
    if headers.get("transfer-encoding") is not None:
        raise Unread(411, "a body sent with Transfer-Encoding is not read: send it with a Content-Length")
    if not values:
        raise Unread(411, "it has no Content-Length")
    if len(values) > 1:
        raise Unread(400, "it has Content-Length headers that differ")
    value = values.pop()
    if not (value.isascii() and value.isdigit()):
        raise Unread(400, f"its Content-Length {value[:40]!r} is not a number of bytes")
    digits = value.lstrip("0")
    if len(digits) > len(str(BODY_LIMIT)) or int(digits or "0") > BODY_LIMIT:
        raise Unread(413, f"its body is larger than the {BODY_LIMIT // 2**20} MiB the endpoint reads "
                          f"(Content-Length {value[:20]}{'...' if len(value) > 20 else ''})")
    return int(digits or "0")


class Server(ThreadingHTTPServer):
    """The endpoint's server; ``endpoint`` (set after it is made) answers its requests."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet for an agent that went away mid-answer (killed at its timeout): its connection is gone."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """HTTP for one Endpoint (``server.endpoint``)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: Nagle's wait would delay each reply

    def setup(self) -> None:
        """The connection's reads go through a TimedSocket, so HEAD_SECONDS and BODY_SECONDS bound them."""
        super().setup()
        self.rfile.close()  # the socket's own file: left open, it would keep the socket from closing
        self._timed = TimedSocket(self.connection)
        self.rfile = io.BufferedReader(self._timed)

    def handle_one_request(self) -> None:
        """One request, its line and headers read within HEAD_SECONDS; past that the connection is closed, after a
        408 when part of a request came (recorded as an Exchange when its line names a route and its key came)."""
        self._timed.bound(HEAD_SECONDS, keep=True)
        self.command, self.request_version, self.requestline = "", self.protocol_version, ""  # for a 408 before them
        try:
            super().handle_one_request()
        except Stalled as e:
            self.close_connection = True
            if e.came:
                self._head_stalled(e.came)

    def parse_request(self) -> bool:
        """http.server's reading of the request line and headers; whether they read (else it has answered)."""
        read = super().parse_request()
        self._timed.bound(None)  # the head is read: answering may take the provider's time
        return read

    def _head_stalled(self, came: int) -> None:
        endpoint: Endpoint = self.server.endpoint  # type: ignore[attr-defined]
        why = f"its request line and headers did not arrive within {HEAD_SECONDS:g} s ({came} bytes came)"
        api = self._head_api(endpoint)
        self._send(408, [endpoint.refuse_unread(api, 408, why) if api else _unreadable(408, why)], unread=True)

    def _head_api(self, endpoint: Endpoint) -> str | None:
        """The format of the route the stalled head's request line names, if its key is among the headers that came."""
        head = bytes(self._timed.kept)
        line, _, rest = head[:head.rfind(b"\n") + 1].partition(b"\n")
        words = line.split()
        api = ROUTES.get(words[1].split(b"?")[0].decode("latin-1")) if len(words) == 3 else None
        try:
            headers = http.client.parse_headers(io.BytesIO(rest + b"\r\n"))
        except http.client.HTTPException:  # over http.server's bounds: it would not have read them either
            return None
        return api if api is not None and endpoint.authorized(headers) else None

    def do_GET(self) -> None:
        endpoint: Endpoint = self.server.endpoint  # type: ignore[attr-defined]
        if not endpoint.authorized(self.headers):
            return self._refuse(endpoint)
        if self.path.split("?")[0] not in ("/v1/models", "/models"):
            return self._not_found(endpoint, "GET")
        model = {"id": endpoint.model, "object": "model", "type": "model", "created": 0, "owned_by": "tooltrial",
                 "display_name": endpoint.model, "created_at": "1970-01-01T00:00:00Z"}
        self._send(200, [json.dumps({"object": "list", "data": [model], "has_more": False}).encode()])

    def do_POST(self) -> None:
        endpoint: Endpoint = self.server.endpoint  # type: ignore[attr-defined]
        if not endpoint.authorized(self.headers):
            return self._refuse(endpoint, unread=True)
        api = ROUTES.get(self.path.split("?")[0])
        if api is None:
            return self._not_found(endpoint, "POST", unread=True)
        try:
            length = body_length(self.headers)
        except Unread as e:
            return self._send(e.status, [endpoint.refuse_unread(api, e.status, str(e))], unread=True)
        try:
            body = self._read_body(length)
        except Unread as e:
            return self._send(e.status, [endpoint.refuse_unread(api, e.status, str(e))], unread=True)
        status, chunks, stream = endpoint.answer(api, body)
        self._send(status, chunks, stream)

    def _read_body(self, length: int) -> bytes:
        """The ``length`` bytes of the body (fewer when the client closes first), read within BODY_SECONDS in all,
        so an agent that sends its headers and then stalls holds this thread no longer. Raises Unread (408)."""
        parts, left = [], length
        self._timed.bound(BODY_SECONDS)
        try:
            while left > 0:
                chunk = self.rfile.read1(min(left, 1 << 16))
                if not chunk:
                    break
                parts.append(chunk)
                left -= len(chunk)
        except Stalled:
            raise Unread(408, f"its body did not arrive within {BODY_SECONDS:g} s ({length - left} of "
                              f"{length} bytes came)") from None
        finally:
            self._timed.bound(None)
        return b"".join(parts)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals, before any route is known (a request line or headers that do not
        read, a method not served), with a JSON body like every other answer."""
        body = _unreadable(code, message or self.responses.get(code, ("error",))[0])
        self.send_response(code)
        self.send_header("Connection", "close")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _not_found(self, endpoint: Endpoint, method: str, unread: bool = False) -> None:
        endpoint.not_served(method, self.path)
        self._send(404, [(b'{"error": {"message": "not found: tooltrial serves POST /v1/chat/completions, POST '
                          b'/v1/messages and GET /v1/models", "type": "not_found"}}')], unread=unread)

    def _refuse(self, endpoint: Endpoint, unread: bool = False) -> None:
        endpoint.refuse()
        self._send(401, [(b'{"type": "error", "error": {"type": "authentication_error", "message": '
                          b'"invalid API key: use the key tooltrial gives in OPENAI_API_KEY / ANTHROPIC_API_KEY"}}')],
                   unread=unread)

    def _send(self, status: int, chunks: Iterable[bytes], stream: bool = False, unread: bool = False) -> None:
        """Answer ``status`` with ``chunks``: server-sent events for a ``stream``, else one JSON body; the
        connection closes after an answer to a request whose body was left ``unread``."""
        self.send_response(status)
        if stream:
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(chunk)
                self.wfile.flush()
            return
        data = b"".join(chunks)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if unread:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        if unread:
            self._drop_unread()

    def _drop_unread(self) -> None:
        """Shut the sending side (the answer is out), then read and drop what the client still sends, for
        LINGER seconds and BODY_LIMIT bytes at most: closing a connection with bytes unread resets it, and a
        client still sending its body would lose the answer."""
        end, left = time.monotonic() + LINGER, BODY_LIMIT
        try:
            self.connection.shutdown(socket.SHUT_WR)
            while left > 0 and (wait := end - time.monotonic()) > 0:
                self.connection.settimeout(wait)
                chunk = self.connection.recv(min(left, 1 << 16))
                if not chunk:
                    return
                left -= len(chunk)
        except OSError:  # the client went away, or LINGER passed
            return

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: every request is on the run's record instead."""


def _unreadable(code: int, text: str) -> bytes:
    """The JSON error body of a request refused before its route is known."""
    return json.dumps({"error": {"message": f"tooltrial's endpoint could not read the request: {text}",
                                 "type": "invalid_request_error", "code": code}}).encode()
