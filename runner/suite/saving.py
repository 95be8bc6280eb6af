"""Finished runs handed to one thread of their own to be saved, so the executor's loop never waits for
the disk.

The loop that sends runs to their threads or worker processes and takes their records back is one
thread; each record's save ends in an fsync (0.4 ms on a quiet disk, about 3 ms on a busy one), so
saving on that thread held every worker's next run back while it waited. ``Saving`` takes each record
at once and handles it on its own thread, in the order given (save, then keep, then show, as
runner.suite.engine.run_matrix's ``finished`` does); at most ``depth`` records wait, so a slow disk
slows the suite rather than filling memory. The second Ctrl-C, which ends the process at once, first
lets every open ``Saving`` finish what it holds (``drain``): a run that finished is not lost.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar, cast

from runner.suite.threads import start

T = TypeVar("T")
_END = object()  # put by ``close``: nothing more comes
_open: set[Saving] = set()  # every Saving not yet closed, for ``drain``
_open_lock = threading.RLock()  # reentrant: drain may run in a signal handler that interrupted a holder


class Saving(Generic[T]):
    """Calls ``handle(job, item)`` for each ``put`` on a thread of its own, in order.

    When ``handle`` raises, ``cancel`` is set (the suite starts no more runs), the items after it are
    dropped, and ``close`` raises the exception.
    """

    def __init__(self, handle: Callable[[int, T], None], cancel: threading.Event, depth: int = 64) -> None:
        self.handle, self.cancel = handle, cancel
        self.error: BaseException | None = None
        self._queue: queue.Queue[tuple[int, T] | object] = queue.Queue(maxsize=depth)
        self._thread = threading.Thread(target=self._serve, name="tooltrial-save", daemon=True)
        with _open_lock:
            _open.add(self)
        start(self._thread)  # MachineBusy (exit 6, before any run) when the machine refuses it each time

    def put(self, job: int, item: T) -> None:
        """Hand ``item`` over; waits while ``depth`` items wait to be handled."""
        self._queue.put((job, item))

    def close(self) -> None:
        """Wait until every item put is handled, then raise the exception ``handle`` raised, if any."""
        self._queue.put(_END)
        self._thread.join()
        with _open_lock:
            _open.discard(self)
        if self.error is not None:
            raise self.error

    def _serve(self) -> None:
        while True:
            got = self._queue.get()
            try:
                if got is _END:
                    return
                if self.error is None:
                    job, item = cast(tuple[int, T], got)
                    self.handle(job, item)
            except BaseException as e:  # noqa: BLE001 (handed to close(); the suite stops)
                self.error = e
                self.cancel.set()
            finally:
                self._queue.task_done()


def drain(timeout: float) -> None:
    """Wait, ``timeout`` seconds at most in all, until every open Saving has handled what it holds
    (the second Ctrl-C, just before the process ends)."""
    deadline = time.monotonic() + timeout
    with _open_lock:
        open_now = list(_open)
    for saving in open_now:
        while saving._queue.unfinished_tasks and saving._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
