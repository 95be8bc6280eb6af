"""Figure (n) of benchmarks/run.py: what one command costs to start, in each sandbox mode, against the
same programs started directly.

Each line is the median wall-clock milliseconds of ``bash -c true`` run ``count`` times, the lines'
tries interleaved (one of each in turn) so that a busy machine weighs on all of them alike:

- bare: the programs alone, through ``subprocess.run`` (no capture loop, no environment built):
  ``bash``; ``prlimit`` + ``bash`` (the limits); the start-up guard + ``prlimit`` + ``bash`` (the
  death with tooltrial: ``setpriv --pdeathsig``, ``unshare`` into a PID namespace, the ``sh`` check;
  runner.sandbox.guard); the whole command line of plain mode (those, then ``unshare`` into a PID
  namespace with its own ``/proc`` and ``setpriv`` dropping every capability); ``bwrap`` + ``bash``;
  the whole command line of bwrap mode (the guard and ``prlimit`` in front, seccomp left out);
- ``Sandbox.run``: tooltrial's own, in plain mode and under bwrap (its seccomp filter included), with
  the CPU time of this process per command beside it.

The difference between ``Sandbox.run`` and the whole command line of its mode started bare is
tooltrial's own share; the rest is the programs each mode needs for what it guarantees.

    .venv/bin/python benchmarks/commands.py [COUNT]   # this figure alone
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from runner.sandbox.bounds import Bounds
from runner.sandbox.bwrap import bwrap_argv, host_view, probe
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.sandbox.confine import limited, namespace_prefix
from runner.sandbox.guard import guard_prefix, guarded

_TIMEOUT = 60.0  # seconds: each command's timeout, which sets its CPU limit


def _bare(argv: list[str], cwd: Path, env: dict[str, str]) -> Callable[[], None]:
    def start() -> None:
        subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, check=True)
    return start


def _ways(workspace: Path) -> dict[str, Callable[[], None]]:
    """Each way of starting ``bash -c true`` measured, by its label (the bwrap ones where bwrap works)."""
    env = scrubbed_env(workspace)
    bash = ["bash", "-c", "true"]
    guard = guard_prefix()[0]

    def whole(argv: list[str]) -> list[str]:  # as Sandbox.run starts it
        return guarded(limited(argv, _TIMEOUT), guard, os.getpid())

    ways = {"bare bash": _bare(bash, workspace, env),
            "bare prlimit + bash": _bare(limited(bash, _TIMEOUT), workspace, env),
            "bare guard + prlimit + bash": _bare(whole(bash), workspace, env)}
    namespace = namespace_prefix()[0]
    if namespace is not None:
        ways["bare plain mode's command line"] = _bare(whole([*namespace, *bash]), workspace, env)
    plain = Sandbox("none")
    ways["Sandbox.run, plain mode"] = lambda: plain.run("true", workspace, env, Bounds(_TIMEOUT))
    binary, hardened, _ = probe()
    if binary is not None:
        confine = bwrap_argv(binary, workspace, workspace, False, host_view(env["PATH"], ()), None, hardened)
        ways["bare bwrap + bash"] = _bare([*confine, *bash], workspace, env)
        ways["bare bwrap mode's command line"] = _bare(whole([*confine, *bash]), workspace, env)
        confined = Sandbox("bwrap", binary, (), hardened)
        ways["Sandbox.run, bwrap"] = lambda: confined.run("true", workspace, env, Bounds(_TIMEOUT))
    return ways


def figure_n(count: int = 100) -> None:
    """Print the median milliseconds per command of each way (and this process's CPU for tooltrial's)."""
    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
        workspace = Path(folder).resolve()
        ways = _ways(workspace)
        walls: dict[str, list[float]] = {label: [] for label in ways}
        cpus: dict[str, list[float]] = {label: [] for label in ways}
        for start in ways.values():  # first use: caches filled, programs in the page cache
            start()
        for _ in range(count):
            for label, start in ways.items():
                began, used = time.perf_counter(), time.process_time()
                start()
                walls[label].append(time.perf_counter() - began)
                cpus[label].append(time.process_time() - used)
    print(f"(n) one command started, median of {count} interleaved tries (ms wall; this process's CPU for tooltrial's):")
    for label in ways:
        cpu = f", {statistics.median(cpus[label]) * 1000:.2f} ms CPU" if label.startswith("Sandbox") else ""
        print(f"    {label}: {statistics.median(walls[label]) * 1000:.1f} ms{cpu}")


if __name__ == "__main__":
    figure_n(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
