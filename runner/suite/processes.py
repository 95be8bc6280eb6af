"""The process executor: a suite's runs spread over worker processes (runner.suite.worker), so runs use
every core rather than the one the interpreter lock allows a process.

Workers start from a fork server (``forkserver``: never a fork of this threaded process) that has
imported tooltrial once. Each gets its share of ``-j`` as threads, and builds its own sandbox,
providers, breakers and rate limiters from the suite's WorkerSetup (runner.suite.portable). Everything
else stays here: the plan, the per-provider slots (taken before a run is sent, given back when its
record returns), the records in plan order and the results folder, the ``--live`` listener (each
worker's events are forwarded to it). Ctrl-C sets the cancel event: no run is sent after it and each
worker is told to stop its runs at their next step; a worker that dies (OOM, SIGKILL) makes its runs
``internal`` errors that say so (unfinished ones once the suite is interrupted), and a fresh worker takes
its place.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing import forkserver, util
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess

from runner.kinds import ErrorKind
from runner.providers.litellm_load import set_switches
from runner.run.execute import internal_error
from runner.run.options import Arm
from runner.run.record import RunRecord
from runner.scoring.metrics import fill_metrics
from runner.suite.executors import CANCELLED
from runner.suite.options import SuiteOptions
from runner.suite.portable import RunTask, WorkerSetup
from runner.suite.slots import Slots
from runner.suite.worker import serve

_POLL = 0.1  # seconds between looks at the cancel event while no message comes
_QUIT = 10.0  # seconds a worker has to end after ``quit`` before it is killed
_SOCKET_PATH = 107  # bytes of a Unix socket's path (sun_path less its NUL), man 7 unix
_SOCKET_NAMES = len("/pymp-xxxxxxxx/listener-xxxxxxxx")  # what multiprocessing adds to the temp folder's path


def warm_up(live: bool) -> None:
    """Start the fork server now (it imports tooltrial, and litellm when ``live``), so that its imports overlap
    this process's own (the providers' resolving, which loads litellm) instead of following them. Call it on
    the main thread before any run starts: with ``live`` it sets litellm's switches in the environment the
    server inherits (runner.providers.litellm_load.set_switches)."""
    if live:
        set_switches()
    short_socket_folder()
    multiprocessing.get_context("forkserver").set_forkserver_preload(_preload(live))
    forkserver.ensure_running()


def short_socket_folder() -> None:
    """Give multiprocessing a folder of its own under the system's temp folder when ``TMPDIR`` is too long for
    the fork server's Unix socket in it ("AF_UNIX path too long", a crash of every ``--workers`` run). Python
    3.14's ``multiprocessing.util`` falls back the same way; 3.11 to 3.13 do not, hence its per-process
    ``tempdir`` setting here."""
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]  # typeshed lacks it
    if config.get("tempdir") is not None or len(os.fsencode(tempfile.gettempdir())) + _SOCKET_NAMES <= _SOCKET_PATH:
        return
    base = next((d for d in ("/tmp", "/var/tmp", "/usr/tmp") if os.path.isdir(d) and os.access(d, os.W_OK)), None)
    if base is None:
        return  # nowhere shorter: the start fails as before, with the system's own words
    folder = tempfile.mkdtemp(prefix="pymp-", dir=base)
    util.Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=-100)
    config["tempdir"] = folder


def _preload(live: bool) -> list[str]:
    """What the fork server imports once for all workers: the worker's modules, and litellm for a live arm."""
    return ["runner.suite.worker", *(["litellm"] if live else [])]


class WorkerDied(RuntimeError):
    """A worker process ended while it had runs: what their records say."""


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    capacity: int  # its threads: runs at once
    running: dict[int, float] = field(default_factory=dict)  # job -> when it was sent (time.monotonic())


class Processes:
    """``workers`` worker processes sharing ``options.jobs`` runs at once (worker i gets ``jobs // workers``
    threads, one more for the first ``jobs % workers``). Meets runner.suite.executors.Executor."""

    def __init__(self, arms: Sequence[Arm], options: SuiteOptions, slots: Slots, workers: int) -> None:
        self.options, self.slots = options.run, slots
        self.setup = WorkerSetup.from_options(options.run, arms, options.jobs)
        self.shares = [options.jobs // workers + (1 if i < options.jobs % workers else 0) for i in range(workers)]
        short_socket_folder()
        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(_preload("litellm" in sys.modules))  # if warm_up has not started it

    def __call__(self, tasks: Sequence[RunTask],
                 on_result: Callable[[int, RunRecord], None]) -> None:
        waiting: dict[str, deque[int]] = {}  # provider -> its jobs not yet sent, in plan order
        for job, task in enumerate(tasks):
            waiting.setdefault(task.arm.provider.name, deque()).append(job)
        queued: dict[int, float] = {}  # job -> seconds it waited for its provider's slot
        blocked: dict[str, float] = {}  # provider -> since when its next job waits for a slot
        workers = [self._start(share) for share in self.shares]
        told = False
        try:
            while True:
                if self.options.cancel.is_set() and not told:
                    self._tell(workers, ("stop",))
                    told = True
                if not self.options.cancel.is_set():
                    self._send(tasks, workers, waiting, queued, blocked)
                if not any(w.running for w in workers) and (told or not any(waiting.values())):
                    return
                for worker in self._ready(workers):
                    for job, record in self._receive(worker, tasks):
                        self.slots.give(tasks[job].arm.provider.name)
                        record.queued = queued.pop(job, 0.0)
                        on_result(job, record)
                    if not worker.process.is_alive() and not worker.running and not told:
                        workers[workers.index(worker)] = self._start(worker.capacity)
        except BaseException:
            self.options.cancel.set()
            self._tell(workers, ("stop",))
            raise
        finally:
            self._close(workers)

    def _start(self, threads: int) -> _Worker:
        parent, child = self.context.Pipe()
        process = self.context.Process(target=serve, args=(child, self.setup, threads), name="tooltrial-worker",
                                       daemon=True)
        process.start()
        child.close()  # this process keeps only its own end: the worker's death closes the pipe
        return _Worker(process, parent, threads)

    def _send(self, tasks: Sequence[RunTask], workers: list[_Worker], waiting: dict[str, deque[int]],
              queued: dict[int, float], blocked: dict[str, float]) -> None:
        """Send jobs, earliest first, while a worker has a free thread and a job's provider a free slot."""
        while True:
            worker = max((w for w in workers if w.process.is_alive()), key=lambda w: w.capacity - len(w.running),
                         default=None)
            if worker is None or len(worker.running) >= worker.capacity:
                return
            now = time.monotonic()
            ready = sorted((jobs[0], name) for name, jobs in waiting.items() if jobs)
            for job, name in ready:
                if self.slots.take(name):
                    waiting[name].popleft()
                    queued[job] = now - blocked.pop(name, now)
                    break
                blocked.setdefault(name, now)
            else:
                return
            worker.running[job] = now
            worker.conn.send(("run", job, tasks[job]))

    def _ready(self, workers: list[_Worker]) -> list[_Worker]:
        by_conn = {w.conn: w for w in workers if w.running or w.process.is_alive()}
        return [by_conn[conn] for conn in wait(list(by_conn), timeout=_POLL)]  # type: ignore[index]

    def _receive(self, worker: _Worker, tasks: Sequence[RunTask]) -> list[tuple[int, RunRecord]]:
        """The records ``worker`` sent (forwarding its events to the listener); when it has died, one
        internal error for each run it had."""
        try:
            kind, *rest = worker.conn.recv()
        except (EOFError, OSError):
            return self._lost(worker, tasks)
        if kind == "event":
            if self.options.listener is not None:
                self.options.listener(*rest)
            return []
        job, record = rest
        del worker.running[job]
        return [(job, record)]

    def _lost(self, worker: _Worker, tasks: Sequence[RunTask]) -> list[tuple[int, RunRecord]]:
        worker.process.join(timeout=_QUIT)
        code = worker.process.exitcode
        how = f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exited ({code})"
        lost = []
        for job, sent in sorted(worker.running.items()):
            task = tasks[job]
            kept = {"sandbox": self.options.sandbox.confinement, "duration": time.monotonic() - sent}
            if self.options.cancel.is_set():  # interrupted: not finished, for --resume, rather than a result
                record = task.unrun(ErrorKind.CANCELLED, CANCELLED, **kept)
            else:
                record = task.unrun(ErrorKind.INTERNAL, "", **kept)
                internal_error(record, WorkerDied(f"worker process {worker.process.pid} {how} while this run was "
                                                  "going (out of memory?); the suite went on"))
                fill_metrics(task.case, record)
            lost.append((job, record))
        worker.running.clear()
        worker.conn.close()
        return lost

    def _tell(self, workers: list[_Worker], message: tuple[str]) -> None:
        for worker in workers:
            try:
                worker.conn.send(message)
            except (OSError, ValueError):  # it is gone, or its pipe closed: nothing to tell
                pass

    def _close(self, workers: list[_Worker]) -> None:
        """Tell every worker to quit, wait for it (``_QUIT`` seconds at most), then kill what is left."""
        self._tell(workers, ("quit",))
        deadline = time.monotonic() + _QUIT
        for worker in workers:
            worker.process.join(timeout=max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
