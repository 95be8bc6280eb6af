"""Sandbox.run's ``stdin`` (bytes fed to the command) and ``forward`` (one host loopback port reached
from inside the sandbox, and nothing else), through the real sandbox in both modes."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.sandbox import forward
from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.sandbox.started import CommandNotStarted
from tests.sandboxes import MODES, make_sandbox, needs_bwrap, processes_with

MIB = 2**20
PY = forward.PYTHON  # visible inside with a forward; python3 on PATH may be a slow shim (pyenv)


def _run(sandbox: Sandbox, workspace: Path, command: str, stdin: bytes | None = None, forward: int | None = None,
         network: bool = False) -> tuple[int | None, str]:
    result = sandbox.run(command, workspace, scrubbed_env(workspace), Bounds(20), Access(network, forward), stdin=stdin)
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
    result = Sandbox("none").run("sleep 30", tmp_path, scrubbed_env(tmp_path), Bounds(0.2), stdin=b"y" * MIB)
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


_GET = ("{python} -c 'import sys, urllib.request; "
        "print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' http://127.0.0.1:{port}/v1/models")


_REQUEST = b"GET /v1/models HTTP/1.1\r\nAccept-Encoding: identity\r\nHost: 127.0.0.1:%d\r\n"


@pytest.mark.parametrize("mode, network", [("none", False), pytest.param("bwrap", True, marks=needs_bwrap)])
def test_forward_is_a_no_op_where_the_host_loopback_is_reachable_anyway(
    mode: str, network: bool, tmp_path: Path, server: _HttpServer
) -> None:
    command = _GET.format(python="python3", port=server.port)
    assert _run(make_sandbox(mode), tmp_path, command, forward=server.port, network=network) == (
        0, "hello from the host /v1/models\n")
    assert server.requests[0].startswith(_REQUEST % server.port)
    assert not _forward_threads()


def _forward_threads() -> list[str]:
    return [thread.name for thread in threading.enumerate() if thread.name.startswith("tooltrial-forward-")]


def _helpers_running() -> list[int]:
    """Host pids of processes running the forward's helper (bubblewrap's own hold it in their arguments)."""
    def runs_python(pid: int) -> bool:
        try:
            return os.readlink(f"/proc/{pid}/exe") == PY
        except OSError:  # gone meanwhile
            return False

    return [pid for pid in processes_with("_socket.socket(fileno=") if runs_python(pid)]


_LOOK_AROUND = "; ls /proc/self/fd | tr '\\n' ' '; echo; readlink /proc/[0-9]*/exe | grep -c python"


@needs_bwrap
def test_under_bwrap_the_forwarded_port_answers_and_nothing_of_the_forward_stays_inside(
    tmp_path: Path, server: _HttpServer
) -> None:
    code, output = _run(make_sandbox("bwrap"), tmp_path, _GET.format(python=PY, port=server.port) + _LOOK_AROUND,
                        forward=server.port)
    # the reply came through; the command holds no descriptor but its own (ls's folder is 3); no python runs
    assert (code, output) == (1, "hello from the host /v1/models\n0 1 2 3 \n0\n")
    assert len(server.requests) == 1 and server.requests[0].startswith(_REQUEST % server.port)
    assert not _forward_threads() and not _helpers_running()


@needs_bwrap
def test_without_forward_the_port_stays_unreachable_under_bwrap(tmp_path: Path, server: _HttpServer) -> None:
    _, output = _run(make_sandbox("bwrap"), tmp_path, _GET.format(python="python3", port=server.port) + " 2>&1 | tail -1")
    assert output == "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>\n"
    assert server.requests == []


class _DigestServer:
    """On the host's 127.0.0.1: for each connection, reads to end of file, replies the SHA-256 of what
    came (hex) and closes; records how many connections it accepted and the bytes each sent."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port: int = self.socket.getsockname()[1]
        self.received: list[int] = []
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        digest, size = hashlib.sha256(), 0
        with connection:
            try:
                while chunk := connection.recv(65536):
                    digest.update(chunk)
                    size += len(chunk)
                self.received.append(size)
                connection.sendall(digest.hexdigest().encode())
            except OSError:
                self.received.append(size)

    def close(self) -> None:
        self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()


@pytest.fixture
def digests() -> Iterator[_DigestServer]:
    server = _DigestServer()
    yield server
    server.close()


@pytest.fixture
def other() -> Iterator[socket.socket]:
    """Another listener on the host's 127.0.0.1, never to be reached."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    yield listener
    listener.close()


_KNOCK = PY + """ -c '
import socket, sys
port, other, path, abstract = sys.argv[1:]
tries = [(socket.AF_INET, ("127.0.0.1", int(other))), (socket.AF_INET, ("127.0.0.2", int(port))),
         (socket.AF_UNIX, path), (socket.AF_UNIX, chr(0) + abstract)]
for family, address in tries:
    try:
        socket.socket(family).connect(address)
        print("connected")
    except OSError as e:
        print(e.errno)
' """


@needs_bwrap
def test_no_other_port_nor_any_unix_socket_of_the_host_answers_while_one_is_forwarded(
    tmp_path: Path, server: _HttpServer, other: socket.socket
) -> None:
    unix = [socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
    path, abstract = str(tmp_path / "host.sock"), f"tooltrial-{os.getpid()}-{tmp_path.name}"
    for listener, address in zip(unix, (path, "\0" + abstract)):
        listener.bind(address)
        listener.listen()
        listener.setblocking(False)
    try:
        command = _KNOCK + f"{server.port} {other.getsockname()[1]} {path} {abstract}"
        code, output = _run(make_sandbox("bwrap"), tmp_path, command, forward=server.port)
        for listener in (other, *unix):
            with pytest.raises(BlockingIOError):
                listener.accept()  # nobody knocked
    finally:
        for listener in unix:
            listener.close()
    # another host port: refused in the sandbox's own network; the forward is 127.0.0.1's alone;
    # Unix sockets: refused by the seccomp filter (EACCES) before any address is looked at
    assert (code, output) == (0, "111\n111\n13\n13\n")
    assert server.requests == []


_SEND = PY + """ -c '
import hashlib, socket, sys
data = bytes(range(256)) * (int(sys.argv[2]) // 256) + b"\\xc3\\x28"
connection = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
try:
    connection.sendall(data)
    connection.shutdown(socket.SHUT_WR)
    reply = connection.recv(100).decode()
    print("same" if reply == hashlib.sha256(data).hexdigest() else f"reply {reply!r}" if reply else "cut")
except OSError:  # reset, or a broken pipe, as the cut finds the connection
    print("cut")
' """


@needs_bwrap
def test_huge_binary_streams_go_through_whole_both_ways(tmp_path: Path, digests: _DigestServer) -> None:
    code, output = _run(make_sandbox("bwrap"), tmp_path, _SEND + f"{digests.port} {24 * MIB}", forward=digests.port)
    assert (code, output) == (0, "same\n")
    assert digests.received == [24 * MIB + 2]
    assert not _forward_threads()


@needs_bwrap
def test_past_the_byte_bound_the_connection_is_cut(
    tmp_path: Path, digests: _DigestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forward, "MAX_BYTES", MIB)
    code, output = _run(make_sandbox("bwrap"), tmp_path, _SEND + f"{digests.port} {4 * MIB}", forward=digests.port)
    assert (code, output) == (0, "cut\n")
    (received,) = digests.received
    assert received <= MIB
    assert not _forward_threads()


_FLOOD = PY + """ -c '
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]
last = held[-1]
last.sendall(b"y")
last.shutdown(socket.SHUT_WR)
last.settimeout(1)
try:
    print("answered early", last.recv(100))
except TimeoutError:
    print("waits")
for connection in held[:32]:
    connection.close()
last.settimeout(10)
print(last.recv(100).decode(), flush=True)
open("printed", "w").close()
time.sleep(60)
' """


@needs_bwrap
def test_a_flood_of_connections_waits_its_turn_and_a_command_holding_them_is_stopped(
    tmp_path: Path, digests: _DigestServer
) -> None:
    cancel = threading.Event()

    def cancel_once_printed() -> None:  # as Ctrl-C would, stops the command as its timeout does
        while not (tmp_path / "printed").exists() and not cancel.wait(0.05):
            pass
        cancel.set()

    threading.Thread(target=cancel_once_printed, daemon=True).start()
    result = make_sandbox("bwrap").run(_FLOOD + str(digests.port), tmp_path, scrubbed_env(tmp_path),
                                       Bounds(30, cancel=cancel), Access(forward=digests.port))
    cancel.set()
    assert result.output == f"waits\n{hashlib.sha256(b'y').hexdigest()}\n"
    assert result.timed_out and forward.MAX_CONNECTIONS == 32
    assert digests.accepted == 40  # 32 at once, the next 8 once those closed
    assert not _forward_threads()


@pytest.mark.parametrize("mode", MODES)
def test_a_port_outside_tcps_range_is_refused_before_anything_runs(mode: str, tmp_path: Path) -> None:
    for port in (0, 65536):
        with pytest.raises(ValueError, match=f"^forward port {port} is not a TCP port \\(1-65535\\)$"):
            _run(make_sandbox(mode), tmp_path, "touch ran", forward=port)
    assert not (tmp_path / "ran").exists()


@needs_bwrap
def test_a_helper_that_cannot_start_fails_the_command_and_leaves_nothing_waiting(
    tmp_path: Path, server: _HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forward, "PYTHON", "/nonexistent/python3")
    with pytest.raises(CommandNotStarted) as failed:  # bubblewrap did not start it: its run's start_failed error
        _run(make_sandbox("bwrap"), tmp_path, "touch ran", forward=server.port)
    assert str(failed.value) == ("the sandbox did not start the command: "
                                 "bwrap: execvp /nonexistent/python3: No such file or directory")
    assert not (tmp_path / "ran").exists() and not _forward_threads() and server.requests == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200_000))
def test_any_bytes_on_stdin_reach_the_command_exactly(tmp_path: Path, data: bytes) -> None:
    code, output = _run(Sandbox("none"), tmp_path, "sha256sum", stdin=data)
    assert (code, output) == (0, f"{hashlib.sha256(data).hexdigest()}  -\n")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.binary(min_size=1, max_size=100_000), max_size=8), st.integers(1, 3))
def test_the_relay_carries_any_bytes_over_any_connections_whole(
    digests: _DigestServer, chunks: list[bytes], connections: int
) -> None:
    """The relay alone, on the host: a listener handed to it as the helper hands one."""
    relay = forward.Forward(digests.port)
    listener = socket.create_server(("127.0.0.1", 0))
    with socket.socket(fileno=os.dup(relay.inside)) as inside:  # the command's copy
        socket.send_fds(inside, [b"L"], [listener.fileno()])
    address = listener.getsockname()
    listener.close()
    relay.start()
    try:
        for _ in range(connections):
            with socket.create_connection(address, timeout=10) as client:
                for chunk in chunks:
                    client.sendall(chunk)
                client.shutdown(socket.SHUT_WR)
                assert client.recv(100).decode() == hashlib.sha256(b"".join(chunks)).hexdigest()
    finally:
        relay.stop()
    assert not _forward_threads()


@needs_bwrap
def test_commands_at_once_forward_the_same_port_each_in_its_own_sandbox(tmp_path: Path, digests: _DigestServer) -> None:
    sandbox = make_sandbox("bwrap")
    results: dict[int, tuple[int | None, str]] = {}

    def send(n: int) -> None:
        workspace = tmp_path / str(n)
        workspace.mkdir()
        results[n] = _run(sandbox, workspace, _SEND + f"{digests.port} {(n + 1) * MIB}", forward=digests.port)

    threads = [threading.Thread(target=send, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results == {n: (0, "same\n") for n in range(3)}
    assert sorted(digests.received) == [MIB + 2, 2 * MIB + 2, 3 * MIB + 2]
    assert not _forward_threads()
