"""Sandbox.run's ``stdin`` (bytes fed to the command) and ``forward`` (one host loopback port reached
from inside the sandbox, and nothing else), through the real sandbox in both modes."""

from __future__ import annotations

import hashlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.sandbox.command import Sandbox, scrubbed_env
from tests.sandboxes import MODES, make_sandbox

MIB = 2**20


def _run(sandbox: Sandbox, workspace: Path, command: str, **kwargs: object) -> tuple[int | None, str]:
    result = sandbox.run(command, workspace, scrubbed_env(workspace), timeout=20, **kwargs)  # type: ignore[arg-type]
    return result.exit_code, result.output


@pytest.mark.parametrize("mode", MODES)
def test_stdin_bytes_reach_the_command_whole_then_end_of_file(mode: str, tmp_path: Path) -> None:
    data = bytes(range(256)) * (4 * 1024) + b"\xff\xfe not UTF-8 \xc3\x28"  # 1 MiB and invalid UTF-8 at the end
    code, output = _run(make_sandbox(mode), tmp_path, "sha256sum; wc -c < /dev/stdin", stdin=data)
    assert (code, output) == (0, f"{hashlib.sha256(data).hexdigest()}  -\n0\n")


@pytest.mark.parametrize("mode", MODES)
def test_without_stdin_the_command_reads_end_of_file_and_empty_stdin_too(mode: str, tmp_path: Path) -> None:
    sandbox = make_sandbox(mode)
    assert _run(sandbox, tmp_path, "wc -c; readlink /proc/self/fd/0") == (0, "0\n/dev/null\n")
    assert _run(sandbox, tmp_path, "wc -c", stdin=b"") == (0, "0\n")


@pytest.mark.parametrize("mode", MODES)
def test_a_command_that_never_reads_its_stdin_neither_hangs_nor_loses_its_output(mode: str, tmp_path: Path) -> None:
    code, output = _run(make_sandbox(mode), tmp_path, "echo ignored stdin; exec 0<&-; sleep 0.2; echo done",
                        stdin=b"x" * (8 * MIB))
    assert (code, output) == (0, "ignored stdin\ndone\n")


def test_stdin_to_a_command_that_times_out_is_dropped(tmp_path: Path) -> None:
    result = Sandbox("none").run("sleep 30", tmp_path, scrubbed_env(tmp_path), timeout=0.5, stdin=b"y" * MIB)
    assert (result.timed_out, result.exit_code) == (True, None)


class _HttpServer:
    """A one-reply-per-connection HTTP server on the host's 127.0.0.1: records each request's bytes."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.requests: list[bytes] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            with connection:
                request = b""
                while b"\r\n\r\n" not in request and (chunk := connection.recv(65536)):
                    request += chunk
                self.requests.append(request)
                body = b"hello from the host " + request.split(b" ")[1]
                connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def close(self) -> None:
        self.socket.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.socket.close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[_HttpServer]:
    server = _HttpServer()
    yield server
    server.close()


_GET = ("python3 -c 'import sys, urllib.request; "
        "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' http://127.0.0.1:{port}/v1/models")


def test_forward_is_a_no_op_without_bubblewrap(tmp_path: Path, server: _HttpServer) -> None:
    code, output = _run(Sandbox("none"), tmp_path, _GET.format(port=server.port), forward=server.port)
    assert (code, output) == (0, "hello from the host /v1/models\n")
    assert server.requests[0].startswith(b"GET /v1/models HTTP/1.1\r\nAccept-Encoding: identity\r\n")
