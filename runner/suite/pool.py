"""A bounded thread pool for independent jobs that can be told to stop scheduling.

Jobs are numbered 0..count-1 (their plan order). At most ``workers`` run at
once, each on a thread of its own; no more are started than can run, so setting ``stop``
leaves the rest unstarted. Results reach ``on_result`` in the calling thread as jobs finish;
``InOrder`` turns that into plan order. A thread the machine refuses (runner.suite.threads)
holds its job back until a running one ends; with none running, the job is given up.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from runner.errors import MachineBusy
from runner.suite.threads import TRIES, start

T = TypeVar("T")

_POLL = 0.1  # seconds between looks at ``stop`` while no job finishes


def run_pool(
    work: Callable[[int], T],
    count: int,
    workers: int,
    stop: threading.Event,
    on_result: Callable[[int, T], None] = lambda index, result: None,
    unstarted: Callable[[int, MachineBusy], T] | None = None,
) -> set[int]:
    """Call ``work(i)`` for i in 0..count-1 on at most ``workers`` threads.

    Once ``stop`` is set no new job starts; the running ones are waited for.
    ``on_result(i, result)`` is called in the calling thread as each job finishes; the pool keeps
    no result (a suite's records would fill memory), only which jobs ran.
    Returns the index of every job that ran. An exception raised by ``work``
    (or in the caller, e.g. KeyboardInterrupt) sets ``stop`` and propagates once
    the running jobs are done. A job whose thread the machine refuses waits for a running job to
    end and is started again; when none is running and its start is refused each time
    (runner.suite.threads.start), ``unstarted(i, error)`` is its result, given to ``on_result``
    (without ``unstarted``, the MachineBusy propagates as ``work``'s error would).
    """
    ran: set[int] = set()
    finished: queue.SimpleQueue[tuple[int, bool, Any]] = queue.SimpleQueue()
    running: dict[int, threading.Thread] = {}
    submitted = 0

    def job(index: int) -> None:
        try:
            finished.put((index, True, work(index)))
        except BaseException as e:  # noqa: BLE001 (handed to the calling thread, which raises it)
            finished.put((index, False, e))

    try:
        while running or (submitted < count and not stop.is_set()):
            while submitted < count and len(running) < workers and not stop.is_set():
                thread = threading.Thread(target=job, args=(submitted,), name=f"tooltrial-run-{submitted}", daemon=True)
                try:
                    start(thread, 1 if running else TRIES)
                except MachineBusy as e:
                    if running:  # one ending gives its thread back: try again then
                        break
                    if unstarted is None:
                        raise
                    on_result(submitted, unstarted(submitted, e))
                else:
                    running[submitted] = thread
                submitted += 1
            try:
                index, ok, value = finished.get(timeout=_POLL)
            except queue.Empty:
                continue
            running.pop(index).join()
            if not ok:
                raise value
            ran.add(index)
            on_result(index, value)
    except BaseException:
        stop.set()
        for thread in running.values():
            thread.join()
        raise
    return ran


class InOrder(Generic[T]):
    """Passes ``(index, result)`` pairs on to ``emit`` in index order, holding back any that
    arrive before an earlier index; ``flush`` passes on the held ones, in order, skipping gaps."""

    def __init__(self, emit: Callable[[int, T], None]) -> None:
        self.emit = emit
        self.held: dict[int, T] = {}
        self.next = 0

    def __call__(self, index: int, result: T) -> None:
        self.held[index] = result
        while self.next in self.held:
            self.emit(self.next, self.held.pop(self.next))
            self.next += 1

    def flush(self) -> None:
        for index in sorted(self.held):
            self.emit(index, self.held.pop(index))
