"""Ctrl-C during a suite: the first press stops it gently, the second at once.

The SIGINT handler only sets an Event and writes one line with ``os.write``
(no locks, safe inside a signal handler); the engine sees the Event, starts no
new run and stops running ones at their next step. A second press kills every
command still running and ends the process with exit code 2 without waiting
for anything.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Self

from runner.errors import ExitCode

FIRST = b"\ninterrupted: finishing runs in progress (they stop at their next step); Ctrl-C again to quit now\n"
SECOND = b"\ninterrupted again: quitting now\n"


class CtrlC:
    """Context manager installing the two-stage SIGINT handler (main thread only; elsewhere a no-op).

    Args:
        event: set on the first SIGINT.
        on_second: called on the second SIGINT before ``os._exit(2)`` (e.g. ``Sandbox.kill_all``).
    """

    def __init__(self, event: threading.Event, on_second: Callable[[], None]) -> None:
        self.event = event
        self.on_second = on_second
        self._previous: Callable[..., object] | int | None = None
        self._installed = False

    def __enter__(self) -> Self:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._installed = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self.event.is_set():
            self.event.set()
            os.write(2, FIRST)
            return
        os.write(2, SECOND)
        self.on_second()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, RuntimeError):  # closed, or busy in the interrupted frame
                pass
        os._exit(ExitCode.INTERRUPTED)
