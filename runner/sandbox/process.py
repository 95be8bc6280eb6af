"""One command's process once started: its stdin fed, its output read and capped (head and tail kept),
its exit seen without reaping it, its process group killed, and text capped the same way.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping

from runner.text import elide

_CHUNK = 65_536  # bytes per read


POLL = 0.05  # seconds between checks on the process while its output is quiet


_GRACE = 0.5  # seconds between SIGTERM and SIGKILL


_LINGER = 0.25  # seconds a finished command's background children may hold the pipe


class Capture:
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

    def text(self, cut: str = "cut") -> str:
        """What was kept, decoded as UTF-8 (bad bytes replaced), with a ``[... N bytes <cut> ...]``
        marker line between head and tail when some bytes were dropped."""
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return elide(head, tail, self.dropped, "bytes", cut) if self.dropped else head + tail


class Feed:
    """Bytes written to a command's stdin (a pipe's write end, made non-blocking here) as it reads
    them, then the pipe closed: the command sees end of file. A command that exits or closes its
    stdin first ends the feed (the rest is dropped)."""

    def __init__(self, fd: int, data: bytes) -> None:
        self.fd = fd
        self.data = memoryview(data)
        self.closed = False
        os.set_blocking(fd, False)

    def step(self) -> bool:
        """Write what the pipe takes now, up to ``_CHUNK`` bytes; True once all is written or the
        reader is gone (then ``close``)."""
        try:
            self.data = self.data[os.write(self.fd, self.data[:_CHUNK]):]
        except BlockingIOError:
            pass
        except BrokenPipeError:
            self.data = self.data[:0]
        return not self.data

    def close(self) -> None:
        """Close the pipe (the command reads end of file); once only."""
        if not self.closed:
            self.closed = True
            os.close(self.fd)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to a whole process group; a group already gone is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def drain(streams: Mapping[int, Capture], seconds: float) -> None:
    """Read what is left on each fd of ``streams`` into its capture until end of file on every one,
    or for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    with selectors.DefaultSelector() as selector:
        for fd in streams:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(left):
                if chunk := os.read(key.fd, _CHUNK):
                    streams[key.fd].feed(chunk)
                else:
                    selector.unregister(key.fd)


def _pidfd(pid: int) -> int | None:
    """A pidfd of process ``pid`` (readable once it exits), or None where the kernel has none (before 5.3)."""
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the command's own process has exited, without reaping it: while it is a zombie
    its process group id cannot be given to another process, so the group may still be killed."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped already
        return True


def pump(
    proc: subprocess.Popen[bytes], streams: Mapping[int, Capture], deadline: float,
    cancel: threading.Event | None = None, feed: Feed | None = None,
) -> bool:
    """Read the output (each fd of ``streams`` into its capture: stdout, and stderr when apart) and
    write ``feed`` to the command's stdin until the command exits; False when ``deadline``
    (monotonic) passes or ``cancel`` is set first (it is looked at every ``POLL`` seconds at most).
    The caller closes ``feed``.

    When the command's own process exits, its whole process group is killed (background jobs,
    ``nohup``, double forks that kept the group) and what is left in the pipe is read for at
    most ``_LINGER`` seconds. The caller reaps the process.
    """
    pidfd = _pidfd(proc.pid)
    open_fds = set(streams)
    try:
        with selectors.DefaultSelector() as selector:
            for fd in streams:
                selector.register(fd, selectors.EVENT_READ)
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ)
            if feed is not None and not feed.closed:
                if feed.data:
                    selector.register(feed.fd, selectors.EVENT_WRITE)
                else:
                    feed.close()
            while (now := time.monotonic()) < deadline:
                if cancel is not None and cancel.is_set():
                    return False
                for key, _ in selector.select(min(deadline - now, POLL)):
                    if feed is not None and key.fd == feed.fd and not feed.closed:
                        if feed.step():
                            selector.unregister(key.fd)
                            feed.close()
                        continue
                    if key.fd not in open_fds:
                        continue
                    if chunk := os.read(key.fd, _CHUNK):
                        streams[key.fd].feed(chunk)
                    else:  # end of output: every writer is gone
                        selector.unregister(key.fd)
                        open_fds.discard(key.fd)
                if _exited(proc):
                    signal_group(proc.pid, signal.SIGKILL)
                    if open_fds:
                        drain({fd: streams[fd] for fd in open_fds}, _LINGER)
                    return True
            return False
    finally:
        if pidfd is not None:
            os.close(pidfd)


def supervise(
    proc: subprocess.Popen[bytes], streams: Mapping[int, Capture], deadline: float,
    cancel: threading.Event | None = None, feed: Feed | None = None, term: bool = True,
) -> bool:
    """``pump`` the command, then see it gone: True when it exited by itself; False when ``deadline``
    or ``cancel`` came first, after its process group got SIGTERM (when ``term``), then SIGKILL after
    ``_GRACE`` seconds, and what was left in the pipes was read. Either way ``feed`` is closed and the
    process reaped (its group killed first should anything raise)."""
    try:
        finished = pump(proc, streams, deadline, cancel, feed)
        if not finished:
            if term:
                signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(_GRACE)
                except subprocess.TimeoutExpired:
                    pass
            signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
            drain(streams, POLL)
        return finished
    finally:
        if feed is not None:
            feed.close()
        if proc.poll() is None:
            signal_group(proc.pid, signal.SIGKILL)
        proc.wait()
