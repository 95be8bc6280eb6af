"""Figure (i) of benchmarks/run.py: what ``Access(forward=PORT)`` costs under bubblewrap.

The start: the wall-clock time of ``true`` under bwrap without and with a forwarded port (median of
``repeats``): the difference is the helper that binds the listener inside (tooltrial's interpreter
starting with ``-I -S``). The relay: ``size`` bytes sent from inside to a host server that counts
them, through the forward, in MB/s of the whole command (the sender's own start included).

    .venv/bin/python benchmarks/forward.py   # this figure alone
"""

from __future__ import annotations

import socket
import statistics
import tempfile
import threading
from pathlib import Path

from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.bwrap import probe
from runner.sandbox.command import Sandbox, scrubbed_env

_SEND = ("python3 -c 'import socket, sys; c = socket.create_connection((\"127.0.0.1\", int(sys.argv[1])));"
         " c.sendall(bytes(int(sys.argv[2]))); c.shutdown(socket.SHUT_WR); c.recv(1)' {port} {size}")


def _sink() -> tuple[socket.socket, list[int]]:
    """A host server on 127.0.0.1 that reads each connection to its end and records the bytes."""
    server = socket.create_server(("127.0.0.1", 0))
    counts: list[int] = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                total = 0
                while chunk := connection.recv(1 << 20):
                    total += len(chunk)
                counts.append(total)

    threading.Thread(target=serve, daemon=True).start()
    return server, counts


def figure_i(folder: Path, repeats: int = 20, size: int = 256 * 2**20) -> None:
    binary, hardened, reason = probe()
    if binary is None:
        print(f"(i) forward: skipped, bubblewrap unusable here ({reason})")
        return
    sandbox = Sandbox("bwrap", binary, hardened=hardened)
    env = scrubbed_env(folder)
    server, counts = _sink()
    port = server.getsockname()[1]
    try:
        starts = {}
        for forward in (None, port):
            times = []
            for _ in range(repeats):
                times.append(sandbox.run("true", folder, env, Bounds(30), Access(forward=forward)).duration)
            starts[forward] = statistics.median(times)
        sent = sandbox.run(_SEND.format(port=port, size=size), folder, env, Bounds(120), Access(forward=port))
        assert sent.exit_code == 0 and counts[-1] == size, (sent, counts)
    finally:
        server.close()
    print(f"(i) forward under bwrap: a command starts in {starts[None] * 1000:.0f} ms, "
          f"{starts[port] * 1000:.0f} ms with a forwarded port (median of {repeats}); "
          f"{size >> 20} MiB relayed at {size / sent.duration / 1e6:.0f} MB/s")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as scratch:
        figure_i(Path(scratch).resolve())
