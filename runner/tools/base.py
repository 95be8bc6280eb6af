"""What a tool is: a name, a description, a JSON-Schema parameter spec and a function."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.sandbox.command import Sandbox


class ToolError(Exception):
    """A tool refused or failed; the model sees ``Error: <message>`` and the loop goes on."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned: the text the model sees, whether it is an error, and ``refused``:
    whether the tool never ran because the Toolbox turned the call away (unknown tool, denied by
    the case, arguments invalid for the tool's JSON Schema); ``fault``: the kind of the injected fault the result
    got (runner.tools.faults), None for none."""

    content: str
    is_error: bool = False
    refused: bool = False
    fault: str | None = None


INTERRUPTED = "the suite was interrupted"
TIME_IS_UP = "the run's time is up"


def stop_reason(deadline: float | None, cancel: threading.Event | None) -> str | None:
    """Why a run's work must stop now: INTERRUPTED once ``cancel`` is set, TIME_IS_UP once
    ``deadline`` (``time.monotonic()``) has passed, else None."""
    if cancel is not None and cancel.is_set():
        return INTERRUPTED
    if deadline is not None and time.monotonic() >= deadline:
        return TIME_IS_UP
    return None


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may touch: the workspace, the sandbox, the case's env.

    ``command_timeout`` is in seconds; ``deadline`` (``time.monotonic()``) is when
    the run's time ends, which cuts a command short; ``network`` is the case's;
    ``cancel`` is the suite's Ctrl-C (``RunOptions.cancel``): once it is set, long
    tool work stops.
    """

    workspace: Path
    sandbox: Sandbox
    env: Mapping[str, str]
    command_timeout: float = 60.0
    deadline: float | None = None
    network: bool = False
    cancel: threading.Event | None = None

    def stop_reason(self) -> str | None:
        """Why tool work must stop now (see ``stop_reason``), or None."""
        return stop_reason(self.deadline, self.cancel)

    def check_stop(self) -> None:
        """Raise ToolError ``stopped: <reason>`` when ``stop_reason`` gives one."""
        reason = self.stop_reason()
        if reason is not None:
            raise ToolError(f"stopped: {reason}")


@dataclass(frozen=True)
class Tool:
    """A tool offered to the model.

    ``run(arguments, context)`` returns the result text or raises ToolError.
    ``parameters`` is a JSON Schema object (draft 2020-12) for the arguments; ``enum_match`` how a
    string argument is held to an ``enum`` in it: ``exact`` (JSON Schema's rule) or ``normalized``
    (equal to a member once both are normalised as BFCL does, runner.spec.matchers.normalize). ``renamed``:
    the parameters a tool-definition arm shows under another name, shown name -> the tool's own
    (runner.tools.redefine).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[dict[str, Any], ToolContext], str]
    enum_match: str = "exact"
    renamed: Mapping[str, str] = field(default_factory=dict)

    def spec(self) -> dict[str, Any]:
        """The OpenAI function-tool spec: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }
