"""The endpoint's reads of a connection against a deadline (runner.endpoint.handler): a socket's own
timeout bounds each read, so a client that sends a byte now and then would never pass it; this bounds the
time all the reads of a request's head, or of its body, may take together."""

from __future__ import annotations

import io
import socket
import time
from typing import Any


class Stalled(Exception):
    """The deadline passed before a read got its bytes; ``came``: the bytes that arrived since it was set."""

    def __init__(self, came: int) -> None:
        super().__init__(f"{came} bytes came before the deadline")
        self.came = came


class TimedSocket(io.RawIOBase):
    """A connected socket as a raw stream (wrap it in io.BufferedReader) whose reads end by a deadline.

    ``bound(seconds, keep)`` starts one: from then ``came`` counts the bytes read and, with ``keep``,
    ``kept`` holds them; a read that would end past the deadline raises Stalled. Closing it leaves the
    socket open (its server closes it).
    """

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline: float | None = None
        self.came = 0
        self.kept = bytearray()
        self._keep = False

    def bound(self, seconds: float | None, keep: bool = False) -> None:
        """Reads from now end within ``seconds`` in all (None: no bound); count, and with ``keep`` keep, their bytes."""
        self.deadline = None if seconds is None else time.monotonic() + seconds
        self.came, self.kept, self._keep = 0, bytearray(), keep

    def readable(self) -> bool:
        """Always: it is read, never written."""
        return True

    def readinto(self, buffer: Any) -> int:
        """Receive into ``buffer``; the byte count, 0 at the end of the stream. Raises Stalled past the deadline."""
        if self.deadline is None:
            got = self.sock.recv_into(buffer)
        else:
            wait = self.deadline - time.monotonic()
            if wait <= 0:
                raise Stalled(self.came)
            before = self.sock.gettimeout()
            self.sock.settimeout(wait)
            try:
                got = self.sock.recv_into(buffer)
            except TimeoutError:
                raise Stalled(self.came) from None
            finally:
                self.sock.settimeout(before)
        self.came += got
        if self._keep:
            self.kept += memoryview(buffer)[:got]
        return got
