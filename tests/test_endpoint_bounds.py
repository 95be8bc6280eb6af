"""Requests built to break the agents' endpoint, sent over a raw socket as a hostile agent would: a
Content-Length of digits that are not ASCII, JSON nested 100,000 deep, a body over the bound, one sent in
chunks, a request line http.server refuses. Each is answered with its status and a JSON error body, the
connection closed where the body was not read; nothing reaches tooltrial's stderr; and a request with the
run's key to a route the endpoint serves is on the run's record, with its reason. The key is checked
before a byte of the body is read, so a request without it is turned away whatever length it claims."""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from runner.endpoint import handler
from runner.endpoint.handler import BODY_LIMIT
from runner.endpoint.server import Endpoint
from runner.endpoint.wire import NESTING_LIMIT
from runner.providers.base import Completion
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.sandbox.command import Sandbox
from runner.spec.agentspec import AgentSpec
from tests.helpers import make_case

UNREADABLE = "tooltrial's endpoint could not read the request: "
TOO_DEEP = f"its JSON nests arrays and objects more than {NESTING_LIMIT} levels deep"
DEEP = {"array": b"[" * 100_000 + b"]" * 100_000, "object": b'{"a":' * 100_000 + b"1" + b"}" * 100_000}


class _Ok:
    """A provider that answers every request with ``ok``."""

    name = "ok"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None) -> Completion:
        return Completion("ok", ())


def _send(port: int, head: bytes, body: bytes = b"", timeout: float = 10) -> tuple[bytes, dict[str, str], bytes]:
    """Send ``head`` (request line and headers, no blank line) and ``body`` as they are, then read the answer:
    its status line, headers (lower-case names) and body (as long as its Content-Length says)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as raw:
        raw.sendall(head + b"\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = raw.recv(65536)
            assert chunk, f"the connection closed before an answer: {data!r}"
            data += chunk
        top, _, rest = data.partition(b"\r\n\r\n")
        status, *lines = top.decode("latin-1").split("\r\n")
        headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
        while len(rest) < int(headers["content-length"]):
            chunk = raw.recv(65536)
            assert chunk, "the connection closed mid-answer"
            rest += chunk
    return status.encode("latin-1"), headers, rest


def _post(endpoint: Endpoint, path: str, length: bytes | None, body: bytes = b"", key: str | None = None,
          extra: bytes = b"") -> tuple[bytes, dict[str, str], bytes]:
    head = (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: "
            + (key or endpoint.token).encode() + (b"\r\nContent-Length: " + length if length is not None else b"") + extra)
    return _send(endpoint.port, head, body)


def _recorded(endpoint: Endpoint) -> list[tuple[int, str, int, Any, Any, str | None]]:
    return [(e.turn, e.api, e.status, e.request, e.completion, e.error) for e in endpoint.exchanges]


@pytest.mark.parametrize(("length", "shown"), [(b"\xb2", "'\\u00b2'"), (b"\xb3", "'\\u00b3'"), (b"-1", "'-1'"),
                                             (b"1e3", "'1e3'"), (b"0x10", "'0x10'"), (b"12 34", "'12 34'")])
def test_a_content_length_that_is_not_ascii_digits_is_a_recorded_400(length: bytes, shown: str,
                                                                      capfd: pytest.CaptureFixture[str]) -> None:
    with Endpoint(_Ok()) as endpoint:
        status, headers, body = _post(endpoint, "/v1/messages", length, b"{}")
    assert (status, headers["connection"]) == (b"HTTP/1.1 400 Bad Request", "close")
    assert body == (b'{"type": "error", "error": {"type": "invalid_request_error", "message": "tooltrial\'s endpoint '
                    b'could not read the request: its Content-Length ' + shown.encode() + b' is not a number of bytes"}}')
    error = f"{UNREADABLE}its Content-Length {length.decode('latin-1')!r} is not a number of bytes"
    assert _recorded(endpoint) == [(0, "messages", 400, None, None, error)]
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("api", ["chat", "messages"])
@pytest.mark.parametrize("shape", ["array", "object"])
def test_json_nested_100000_deep_is_a_recorded_400(api: str, shape: str, capfd: pytest.CaptureFixture[str]) -> None:
    path = "/v1/chat/completions" if api == "chat" else "/v1/messages"
    with Endpoint(_Ok()) as endpoint:
        status, _, body = _post(endpoint, path, str(len(DEEP[shape])).encode(), DEEP[shape])
    error = UNREADABLE + TOO_DEEP
    assert status == b"HTTP/1.1 400 Bad Request"
    assert body == ((b'{"error": {"message": "tooltrial\'s endpoint could not read the request: its JSON nests arrays and '
                     b'objects more than 100 levels deep", "type": "tooltrial", "code": 400}}') if api == "chat" else
                    (b'{"type": "error", "error": {"type": "invalid_request_error", "message": "tooltrial\'s endpoint could '
                     b'not read the request: its JSON nests arrays and objects more than 100 levels deep"}}'))
    assert _recorded(endpoint) == [(0, api, 400, None, None, error)]
    assert capfd.readouterr() == ("", "")


def test_nesting_up_to_the_bound_is_read_and_brackets_in_text_do_not_count(capfd: pytest.CaptureFixture[str]) -> None:
    def nested(levels: int) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        for _ in range(levels):
            schema = {"items": schema}
        return {"messages": [{"role": "user", "content": "[{" * 50_000}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": schema}}]}

    at_bound = json.dumps(nested(NESTING_LIMIT - 5)).encode()  # body, tools, tool, function: 5 levels around it
    over = json.dumps(nested(NESTING_LIMIT - 4)).encode()
    with Endpoint(_Ok()) as endpoint:
        fine = _post(endpoint, "/v1/chat/completions", str(len(at_bound)).encode(), at_bound)
        refused = _post(endpoint, "/v1/chat/completions", str(len(over)).encode(), over)
    assert (fine[0], json.loads(fine[2])["choices"][0]["message"]["content"]) == (b"HTTP/1.1 200 OK", "ok")
    assert (refused[0], json.loads(refused[2])["error"]["message"]) == (b"HTTP/1.1 400 Bad Request", UNREADABLE + TOO_DEEP)
    assert [e.status for e in endpoint.exchanges] == [200, 400]
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("length", [b"1000", b"99999999999999999999", b"\xb2"])
def test_the_key_is_checked_before_a_byte_of_the_body_is_read(length: bytes, capfd: pytest.CaptureFixture[str]) -> None:
    with Endpoint(_Ok()) as endpoint:  # the body is never sent: an answer proves it was not waited for
        status, headers, body = _post(endpoint, "/v1/chat/completions", length, key="guess")
    assert (status, headers["connection"]) == (b"HTTP/1.1 401 Unauthorized", "close")
    assert json.loads(body)["error"]["type"] == "authentication_error"
    assert (endpoint.refused, endpoint.exchanges) == (1, [])
    assert capfd.readouterr() == ("", "")


def test_a_wrong_key_with_its_body_sent_still_gets_its_answer() -> None:
    with Endpoint(_Ok()) as endpoint:
        status, _, _ = _post(endpoint, "/v1/messages", str(4 << 20).encode(), b"x" * (4 << 20), key="guess")
    assert (status, endpoint.refused) == (b"HTTP/1.1 401 Unauthorized", 1)


def test_a_body_over_the_bound_is_a_recorded_413_without_reading_it(capfd: pytest.CaptureFixture[str]) -> None:
    claimed = str(BODY_LIMIT + 1).encode()
    error = f"{UNREADABLE}its body is larger than the {BODY_LIMIT // 2**20} MiB the endpoint reads (Content-Length {claimed.decode()})"
    with Endpoint(_Ok()) as endpoint:  # a first MiB of it sent, the rest never
        status, headers, body = _post(endpoint, "/v1/messages", claimed, b"[" * (1 << 20))
        huge = _post(endpoint, "/v1/chat/completions", b"9" * 5000)
    assert (status, headers["connection"]) == (b"HTTP/1.1 413 Request Entity Too Large", "close")
    assert body == (b'{"type": "error", "error": {"type": "request_too_large", "message": "tooltrial\'s endpoint could not '
                    b'read the request: its body is larger than the 16 MiB the endpoint reads (Content-Length 16777217)"}}')
    assert huge[0] == b"HTTP/1.1 413 Request Entity Too Large"
    assert json.loads(huge[2])["error"]["message"].endswith(f"(Content-Length {'9' * 20}...)")
    assert _recorded(endpoint) == [(0, "messages", 413, None, None, error),
                                   (0, "chat", 413, None, None, json.loads(huge[2])["error"]["message"])]
    assert capfd.readouterr() == ("", "")


def test_a_body_without_a_length_is_a_recorded_411(capfd: pytest.CaptureFixture[str]) -> None:
    with Endpoint(_Ok()) as endpoint:
        chunked = _post(endpoint, "/v1/messages", None, b"2\r\n{}\r\n0\r\n\r\n", extra=b"\r\nTransfer-Encoding: chunked")
        none = _post(endpoint, "/v1/messages", None)
    assert [chunked[0], none[0]] == [b"HTTP/1.1 411 Length Required"] * 2
    assert [e.error for e in endpoint.exchanges] == [
        f"{UNREADABLE}a body sent with Transfer-Encoding is not read: send it with a Content-Length",
        f"{UNREADABLE}it has no Content-Length"]
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize(("head", "status", "why"), [
    (b"POST /v1/messages HTTP/1.x", b"", "Bad request version ('HTTP/1.x')"),  # answered as HTTP/0.9: no head
    (b"PUT /v1/messages HTTP/1.1\r\nHost: x", b"HTTP/1.1 501 Not Implemented", "Unsupported method ('PUT')"),
    (b"GET /v1/models HTTP/1.1\r\n" + b"X-A: b\r\n" * 101, b"HTTP/1.1 431 Request Header Fields Too Large",
     "Too many headers"),
])
def test_http_servers_own_refusals_have_a_json_body(head: bytes, status: bytes, why: str,
                                                    capfd: pytest.CaptureFixture[str]) -> None:
    with Endpoint(_Ok()) as endpoint, socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(head + b"\r\n\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    top, _, body = answer.rpartition(b"\r\n\r\n")
    code = int(status.split(b" ")[1]) if status else 400
    assert body == json.dumps({"error": {"message": UNREADABLE + why, "type": "invalid_request_error", "code": code}}).encode()
    if status:
        assert top.split(b"\r\n")[0] == status
        assert {b"Content-Type: application/json", b"Connection: close"} <= set(top.split(b"\r\n"))
    assert endpoint.exchanges == []
    assert capfd.readouterr() == ("", "")


AGENT = textwrap.dedent('''
    import os, socket
    port, key = int(os.environ["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1]), os.environ["ANTHROPIC_API_KEY"]

    def post(path, length, body=b""):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(b"POST " + path + b" HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nx-api-key: "
                        + key.encode() + b"\\r\\nContent-Length: " + length + b"\\r\\n\\r\\n" + body)
            data = b""
            while chunk := raw.recv(65536):
                data += chunk
        return data.split(b"\\r\\n\\r\\n", 1)[1]

    post(b"/v1/messages", b"\\xb2", b"{}")
    deep = b"[" * 100000 + b"]" * 100000
    post(b"/v1/chat/completions", str(len(deep)).encode(), deep)
    post(b"/v1/messages", b"99999999999999")
    good = b'{"messages": [{"role": "user", "content": "hi"}]}'
    print(post(b"/v1/messages", str(len(good)).encode(), good).decode())
''')


def test_the_refused_requests_are_on_the_runs_record(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "hostile.py").write_text(AGENT, encoding="utf-8")
    agent = AgentSpec("hostile", f"{sys.executable} {tmp_path / 'hostile.py'}", "stdin")
    case = make_case(agent=agent, script=({"content": "done"},), expect={"response_contains": ["done"]})
    record = execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(sandbox=Sandbox()))
    assert (record.status, record.final_reply, record.warnings) == ("pass", "done", [])
    assert [(w["api"], w["status"], w["stream"], w["error"]) for w in record.agent["wire"]] == [
        ("messages", 400, None, f"{UNREADABLE}its Content-Length '\u00b2' is not a number of bytes"),
        ("chat", 400, None, UNREADABLE + TOO_DEEP),
        ("messages", 413, None, (f"{UNREADABLE}its body is larger than the {BODY_LIMIT // 2**20} MiB the endpoint "
                                 "reads (Content-Length 99999999999999)")),
        ("messages", 200, False, None)]
    assert json.loads(record.commands[0].stdout)["content"][0]["text"] == "done"
    assert capfd.readouterr().err == ""


def test_a_body_that_stalls_is_a_recorded_408_within_the_bound(monkeypatch: pytest.MonkeyPatch,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(handler, "BODY_SECONDS", 0.3)
    with Endpoint(_Ok()) as endpoint:  # 10 of 100 bytes sent, then nothing: the agent waits for its answer
        started = time.monotonic()
        status, headers, body = _post(endpoint, "/v1/chat/completions", b"100", b'{"messages"')
        took = time.monotonic() - started
        good = b'{"messages": [{"role": "user", "content": "hi"}]}'
        after = _post(endpoint, "/v1/chat/completions", str(len(good)).encode(), good)  # the endpoint still serves
    assert 0.3 <= took < 1.5
    assert (status, headers["connection"]) == (b"HTTP/1.1 408 Request Timeout", "close")
    error = f"{UNREADABLE}its body did not arrive within 0.3 s (11 of 100 bytes came)"
    assert json.loads(body) == {"error": {"message": error, "type": "tooltrial", "code": 408}}
    assert after[0] == b"HTTP/1.1 200 OK"
    assert [(e.api, e.status, e.error) for e in endpoint.exchanges] == [("chat", 408, error), ("chat", 200, None)]
    assert capfd.readouterr() == ("", "")


STALLING = textwrap.dedent('''
    import os, socket
    port, key = int(os.environ["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1]), os.environ["ANTHROPIC_API_KEY"]

    def post(length, body):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(b"POST /v1/messages HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nx-api-key: "
                        + key.encode() + b"\\r\\nContent-Length: " + length + b"\\r\\n\\r\\n" + body)
            data = b""
            while chunk := raw.recv(65536):
                data += chunk
        return data.split(b"\\r\\n\\r\\n", 1)[1]

    post(b"1000", b'{"messages": [')  # and then nothing more, until the endpoint answers
    good = b'{"messages": [{"role": "user", "content": "hi"}]}'
    print(post(str(len(good)).encode(), good).decode())
''')


def test_an_agent_that_stalls_mid_body_gets_a_recorded_408_and_its_run_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(handler, "BODY_SECONDS", 0.3)
    (tmp_path / "stalling.py").write_text(STALLING, encoding="utf-8")
    agent = AgentSpec("stalling", f"{sys.executable} {tmp_path / 'stalling.py'}", "stdin")
    case = make_case(agent=agent, script=({"content": "done"},), expect={"response_contains": ["done"]})
    started = time.monotonic()
    record = execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(sandbox=Sandbox()))
    assert time.monotonic() - started < 5
    assert (record.status, record.final_reply) == ("pass", "done")
    assert [(w["api"], w["status"], w["error"]) for w in record.agent["wire"]] == [
        ("messages", 408, f"{UNREADABLE}its body did not arrive within 0.3 s (14 of 1000 bytes came)"),
        ("messages", 200, None)]
    assert capfd.readouterr().err == ""
