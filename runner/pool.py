"""A bounded thread pool for independent jobs that can be told to stop scheduling.

Jobs are numbered 0..count-1 (their plan order). At most ``workers`` run at
once; no more are submitted than can run, so setting ``stop`` leaves the rest
unstarted. Results reach ``on_result`` in the main thread, either as jobs finish
or in plan order (held back until every earlier job is done).
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, TypeVar

T = TypeVar("T")

_POLL = 0.1  # seconds between looks at ``stop`` while no job finishes


def run_pool(
    work: Callable[[int], T],
    count: int,
    workers: int,
    stop: threading.Event,
    on_result: Callable[[int, T], None] = lambda index, result: None,
    ordered: bool = False,
) -> dict[int, T]:
    """Call ``work(i)`` for i in 0..count-1 on at most ``workers`` threads.

    Once ``stop`` is set no new job starts; the running ones are waited for.
    ``on_result(i, result)`` is called in the calling thread, in finish order, or
    in plan order when ``ordered`` (after a stop, the held-back results follow in
    plan order, skipping jobs never run). Returns ``{i: result}`` of every job
    that ran. An exception raised by ``work`` (or in the caller, e.g.
    KeyboardInterrupt) sets ``stop`` and propagates once running jobs are done.
    """
    results: dict[int, T] = {}
    held: dict[int, T] = {}
    emitted = 0
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
                    results[index] = future.result()
                    if not ordered:
                        on_result(index, results[index])
                        continue
                    held[index] = results[index]
                    while emitted in held:
                        on_result(emitted, held.pop(emitted))
                        emitted += 1
        except BaseException:
            stop.set()
            raise
    for index in sorted(held):
        on_result(index, held[index])
    return results
