"""A real two-node Ray cluster on this machine's loopback for the tests of ``run --executor ray``:
a head and a worker node started with ``ray start``, each in a session of its own and with its own
temporary folder, and stopped by killing every process of those two sessions (``ray stop`` would
stop every Ray of the machine, not only the test's)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

RAY = str(Path(sys.executable).with_name("ray"))
_STORE = "80000000"  # bytes of object store per node: a suite's fixtures and records need little
_SOCKET_ROOM = 40  # characters a temporary folder may take: Ray's socket paths below it must fit 107


@dataclass
class Cluster:
    """The running cluster: ``address`` (``127.0.0.1:PORT`` of the head), the ``folders`` of its two
    nodes (their logs are under ``session_latest/logs``), and the session ids of its processes."""

    address: str
    folders: list[Path]
    sessions: list[int] = field(default_factory=list)

    def processes(self) -> list[int]:
        """The live (not zombie) processes of the cluster's sessions."""
        return [pid for pid, sid, state in _process_table() if sid in self.sessions and state != "Z"]

    def stop(self) -> None:
        """SIGKILL every process of the cluster's sessions until none is left (at most 20 s)."""
        for _ in range(200):
            left = self.processes()
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)


def start_cluster(base: Path, env: Mapping[str, str], cpus: int = 1) -> Cluster:
    """A head node and a worker node of ``cpus`` CPUs each, under ``base``, started with ``env`` as their
    environment. Raises subprocess.CalledProcessError (after stopping what started) when a node fails."""
    port = _free_port()
    cluster = Cluster(f"127.0.0.1:{port}", [base / "h", base / "w"])
    common = [f"--num-cpus={cpus}", f"--object-store-memory={_STORE}", "--disable-usage-stats",
              "--node-ip-address=127.0.0.1"]
    commands = [[RAY, "start", "--head", f"--port={port}", "--include-dashboard=false",
                 f"--temp-dir={cluster.folders[0]}", *common],
                [RAY, "start", f"--address={cluster.address}", f"--temp-dir={cluster.folders[1]}", *common]]
    try:
        for command in commands:
            started = subprocess.Popen(command, env=dict(env), start_new_session=True, stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True)
            cluster.sessions.append(started.pid)  # the session leader's pid is the session's id
            out, _ = started.communicate(timeout=120)
            if started.returncode != 0:
                raise subprocess.CalledProcessError(started.returncode, command, out)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def short_folder(base: Path) -> Path:
    """``base``, or where Ray's socket paths would not fit below it, a folder of its own under /tmp."""
    if len(str(base)) <= _SOCKET_ROOM:
        return base
    import tempfile

    return Path(tempfile.mkdtemp(prefix="tt-ray-"))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _process_table() -> Iterator[tuple[int, int, str]]:
    """``(pid, session id, state letter)`` of every process, from /proc."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, session, ...
        yield int(entry.name), int(fields[3]), fields[0]
