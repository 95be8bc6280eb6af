"""What a run needs, in a form that crosses a process boundary: the executors' seam.

``WorkerSetup`` is the picklable part of RunOptions (the sandbox as its settings, timeouts, judges,
users, the cache folder) with the suite's arms; ``RunTask`` is one run of the plan. A process that
runs tasks (a worker of runner.suite.processes, a Ray task) builds a ``Runner`` from the setup once,
with its own sandbox, providers, breakers and rate limiters, and hands each record back to the one
parent process, which alone writes the results folder.
"""

from __future__ import annotations

import functools
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.kinds import ErrorKind
from runner.providers.breaker import Breaker
from runner.providers.cache import ResponseCache
from runner.providers.kind import ProviderSpec
from runner.providers.ratelimit import RateLimiter
from runner.providers.redact import Secrets
from runner.run.events import Listener
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.record import ERROR, RunRecord
from runner.sandbox.command import Sandbox
from runner.sandbox.machine import Probed
from runner.spec.case import Case


@dataclass(frozen=True)
class RunTask:
    """One run of the plan: run ``number`` (1-based) of ``case`` in ``arm``. Picklable."""

    case: Case
    arm: Arm
    number: int

    def unrun(self, kind: ErrorKind, cause: str, **fields: Any) -> RunRecord:
        """The error record of this run when it came back with none of its own (cancelled before it started,
        its worker or task lost), of error ``kind`` and ``cause``, with ``fields`` set."""
        return RunRecord(self.case.full_id, self.arm.provider.name, self.arm.prompt.name, self.number, ERROR, cause,
                         kind, tool_defs=self.arm.tool_defs, **fields)


@dataclass(frozen=True, eq=False)
class WorkerSetup:
    """What every run of a suite shares, picklable: RunOptions without its cancel event, listener and
    shard (the parent's), the sandbox as the arguments that rebuild it (what the parent probed included: a worker
    never probes, so never decides otherwise on a busy machine), and the suite's ``arms``, whose
    providers a process makes once. ``live`` says whether the parent listens to events (``--live``).
    ``key`` names the suite: a process builds one Runner per key (``run_task``); two setups are equal
    when their keys are. ``secrets`` travel with it (runner.providers.redact): a worker scrubs its records of them
    and of the keys its own environment holds."""

    sandbox_mode: str
    sandbox_binary: str
    sandbox_hide: tuple[Path, ...]
    sandbox_hardened: bool
    sandbox_note: str
    keep: bool
    timeout: float | None
    command_timeout: float
    judges: Mapping[str | None, ProviderSpec]
    users: Mapping[str, ProviderSpec]
    jobs: int
    cache: ResponseCache | None
    arms: tuple[Arm, ...] = ()
    live: bool = False
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    secrets: Secrets = field(default_factory=Secrets, repr=False)
    sandbox_probed: Probed | None = None

    @classmethod
    def from_options(cls, options: RunOptions, arms: Sequence[Arm] = (), jobs: int = 1) -> WorkerSetup:
        """The picklable part of ``options``, with the suite's ``arms`` and ``jobs`` (runs at once)."""
        sandbox = options.sandbox
        return cls(sandbox.mode, sandbox.binary, sandbox.hide, sandbox.hardened, sandbox.note, options.keep,
                   options.timeout, options.command_timeout, dict(options.judges), dict(options.users), jobs,
                   options.cache, tuple(arms), options.listener is not None, secrets=options.secrets,
                   sandbox_probed=sandbox.probed)

    def options(self, cancel: threading.Event, listener: Listener | None = None) -> RunOptions:
        """RunOptions rebuilt in a worker: a sandbox of its own, ``cancel`` (set to stop its runs) and
        ``listener`` for its runs' events."""
        sandbox = Sandbox(self.sandbox_mode, self.sandbox_binary, self.sandbox_hide, self.sandbox_hardened,
                          self.sandbox_note, self.sandbox_probed)
        here = Secrets.known(os.environ, self.secrets.names)  # a Ray node's own keys too
        return RunOptions(sandbox, keep=self.keep, timeout=self.timeout, command_timeout=self.command_timeout,
                          judges=self.judges, users=self.users, cancel=cancel,
                          listener=listener, cache=self.cache, secrets=self.secrets.joined(here))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WorkerSetup) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


class Runner:
    """One process's side of a suite: its options, and per provider one breaker and one rate limiter
    (runner.providers.breaker, runner.providers.ratelimit) that its runs share. The limiter's window
    starts at ``jobs`` (this process's share of the runs at once) or the provider's ``max_concurrency``,
    whichever is less. Thread-safe: ``run`` is called from the process's run threads."""

    def __init__(self, options: RunOptions, arms: Sequence[Arm], jobs: int = 1) -> None:
        self.options = options
        self.arms = {arm.label: arm for arm in arms}
        self.breakers = {arm.provider.name: Breaker(arm.provider.name) for arm in arms}
        self.limiters = {arm.provider.name: RateLimiter(arm.provider.name, min(jobs, arm.provider.max_concurrency
                                                                               or jobs), options.cancel)
                         for arm in arms if arm.provider.limited is not None}

    def run(self, task: RunTask) -> RunRecord:
        """The record of ``task`` (runner.run.execute: never raises). Its arm is this process's arm of the
        same label, so every run of an arm shares its providers; an arm the setup did not name runs as given."""
        arm = self.arms.get(task.arm.label, task.arm)
        name = arm.provider.name
        breaker = self.breakers[name] if name in self.breakers else Breaker(name)
        return execute(task.case, arm, self.options, task.number, breaker, self.limiters.get(name))


def run_task(task: RunTask, setup: WorkerSetup) -> RunRecord:
    """Run ``task`` in this process, as a worker process or a Ray task does: the Runner of ``setup`` is
    built on the first task of its suite and kept for the next ones (``_runner``)."""
    return _runner(setup).run(task)


@functools.lru_cache(maxsize=1)  # a process serves one suite at a time: its options are built once, not per run
def _runner(setup: WorkerSetup) -> Runner:
    return Runner(setup.options(threading.Event()), setup.arms, setup.jobs)
