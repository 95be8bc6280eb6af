"""What bounds one run and where its commands go: ``RunContext``, made once per run (runner.run.execute) and given to
the workspace, the agent loop and an external agent.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from runner.run.record import CommandRun
from runner.sandbox.command import Sandbox, budget
from runner.tools.base import stop_reason


@dataclass(frozen=True)
class RunContext:
    """One run's sandbox, time and logs.

    Attributes:
        sandbox: where the run's commands run (setup, tools, verify, an external agent).
        timeout: the run's time, in seconds.
        deadline: when that time ends, in ``time.monotonic()`` seconds: the agent stops there, and commands and model
            requests are cut short.
        command_timeout: seconds one setup, tool or verify command may take, cut short at ``deadline``.
        cancel: the suite's Ctrl-C (``RunOptions.cancel``): once it is set, the run stops.
        commands: the log each command the run runs is appended to (the record's ``commands``).
        warnings: the log of the run's warnings (the record's ``warnings``).
    """

    sandbox: Sandbox
    timeout: float
    deadline: float
    command_timeout: float
    cancel: threading.Event = field(default_factory=threading.Event)
    commands: list[CommandRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def command_seconds(self) -> float:
        """Seconds the next command may take: ``command_timeout``, or less when ``deadline`` comes sooner; at least 0."""
        return budget(self.command_timeout, self.deadline)

    def stop_reason(self) -> str | None:
        """Why the run's work must stop now (runner.tools.base.stop_reason: Ctrl-C, the deadline reached), or None."""
        return stop_reason(self.deadline, self.cancel)

    def timed_out(self, doing: str | None) -> str:
        """The cause of the run out of time: ``run timed out after 5s``, then what it was doing, if known."""
        return f"run timed out after {self.timeout:g}s" + (f", {doing}" if doing else "")
