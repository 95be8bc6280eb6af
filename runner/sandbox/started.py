"""Whether a command was started at all: a command the machine or the sandbox could not start is an
infrastructure failure of its run, never the command's own result, and never a reason to run it unconfined.

Under bubblewrap, bwrap's JSON status (``--json-status-fd``) gets an ``exit-code`` line only when the command
itself was started: a bwrap that failed to set the sandbox up (``Creating new namespace failed: Resource
temporarily unavailable``) writes none, whatever the output says, and the command cannot write one for it.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
from pathlib import Path

from runner.sandbox.forward import Forward
from runner.sandbox.process import signal_group
from runner.sandbox.trial import transient

_OWN = frozenset((errno.ENOENT, errno.ENOTDIR, errno.EACCES))  # its workspace removed or closed by a command


class CommandNotStarted(Exception):
    """A command that never ran (the machine out of processes or memory, bubblewrap failing to set up, a thread it
    needs refused): its run is an error of kind ``start_failed`` (infrastructure), the reason in the message."""


def start_error(error: OSError, cwd: Path) -> OSError | CommandNotStarted:
    """What ``error``, raised while starting a command in ``cwd``, means: the command's own doing, returned as is (its
    command line too long for the kernel; its workspace removed or closed, which a command can do without bubblewrap),
    else a CommandNotStarted saying why (the machine out of processes or memory, a program of the sandbox missing)."""
    if error.errno == errno.E2BIG or (error.errno in _OWN and str(error.filename) == str(cwd)):
        return error
    why = "the machine is out of processes or memory" if transient(error) else "the sandbox could not be started"
    return CommandNotStarted(f"{why}: {error}")


class Status:
    """A pipe for bwrap's ``--json-status-fd``: ``fd`` is the end bwrap inherits (``close_writer`` once it is
    started), ``started`` reads what it wrote once it has exited."""

    def __init__(self) -> None:
        self._reader, self.fd = os.pipe()
        self._writer_open = True

    def close_writer(self) -> None:
        """Close this process's copy of the end bwrap writes to (once only)."""
        if self._writer_open:
            self._writer_open = False
            os.close(self.fd)

    def started(self) -> bool:
        """Whether bwrap, now exited, started the command (its status has an ``exit-code`` line)."""
        self.close_writer()
        os.set_blocking(self._reader, False)
        data = b""
        try:
            while chunk := os.read(self._reader, 65_536):
                data += chunk
        except BlockingIOError:  # a copy of the writing end is still open somewhere: what came is all
            pass
        return b'"exit-code"' in data

    def close(self) -> None:
        """Close both ends."""
        self.close_writer()
        os.close(self._reader)


def not_started(output: str) -> CommandNotStarted:
    """The CommandNotStarted of a command the sandbox (the start-up guard, bubblewrap) did not start, saying why with
    the last line it printed."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return CommandNotStarted(f"the sandbox did not start the command: {lines[-1] if lines else 'no reason given'}")


def abandon(proc: subprocess.Popen[bytes] | None, writer: int | None, relay: Forward | None,
            status: Status | None) -> None:
    """Undo a start that failed half-way: the process killed and reaped (its group: nothing of it stays), the stdin
    pipe, the relay and the status pipe closed."""
    if proc is not None:
        signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    if writer is not None:
        os.close(writer)
    if relay is not None:
        relay.stop()
    if status is not None:
        status.close()
