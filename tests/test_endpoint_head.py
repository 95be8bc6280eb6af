"""The agents' endpoint reads a request's line and headers within HEAD_SECONDS (patched down to 0.3 s here),
counted from the connection or from the end of the connection's last request: a client that stalls mid-head,
or sends its headers a byte at a time forever, gets a 408 and its connection closed within the bound, and the
endpoint serves the next request; an idle connection is closed without a word and nothing is recorded, and
an OpenAI SDK client that waits longer than the bound between requests still gets its answers; an agent that
stalls mid-headers under ``tooltrial run`` passes, the 408 in its ``agent.wire``. The head's size is
http.server's bound: 100 headers of at most 64 KiB each."""

from __future__ import annotations

import json
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import openai
import pytest

from runner.endpoint import handler
from runner.endpoint.server import Endpoint
from runner.providers.base import Completion
from tests.helpers import run_cli

UNREADABLE = "tooltrial's endpoint could not read the request: "
GOOD = b'{"messages": [{"role": "user", "content": "hi"}]}'


class _Ok:
    """A provider that answers every request with ``ok``."""

    name = "ok"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None) -> Completion:
        return Completion("ok", ())


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(handler, "HEAD_SECONDS", 0.3)
    with Endpoint(_Ok()) as served:
        yield served


def _answer(raw: socket.socket) -> tuple[bytes, dict[str, str], bytes]:
    """The status line, headers (lower-case names) and body of the answer on ``raw``, read to the connection's end."""
    data = b""
    while chunk := raw.recv(65536):
        data += chunk
    top, _, body = data.partition(b"\r\n\r\n")
    status, *lines = top.decode("latin-1").split("\r\n")
    return status.encode(), {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}, body


def _good_request(endpoint: Endpoint) -> bytes:
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer "
            + endpoint.token.encode() + b"\r\nContent-Length: " + str(len(GOOD)).encode() + b"\r\n\r\n" + GOOD)


def _serves_on(endpoint: Endpoint) -> None:
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(_good_request(endpoint))
        assert _answer(raw)[0] == b"HTTP/1.1 200 OK"


def test_a_request_line_that_stalls_gets_a_408_within_the_bound(endpoint: Endpoint,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/chat/comp")  # and then nothing, waiting for an answer
        started = time.monotonic()
        status, headers, body = _answer(raw)
        took = time.monotonic() - started
    assert 0.25 <= took < 1.5
    assert (status, headers["connection"]) == (b"HTTP/1.1 408 Request Timeout", "close")
    error = f"{UNREADABLE}its request line and headers did not arrive within 0.3 s (18 bytes came)"
    assert json.loads(body) == {"error": {"message": error, "type": "invalid_request_error", "code": 408}}
    assert endpoint.exchanges == []  # no route, no key: not the agent's request as far as the endpoint knows
    _serves_on(endpoint)
    assert [(e.api, e.status) for e in endpoint.exchanges] == [("chat", 200)]
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("keyed", [True, False])
def test_headers_sent_a_byte_at_a_time_forever_get_a_408_within_the_bound(
        endpoint: Endpoint, keyed: bool, capfd: pytest.CaptureFixture[str]) -> None:
    head = (b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n"
            + (b"x-api-key: " + endpoint.token.encode() + b"\r\n" if keyed else b"") + b"X-Slow: ")
    sent = [0]

    def trickle(raw: socket.socket) -> None:
        try:
            while True:
                raw.send(b"a")
                sent[0] += 1
                time.sleep(0.01)
        except OSError:  # the endpoint closed the connection (or the test did)
            return

    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(head)
        started = time.monotonic()
        threading.Thread(target=trickle, args=(raw,), daemon=True).start()
        status, headers, body = _answer(raw)
        took = time.monotonic() - started
    assert 0.25 <= took < 1.5, "the answer came after the bound and the linger that follows it"
    assert (status, headers["connection"]) == (b"HTTP/1.1 408 Request Timeout", "close")
    error = json.loads(body)
    message = error["error"]["message"]
    came = int(message.rsplit("(", 1)[1].split()[0])
    assert len(head) + 10 <= came <= len(head) + sent[0]
    assert message == f"{UNREADABLE}its request line and headers did not arrive within 0.3 s ({came} bytes came)"
    assert error == ({"type": "error", "error": {"type": "api_error", "message": message}} if keyed
                     else {"error": {"message": message, "type": "invalid_request_error", "code": 408}})
    recorded = [("messages", 408, message)] if keyed else []  # recorded as a stalled body is: its route and key came
    assert [(e.api, e.status, e.error) for e in endpoint.exchanges] == recorded
    _serves_on(endpoint)
    assert [e.status for e in endpoint.exchanges][-1] == 200
    assert capfd.readouterr() == ("", "")


def test_an_idle_connection_is_closed_without_a_word_after_its_last_request(endpoint: Endpoint) -> None:
    keep_alive = _good_request(endpoint).replace(b"Connection: close\r\n", b"")
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(keep_alive)
        data = raw.recv(65536)
        while len(data.partition(b"\r\n\r\n")[2]) < int(data.split(b"Content-Length: ")[1].split(b"\r\n")[0]):
            data += raw.recv(65536)
        answered = time.monotonic()
        assert data.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" not in data
        assert raw.recv(65536) == b""  # nothing more is written: the connection closes
        took = time.monotonic() - answered
    assert 0.25 <= took < 1.5
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        started = time.monotonic()
        assert raw.recv(65536) == b""  # connected and sent nothing
        assert 0.25 <= time.monotonic() - started < 1.5
    assert [(e.api, e.status) for e in endpoint.exchanges] == [("chat", 200)]
    assert endpoint.refused == 0


def test_an_openai_client_idle_longer_than_the_bound_between_requests_gets_its_answers(endpoint: Endpoint) -> None:
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{endpoint.port}/v1", api_key=endpoint.token, max_retries=0)
    replies = []
    for _ in range(3):
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        replies.append(reply.choices[0].message.content)
        time.sleep(0.6)  # twice the bound: the endpoint closes the kept-alive connection meanwhile
    client.close()
    assert replies == ["ok", "ok", "ok"]
    assert [(e.api, e.status, e.error) for e in endpoint.exchanges] == [("chat", 200, None)] * 3


@pytest.mark.parametrize(("extra", "why"), [(b"".join(b"X-%d: 1\r\n" % i for i in range(101)), "Too many headers"),
                                            (b"X-Long: " + b"a" * 65536 + b"\r\n", "Line too long")])
def test_a_head_over_http_servers_size_bounds_is_a_431(endpoint: Endpoint, extra: bytes, why: str) -> None:
    with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + extra + b"\r\n")
        status, headers, body = _answer(raw)
    assert (status, headers["connection"]) == (b"HTTP/1.1 431 Request Header Fields Too Large", "close")
    assert json.loads(body)["error"]["message"] == f"{UNREADABLE}{why}"
    assert endpoint.exchanges == []


STALLING = textwrap.dedent('''
    import os, socket
    port, key = int(os.environ["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1]), os.environ["ANTHROPIC_API_KEY"]

    def post(data):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            raw.sendall(data)
            answer = b""
            while chunk := raw.recv(65536):
                answer += chunk
        return answer.split(b"\\r\\n\\r\\n", 1)[1]

    head = b"POST /v1/messages HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nx-api-key: " + key.encode() + b"\\r\\n"
    post(head + b"Content-Len")  # and then nothing more, until the endpoint answers
    good = b'{"messages": [{"role": "user", "content": "hi"}]}'
    print(post(head + b"Content-Length: " + str(len(good)).encode() + b"\\r\\n\\r\\n" + good).decode())
''')


def test_an_agent_that_stalls_mid_headers_gets_a_recorded_408_and_its_run_passes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(handler, "HEAD_SECONDS", 0.3)
    (tmp_path / "stalling.py").write_text(STALLING, encoding="utf-8")
    agent = {"command": f"{sys.executable} {tmp_path / 'stalling.py'}", "input": "stdin"}
    (tmp_path / "tooltrial.yml").write_text(json.dumps({"agents": {"stalling": agent}}), encoding="utf-8")
    (tmp_path / "cases.yml").write_text("- id: stall\n  agent: stalling\n  turns: [Say done.]\n"
                                        "  expect: {response_contains: [done]}\n  script: [{content: done}]\n")
    started = time.monotonic()
    done = run_cli("run", str(tmp_path / "cases.yml"), "--config", str(tmp_path / "tooltrial.yml"), "-p", "scripted",
                   "--sandbox", "none", "--results", str(tmp_path / "results"))
    assert time.monotonic() - started < 5
    [path] = (tmp_path / "results").glob("*/runs/*.json")
    assert (done.returncode, done.stderr.splitlines()) == (0, [
        "warning: --sandbox none: commands run unconfined: they can read and write your files and use your network",
        f"results: {path.parent.parent}"]), done.stdout
    record = json.loads(path.read_text(encoding="utf-8"))
    assert (record["status"], record["final_reply"]) == ("pass", "done")
    came = len(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: \r\nContent-Len") + 32
    assert [(w["api"], w["status"], w["error"]) for w in record["agent"]["wire"]] == [
        ("messages", 408, f"{UNREADABLE}its request line and headers did not arrive within 0.3 s ({came} bytes came)"),
        ("messages", 200, None)]
    assert json.loads(record["commands"][0]["stdout"])["content"][0]["text"] == "done"
