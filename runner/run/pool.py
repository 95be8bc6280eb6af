"""A bounded thread pool for independent jobs that can be told to stop scheduling.

Jobs are numbered 0..count-1 (their plan order). At most ``workers`` run at
once; no more are submitted than can run, so setting ``stop`` leaves the rest
unstarted. Results reach ``on_result`` in the calling thread as jobs finish;
``InOrder`` turns that into plan order.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Generic, TypeVar

T = TypeVar("T")

_POLL = 0.1  # seconds between looks at ``stop`` while no job finishes


def run_pool(
    work: Callable[[int], T],
    count: int,
    workers: int,
    stop: threading.Event,
    on_result: Callable[[int, T], None] = lambda index, result: None,
) -> set[int]:
    """Call ``work(i)`` for i in 0..count-1 on at most ``workers`` threads.

    Once ``stop`` is set no new job starts; the running ones are waited for.
    ``on_result(i, result)`` is called in the calling thread as each job finishes; the pool keeps
    no result (a suite's records would fill memory), only which jobs ran.
    Returns the index of every job that ran. An exception raised by ``work``
    (or in the caller, e.g. KeyboardInterrupt) sets ``stop`` and propagates once
    the running jobs are done.
    """
    ran: set[int] = set()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tooltrial-run") as pool:
        running: dict[Future[T], int] = {}
        submitted = 0
        try:
            while running or (submitted < count and not stop.is_set()):
                while submitted < count and len(running) < workers and not stop.is_set():
                    running[pool.submit(work, submitted)] = submitted
                    submitted += 1
                done, _ = wait(running, timeout=_POLL, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=running.__getitem__):
                    index = running.pop(future)
                    result = future.result()
                    ran.add(index)
                    on_result(index, result)
        except BaseException:
            stop.set()
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
