"""Running one shell command: bubblewrap or a plain process, scrubbed environment,
process-group timeout, resource limits, capped output.

Mode ``bwrap`` confines the command (runner.bwrap); mode ``none`` runs it as a
plain process. Both give it exactly the scrubbed environment, a closed stdin,
its own process group (killed whole on timeout), per-process resource limits
(memory, file size, CPU time), death with tooltrial and capped output.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from runner.bwrap import bwrap_argv, probe
from runner.errors import UserError

MODES = ("auto", "bwrap", "none")  # what --sandbox accepts; a Sandbox itself is bwrap or none
OUTPUT_LIMIT = 30_000  # characters of a tool result, bytes of a command's output
_CHUNK = 65_536  # bytes per read
_POLL = 0.05  # seconds between checks on the process while its output is quiet
_LINGER = 0.25  # seconds a finished command's background children may hold the pipe
_GRACE = 0.5  # seconds between SIGTERM and SIGKILL

MEMORY_LIMIT = 4 * 2**30  # bytes of data memory per process (RLIMIT_DATA: heap and private writable mappings)
FILE_SIZE_LIMIT = 2**30  # bytes: the largest file a command's process may write (RLIMIT_FSIZE)
_PRLIMIT_FLAGS = {resource.RLIMIT_DATA: "--data", resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_CPU: "--cpu"}


def elide(head: str, tail: str, cut: int, unit: str) -> str:
    """Join what was kept of a long text around a marker line saying how much was cut."""
    newline = "" if head.endswith("\n") else "\n"
    return f"{head}{newline}[... {cut} {unit} cut ...]\n{tail}"


def cap_text(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` unchanged when at most ``limit`` characters, else its head and tail around a marker."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return elide(text[:half], text[len(text) - (limit - half) :], len(text) - limit, "characters")


@dataclass(frozen=True)
class CommandResult:
    """What a command did.

    Attributes:
        exit_code: the exit status (negative for a signal), None when killed by the timeout.
        output: stdout and stderr interleaved, decoded as UTF-8 (bad bytes replaced),
            at most ``output_limit`` bytes of it kept (head and tail, with a marker line).
        timed_out: whether the timeout killed it.
        duration: wall-clock seconds.
    """

    exit_code: int | None
    output: str
    timed_out: bool
    duration: float


def scrubbed_env(workspace: Path, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The only environment commands see: the parent's PATH, HOME=workspace, a UTF-8 locale,
    TERM=dumb, PYTHONDONTWRITEBYTECODE=1, then ``extra`` (the case's env) over those.

    Nothing else is inherited, so no API key reaches a command.
    """
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(workspace),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    return env


def resource_limits(timeout: float) -> dict[int, int]:
    """The rlimits (``resource.RLIMIT_*`` to a value) every command's processes run under.

    Memory: MEMORY_LIMIT bytes of data (address space merely reserved, as runtimes
    do, does not count; an allocation past it fails). Files: FILE_SIZE_LIMIT bytes
    (a write past it gets SIGXFSZ). CPU: ``timeout`` seconds on every CPU of the
    machine, rounded up, the most a command could use before its timeout; it stops
    a process that escaped the process-group kill (SIGKILL at the limit). A hard
    limit already lower in tooltrial's own process is kept.
    """
    wanted = {
        resource.RLIMIT_DATA: MEMORY_LIMIT,
        resource.RLIMIT_FSIZE: FILE_SIZE_LIMIT,
        resource.RLIMIT_CPU: max(1, math.ceil(timeout * (os.cpu_count() or 1))),
    }
    limits = {}
    for kind, value in wanted.items():
        hard = resource.getrlimit(kind)[1]
        limits[kind] = value if hard == resource.RLIM_INFINITY else min(value, hard)
    return limits


@functools.cache
def _util_linux() -> tuple[str, str] | None:
    """The paths of util-linux's ``prlimit`` and ``setpriv`` (in every Debian and Ubuntu), or None
    where either is missing: commands then run without resource limits and parent-death signal."""
    prlimit, setpriv = shutil.which("prlimit"), shutil.which("setpriv")
    return (prlimit, setpriv) if prlimit and setpriv else None


def limited(argv: list[str], timeout: float, dies_with_parent: bool) -> list[str]:
    """``argv`` behind util-linux's ``prlimit``, which applies ``resource_limits(timeout)`` (soft
    and hard) before it execs the rest, and, unless ``dies_with_parent`` already holds (bwrap's
    ``--die-with-parent``), ``setpriv --pdeathsig KILL``: the process gets SIGKILL when the
    tooltrial thread that started it ends, as when tooltrial is killed.

    Both survive exec (bash, or bwrap and all it starts), so every process of the command has
    the limits; the death signal does not survive fork, so a child that bash forks rather
    than replaces itself with does not get it. Wrapping the command, rather than a
    ``preexec_fn``, keeps Python's vfork start, which does not copy tooltrial's memory:
    about 2 ms a command instead of 14 ms once litellm is loaded. ``argv`` as is without util-linux.
    """
    tools = _util_linux()
    if tools is None:
        return argv
    prlimit, setpriv = tools
    flags = [f"{_PRLIMIT_FLAGS[kind]}={value}" for kind, value in resource_limits(timeout).items()]
    death = [] if dies_with_parent else [setpriv, "--pdeathsig", "KILL", "--"]
    return [prlimit, *flags, "--", *death, *argv]


class _Capture:
    """Keeps the first half of ``limit`` bytes and a rolling tail of the rest; counts what it drops."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        self.head += chunk[:room]
        self.tail += chunk[room:]
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return elide(head, tail, self.dropped, "bytes") if self.dropped else head + tail


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to a whole process group; a group already gone is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _drain(fd: int, capture: _Capture, seconds: float) -> None:
    """Read what is left on ``fd`` until end of file or for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0 and selector.select(left):
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return
            capture.feed(chunk)


def _pump(
    proc: subprocess.Popen[bytes], capture: _Capture, deadline: float, cancel: threading.Event | None = None
) -> bool:
    """Read the output until the command is done; False when ``deadline`` (monotonic) passes
    or ``cancel`` is set first (it is looked at every ``_POLL`` seconds at most).

    Background children still holding the pipe ``_LINGER`` seconds after the
    command exits are killed with its process group.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while (now := time.monotonic()) < deadline:
            if cancel is not None and cancel.is_set():
                return False
            if selector.select(min(deadline - now, _POLL)):
                chunk = os.read(fd, _CHUNK)
                if not chunk:
                    break
                capture.feed(chunk)
            if proc.poll() is not None:
                exited_at = now if exited_at is None else exited_at
                if now - exited_at >= _LINGER:
                    _signal_group(proc.pid, signal.SIGKILL)
                    _drain(fd, capture, _LINGER)
                    break
        else:
            return False
    try:
        proc.wait(max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True


def budget(timeout: float, deadline: float | None) -> float:
    """Seconds a command may take: ``timeout``, or less when ``deadline`` (``time.monotonic()``)
    comes sooner; never below 0."""
    if deadline is None:
        return timeout
    return max(0.0, min(timeout, deadline - time.monotonic()))


class Sandbox:
    """Runs shell commands for setup, verify and the ``bash`` tool.

    ``mode`` is ``"bwrap"`` (confined by bubblewrap at path ``binary``) or ``"none"``
    (a plain process); anything else raises ValueError. One Sandbox serves
    concurrent runs: it keeps only the set of live process groups, under a lock,
    so ``kill_all`` can stop every command at once.
    """

    def __init__(self, mode: str = "none", binary: str = "bwrap") -> None:
        if mode not in ("bwrap", "none"):
            raise ValueError(f"unknown sandbox mode {mode!r} (supported: bwrap, none)")
        self.mode = mode
        self.binary = binary
        self._live: set[int] = set()
        self._lock = threading.Lock()

    def run(
        self,
        command: str,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float,
        output_limit: int = OUTPUT_LIMIT,
        network: bool = False,
        cancel: threading.Event | None = None,
    ) -> CommandResult:
        """Run ``bash -c command`` in ``cwd`` with exactly ``env``, stdin closed.

        ``timeout`` is in seconds; when it passes, the command's whole process
        group gets SIGTERM, then SIGKILL after a short grace. Its processes
        run under ``resource_limits(timeout)`` and its own process dies with
        tooltrial (``limited``). ``output_limit`` is in bytes. Under bwrap, ``cwd`` is the one
        writable host folder and ``network`` keeps the host network. Setting ``cancel`` (the
        suite's Ctrl-C) stops the command as its timeout does (``timed_out``). Raises
        OSError when the command cannot be started (e.g. ``cwd`` missing),
        ValueError for a NUL byte in ``command`` or ``env``.
        """
        argv = ["bash", "-c", command]
        if self.mode == "bwrap":
            argv = [*bwrap_argv(self.binary, cwd, cwd, network), *argv]
        argv = limited(argv, timeout, dies_with_parent=self.mode == "bwrap")
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert proc.stdout is not None
        with self._lock:
            self._live.add(proc.pid)
        capture = _Capture(output_limit)
        try:
            finished = _pump(proc, capture, start + timeout, cancel)
            if not finished:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(_GRACE)
                except subprocess.TimeoutExpired:
                    pass
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
                _drain(proc.stdout.fileno(), capture, _POLL)
        finally:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
            proc.stdout.close()
            with self._lock:
                self._live.discard(proc.pid)
        return CommandResult(
            exit_code=proc.returncode if finished else None,
            output=capture.text(),
            timed_out=not finished,
            duration=time.monotonic() - start,
        )

    def kill_all(self) -> None:
        """SIGKILL the process group of every command still running (for an immediate exit)."""
        with self._lock:
            live = list(self._live)
        for pgid in live:
            _signal_group(pgid, signal.SIGKILL)


def choose_sandbox(requested: str) -> Sandbox:
    """The Sandbox for ``--sandbox requested`` (one of MODES).

    ``auto`` is bwrap when it works here, else a plain process after a one-line
    warning on stderr. Raises UserError when ``bwrap`` is requested but does not work.
    """
    if requested == "none":
        return Sandbox("none")
    binary, reason = probe()
    if binary is not None:
        return Sandbox("bwrap", binary)
    if requested == "bwrap":
        raise UserError(f"bubblewrap sandbox unavailable: {reason}",
                        hint="install bubblewrap (apt-get install bubblewrap) or use --sandbox none")
    print(f"warning: bubblewrap unavailable ({reason}); commands run unconfined", file=sys.stderr)
    return Sandbox("none")
