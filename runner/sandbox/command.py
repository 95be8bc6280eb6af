"""Running one shell command: bubblewrap or a plain process, scrubbed environment, process-group timeout,
resource limits, capped output.

Mode ``bwrap`` confines the command (runner.sandbox.bwrap, runner.sandbox.seccomp); mode ``none`` runs it with the
host's files and network, in a PID namespace of its own where the machine allows (runner.sandbox.confine). Both
give it exactly the scrubbed environment, the stdin asked for (or none), its own process group (killed whole on
timeout, and once it exits), per-process resource limits (memory, file size, CPU time), death with tooltrial
(runner.sandbox.guard) and capped output. What each mode guarantees is in ``Confinement``, recorded on every run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox.bounds import NO_ACCESS, Access, Bounds
from runner.sandbox.bwrap import HostView, bwrap_argv, host_view
from runner.sandbox.confine import hide_own_environment, limited
from runner.sandbox.forward import PYTHON, Forward
from runner.sandbox.guard import guarded
from runner.sandbox.machine import Probed, probe_machine
from runner.sandbox.process import Capture, Feed, signal_group, supervise
from runner.sandbox.searchpath import searchable
from runner.sandbox.started import CommandNotStarted, Status, abandon, not_started, start_error

MODES = ("auto", "bwrap", "none")  # what --sandbox accepts; a Sandbox itself is bwrap or none


@dataclass(frozen=True)
class CommandResult:
    """What a command did.

    Attributes:
        exit_code: the exit status (negative for a signal), None when killed by the timeout.
        output: stdout and stderr interleaved, decoded as UTF-8 (bad bytes replaced),
            at most ``Bounds.output_limit`` bytes of it kept (head and tail, with a marker line);
            for a command run with ``split``, its stdout alone.
        timed_out: whether the timeout killed it.
        duration: wall-clock seconds.
        stderr: for a command run with ``split``, its stderr, capped as ``output`` is; else None.
    """

    exit_code: int | None
    output: str
    timed_out: bool
    duration: float
    stderr: str | None = None


def scrubbed_env(workspace: Path, extra: Mapping[str, str] = {}) -> dict[str, str]:
    """The only environment commands see: the parent's PATH less the folders this user cannot search
    (runner.sandbox.searchpath), HOME=workspace, a UTF-8 locale, TERM=dumb, PYTHONDONTWRITEBYTECODE=1,
    then ``extra`` (the case's env) over those.

    Nothing else is inherited, so no API key reaches a command.
    """
    env = {
        "PATH": searchable(os.environ.get("PATH", os.defpath)),
        "HOME": str(workspace),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    return env


def budget(timeout: float, deadline: float | None) -> float:
    """Seconds a command may take: ``timeout``, or less when ``deadline`` (``time.monotonic()``)
    comes sooner; never below 0."""
    if deadline is None:
        return timeout
    return max(0.0, min(timeout, deadline - time.monotonic()))


@dataclass(frozen=True)
class Confinement:
    """How a run's commands were confined; recorded on every run (``RunRecord.sandbox``).

    Attributes:
        mode: ``bwrap`` (bubblewrap) or ``none`` (the host's files and network).
        isolated: each command had a PID namespace of its own, so it saw no other process (no other process's
            environment, where API keys are) and every process it started died with it. Always true under bwrap.
        note: what this mode does not protect and why it was used (empty for full bubblewrap).
    """

    mode: str
    isolated: bool
    note: str = ""


class Sandbox:
    """Runs shell commands for setup, verify and the ``bash`` tool.

    ``mode`` is ``"bwrap"`` (confined by bubblewrap at path ``binary``; ``hardened`` when it takes the user-namespace
    hardening, see runner.sandbox.bwrap.probe) or ``"none"`` (the host's files and network, a PID namespace of its own
    where this machine allows); anything else raises ValueError. ``hide`` lists more host folders commands must not
    see under bwrap (the results folder). ``note`` says why this mode was chosen, for ``confinement``. ``probed`` is
    what the machine gives the mode (runner.sandbox.machine), probed here when None (MachineBusy when the machine
    refused every trial); a worker process passes its parent's, so it never decides on its own.

    One Sandbox serves concurrent runs: it keeps only the set of live process groups, under a lock, so
    ``kill_all`` can stop every command at once.
    """

    def __init__(self, mode: str = "none", binary: str = "bwrap", hide: Sequence[Path] = (),
                 hardened: bool = True, note: str = "", probed: Probed | None = None) -> None:
        if mode not in ("bwrap", "none"):
            raise ValueError(f"unknown sandbox mode {mode!r} (supported: bwrap, none)")
        self.mode = mode
        self.binary = binary
        self.hide = tuple(Path(p).resolve() for p in hide)
        self.hardened = hardened
        self.note = note
        self.probed = probed or probe_machine(mode)
        self.weaknesses = list(self.probed.weaknesses)  # what this sandbox cannot guarantee here, one sentence each
        self._filter, self._namespace = self.probed.filter, self.probed.namespace
        if mode == "none" and self._namespace is None:
            hide_own_environment()
        isolated = mode == "bwrap" or self._namespace is not None
        self.confinement = Confinement(mode, isolated, "; ".join([note, *self.weaknesses] if note else self.weaknesses))
        self._live: set[int] = set()
        self._lock = threading.Lock()

    def _argv(self, command: str | Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float, access: Access,
              seccomp_fd: int | None, relay: Forward | None = None, status_fd: int | None = None) -> list[str]:
        argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
        if self.mode == "bwrap":
            view = self.view(env, access.visible, relayed=relay is not None)
            view = HostView(view.hidden, (*view.exposed, *access.readable))
            helper = [] if relay is None else relay.prefix()
            confine = bwrap_argv(self.binary, cwd, cwd, access.network, view, seccomp_fd, self.hardened, status_fd)
            argv = [*confine, *helper, *argv]
        elif self._namespace is not None:
            argv = [*self._namespace, *argv]
        return guarded(limited(argv, timeout), self.probed.guard, os.getpid())

    def view(self, env: Mapping[str, str], visible: tuple[str, ...] = (), relayed: bool = False) -> HostView:
        """What of the host a command with ``env`` sees under bwrap, with more program folders ``visible``
        (``Access.visible``) and, ``relayed`` (``Access.forward`` without ``network``), the forward helper's
        interpreter's."""
        python = (os.path.dirname(PYTHON),) if relayed else ()
        return host_view(os.pathsep.join((env.get("PATH", os.defpath), *visible, *python)), self.hide)

    def run(self, command: str, cwd: Path, env: Mapping[str, str], bounds: Bounds, access: Access = NO_ACCESS,
            split: bool = False, stdin: bytes | None = None) -> CommandResult:
        """Run ``bash -c command`` in ``cwd`` with exactly ``env``, within ``bounds`` and ``access``
        (runner.sandbox.bounds); its stdin is ``stdin`` (written as the command reads it, then closed), or /dev/null
        when None.

        When ``bounds.timeout`` (seconds) passes or ``bounds.cancel`` is set, the command's whole process group gets
        SIGTERM, then SIGKILL after a short grace (under bwrap SIGKILL at once), and the result is ``timed_out``. Its
        processes run under ``runner.sandbox.confine.resource_limits`` and die with tooltrial. Under bwrap, ``cwd`` is
        the one writable host folder. With ``split``, stdout and stderr are read apart, each capped at
        ``bounds.output_limit`` bytes with a ``[... N bytes left out ...]`` marker (setup and verify records); without
        it they share one pipe, so a tool result keeps their interleaving. Raises CommandNotStarted when the machine or
        the sandbox did not start it (runner.sandbox.started), OSError when its own doing did (``cwd`` removed, a
        command line too long for the kernel), ValueError for a NUL byte in ``command`` or ``env``.
        """
        forward = access.forward if self.mode == "bwrap" and not access.network else None
        relay = None if forward is None else Forward(forward)
        status = Status() if self.mode == "bwrap" else None
        status_fd = None if status is None else status.fd
        filter_in = self._filter_in(access.network)
        argv = self._argv(command, cwd, env, bounds.timeout, access, filter_in, relay, status_fd)
        start = time.monotonic()
        reader, writer = os.pipe() if stdin is not None else (None, None)
        proc: subprocess.Popen[bytes] | None = None
        try:
            proc = _spawn(argv, cwd, env, split, reader, (filter_in, None if relay is None else relay.inside, status_fd))
            if relay is not None:
                relay.start()
        except BaseException as e:
            abandon(proc, writer, relay, status)
            cause = _start_failure(e, cwd)
            if cause is e:
                raise
            raise cause from e
        finally:
            for fd in (filter_in, reader):
                if fd is not None:
                    os.close(fd)
        feed = Feed(writer, stdin) if writer is not None and stdin is not None else None
        finished, started, capture, errors = self._watch(proc, bounds, start + bounds.timeout, feed, relay, status)
        cut = "left out" if split else "cut"
        if not started:
            raise not_started(capture.text(cut) + "\n" + (errors.text(cut) if errors else ""))
        return CommandResult(
            exit_code=proc.returncode if finished else None,
            output=capture.text(cut),
            timed_out=not finished,
            duration=time.monotonic() - start,
            stderr=None if errors is None else errors.text(cut),
        )

    def _filter_in(self, network: bool) -> int | None:
        """The read end of a pipe holding the seccomp filter, for bwrap to read; None when no filter applies."""
        if self._filter is None or network:
            return None
        filter_in, filter_out = os.pipe()
        os.write(filter_out, self._filter)  # bwrap reads the program from the inherited end; it fits the pipe's buffer
        os.close(filter_out)
        return filter_in

    def _watch(self, proc: subprocess.Popen[bytes], bounds: Bounds, deadline: float, feed: Feed | None,
               relay: Forward | None, status: Status | None) -> tuple[bool, bool, Capture, Capture | None]:
        """Supervise the started ``proc`` until it exits, ``deadline`` (``time.monotonic()``) passes or
        ``bounds.cancel`` is set, then close what it held: whether it finished by itself, whether the sandbox started
        it, and the captures of its stdout and (read apart) stderr."""
        assert proc.stdout is not None
        with self._lock:
            self._live.add(proc.pid)
        capture = Capture(bounds.output_limit)
        streams = {proc.stdout.fileno(): capture}
        errors: Capture | None = None
        if proc.stderr is not None:
            errors = streams[proc.stderr.fileno()] = Capture(bounds.output_limit)
        try:
            if status is not None:
                status.close_writer()
            # Nothing of a bwrap command is SIGTERM's to take: bwrap ignores it as its namespace's first process.
            finished = supervise(proc, streams, deadline, bounds.cancel, feed, term=self.mode != "bwrap")
            started = status is None or not finished or status.started()
        finally:
            if relay is not None:
                relay.stop()
            if status is not None:
                status.close()
            proc.stdout.close()
            if proc.stderr is not None:
                proc.stderr.close()
            with self._lock:
                self._live.discard(proc.pid)
        return finished, started, capture, errors

    def server_argv(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float,
                    network: bool, scratch: Path) -> list[str]:
        """The command line that starts program ``argv`` in ``cwd`` confined as ``run`` confines a command, for a
        caller that spawns it itself and keeps it running (an MCP server over stdio).

        ``env -i`` gives it exactly ``env`` whatever the spawner adds; ``timeout`` (seconds) sets its resource
        limits; it dies with the thread that spawns it. The caller spawns it in a session of its own and kills that
        process group when done. Under bwrap the seccomp filter is written to ``scratch`` (a file outside the
        workspace, which the caller deletes once the program stopped) and given to bwrap on descriptor 3 by a shell
        redirection, as the spawner passes on no descriptor.
        """
        seccomp_fd = 3 if self._filter is not None and not network else None
        wrapped = self._argv(argv, cwd, env, timeout, Access(network=network), seccomp_fd)
        clean = [shutil.which("env") or "env", "-i", *(f"{name}={value}" for name, value in env.items())]
        if seccomp_fd is None:
            return [*clean, *wrapped]
        scratch.write_bytes(self._filter or b"")
        return [*clean, "sh", "-c", 'exec "$@" 3<"$0"', str(scratch), *wrapped]

    def kill_all(self) -> None:
        """SIGKILL the process group of every command still running (for an immediate exit)."""
        with self._lock:
            live = list(self._live)
        for pgid in live:
            signal_group(pgid, signal.SIGKILL)


def _spawn(argv: list[str], cwd: Path, env: Mapping[str, str], split: bool, stdin: int | None,
           fds: tuple[int | None, ...]) -> subprocess.Popen[bytes]:
    """``argv`` started in ``cwd`` with exactly ``env`` in a session of its own, reading descriptor ``stdin`` (or
    /dev/null), its stdout piped (stderr too, apart with ``split``), inheriting ``fds`` (None entries left out)."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL if stdin is None else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if split else subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(fd for fd in fds if fd is not None),
    )


def _start_failure(error: BaseException, cwd: Path) -> BaseException:
    """What a command that did not start in ``cwd`` raises for ``error``: ``error`` itself, or the error it means
    (runner.sandbox.started.start_error; CommandNotStarted for a relay whose thread the machine refused)."""
    if isinstance(error, RuntimeError):  # the relay's thread refused
        return CommandNotStarted(f"the machine is out of processes or memory: {error}")
    return start_error(error, cwd) if isinstance(error, OSError) else error
