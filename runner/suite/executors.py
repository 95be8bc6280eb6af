"""Where a suite's runs go: the executor, chosen once per matrix (``run --executor``, ``--workers``).

Every executor takes the runs left to do (runner.suite.portable.RunTask, numbered 0..n-1 in plan order),
keeps at most ``jobs`` going at once and each provider's ``max_concurrency`` (runner.suite.slots, held
in this process), hands each record to ``on_result`` in the calling thread as it finishes, and starts
no more once the cancel event is set. ``Threads`` runs them on threads of this process; the process
executor (runner.suite.processes) on worker processes, each with its own threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Protocol

from runner.errors import MachineBusy
from runner.kinds import ErrorKind
from runner.run.options import Arm
from runner.run.record import RunRecord
from runner.sandbox.command import Confinement
from runner.scoring.metrics import fill_metrics
from runner.suite.options import SuiteOptions
from runner.suite.pool import run_pool
from runner.suite.portable import Runner, RunTask
from runner.suite.slots import Slots

# The plan size from which ``--workers auto`` starts worker processes. On a 2-core machine benchmarks/executors.py
# (l) puts 2 workers 1.08x ahead of threads at 200 scripted runs, 1.17x at 500 and 1.33x at 1,000, and (k) 1.1x
# at 200 live ones: below about 500 runs the workers' start (and their own copy of litellm) is most of what they win.
AUTO_MIN_RUNS = 500
CANCELLED = "cancelled: the suite was interrupted"  # the cause of a run the interruption kept from starting


class Executor(Protocol):
    """Runs ``tasks`` (job i is ``tasks[i]``), calling ``on_result(i, record)`` in the calling thread as each
    ends, and keeps none of them (a suite's records need not stay in memory). Jobs the cancel event stopped
    before they started get no call, or records of error kind ``cancelled``. An exception in the caller (from ``on_result``) stops it,
    once the running jobs have ended, and propagates."""

    def __call__(self, tasks: Sequence[RunTask],
                 on_result: Callable[[int, RunRecord], None]) -> None: ...


class Threads:
    """The runs on ``options.jobs`` threads of this process (runner.suite.pool), one Runner shared by all:
    one breaker and rate limiter per provider. A run waits for its provider's slot in its thread, and
    records that wait as ``queued``."""

    def __init__(self, arms: Sequence[Arm], options: SuiteOptions, slots: Slots) -> None:
        self.runner, self.options, self.slots = Runner(options.run, arms, options.jobs), options, slots

    def __call__(self, tasks: Sequence[RunTask],
                 on_result: Callable[[int, RunRecord], None]) -> None:
        on_threads(tasks, on_result, self.options, self.slots, self.runner.run)


def on_threads(tasks: Sequence[RunTask], on_result: Callable[[int, RunRecord], None], options: SuiteOptions,
               slots: Slots, run: Callable[[RunTask], RunRecord]) -> None:
    """``run(task)`` for each of ``tasks`` on ``options.jobs`` threads of this process, each after taking its
    provider's slot in ``slots`` (that wait recorded as the record's ``queued``); a task whose slot the cancel
    event stopped is a ``cancelled`` record, never run; one whose thread the machine refused each time is a
    ``start_failed`` error (runner.suite.pool). Records reach ``on_result`` as in Executor."""
    def work(job: int) -> RunRecord:
        task = tasks[job]
        with slots.held(task.arm.provider.name, options.run.cancel) as waited:
            if waited is None:  # interrupted while waiting: never started
                return task.unrun(ErrorKind.CANCELLED, CANCELLED)
            record = run(task)
            record.queued = waited
            return record

    def unstarted(job: int, error: MachineBusy) -> RunRecord:
        return not_started(tasks[job], error, options.run.sandbox.confinement)

    run_pool(work, len(tasks), options.jobs, options.run.cancel, on_result, unstarted)


def not_started(task: RunTask, error: MachineBusy, sandbox: Confinement) -> RunRecord:
    """The record of ``task`` when no thread could be started for it: a ``start_failed`` error saying why."""
    record = task.unrun(ErrorKind.START_FAILED, error.render(), sandbox=sandbox)
    fill_metrics(task.case, record)  # its failure cause, as for any error
    return record


def worker_count(workers: int | None, jobs: int, planned: int, cpus: int | None = None) -> int:
    """How many worker processes a matrix of ``planned`` runs, ``jobs`` at once, gets for ``--workers``
    ``workers`` (None: ``auto``, the CPU count when ``planned`` is at least AUTO_MIN_RUNS, else 1); never
    more than ``jobs`` or ``planned``, never below 1. ``cpus`` defaults to the CPUs this process may use."""
    if workers is None:
        cpus = cpus or len(os.sched_getaffinity(0))
        workers = cpus if planned >= AUTO_MIN_RUNS else 1
    return max(1, min(workers, jobs, planned))


def choose_executor(arms: Sequence[Arm], options: SuiteOptions, slots: Slots, planned: int) -> Executor:
    """The executor of ``options.executor`` for a matrix of ``planned`` runs: for ``local``, threads of this
    process when ``worker_count`` says 1, else worker processes (runner.suite.processes); for ``ray``, tasks
    on a Ray cluster (runner.suite.rayexec). Raises ValueError
    for an executor name it does not know (the CLI offers only known ones)."""
    if options.executor == "ray":  # Ray is imported only when chosen
        from runner.suite.rayexec import RayRuns

        return RayRuns(arms, options, slots, options.ray_address, options.ray_env)
    if options.executor != "local":
        raise ValueError(f"unknown executor {options.executor!r}")
    workers = worker_count(options.workers, options.jobs, planned)
    if workers == 1:
        return Threads(arms, options, slots)
    from runner.suite.processes import Processes

    return Processes(arms, options, slots, workers)
