"""A worker process of the process executor (runner.suite.processes): runs the tasks its parent sends on
threads of its own, and sends back each record, and with ``--live`` each event, as it happens.

Messages from the parent: ``("run", job, RunTask)``, ``("stop",)`` (stop every run at its next step, as
Ctrl-C does), ``("quit",)`` (no more tasks: end once the running ones have). To the parent:
``("record", job, RunRecord)`` and ``("event", RunRef, Event)``. The worker ignores SIGINT (Ctrl-C
reaches the parent, which tells it to stop), gets SIGKILL when the process that started it dies, and
when its pipe to the parent closes, kills its commands and exits at once: it never outlives the run.
Each run has a thread of its own; one the machine refuses each time is sent back as that run's
``start_failed`` error (runner.suite.threads).
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import threading
from multiprocessing.connection import Connection
from typing import Any

from runner.errors import MachineBusy
from runner.run.events import Event, RunRef
from runner.run.execute import internal_error
from runner.suite.executors import not_started
from runner.suite.portable import Runner, RunTask, WorkerSetup
from runner.suite.threads import start

_PR_SET_PDEATHSIG = 1  # prctl(2)


def serve(conn: Connection, setup: WorkerSetup, threads: int) -> None:
    """The worker's main: ``threads`` runs at once, until the parent says ``quit`` (returns) or goes (exits 1)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # the fork server's imports: no collection walks them (nor copies their pages)
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    lock = threading.Lock()
    cancel = threading.Event()

    def send(message: tuple[Any, ...]) -> None:
        with lock:
            conn.send(message)

    def tell(run: RunRef, event: Event) -> None:
        send(("event", run, event))

    runner = Runner(setup.options(cancel, tell if setup.live else None), setup.arms, threads)

    def one(job: int, task: RunTask) -> None:
        record = runner.run(task)
        try:
            send(("record", job, record))
        except (OSError, EOFError):  # the parent is gone: the main thread sees it too
            return
        except Exception as e:  # noqa: BLE001 (a record that does not pickle is a bug: send the run as its internal error)
            internal_error(record, e, clear=True)
            send(("record", job, record))

    running: list[threading.Thread] = []
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent died (a second Ctrl-C, a kill): stop everything now
            cancel.set()
            runner.options.sandbox.kill_all()
            os._exit(1)
        if message[0] == "run":
            running = [thread for thread in running if thread.is_alive()]
            thread = threading.Thread(target=one, args=message[1:], name=f"tooltrial-run-{message[1]}", daemon=True)
            try:
                start(thread)
            except MachineBusy as e:  # this run's failure, not the worker's
                send(("record", message[1], not_started(message[2], e, runner.options.sandbox.confinement)))
                continue
            running.append(thread)
        elif message[0] == "stop":
            cancel.set()
        else:
            break
    for thread in running:
        thread.join()
