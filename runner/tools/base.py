"""What a tool is: a name, a description, a JSON-Schema parameter spec and a function."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from runner.sandbox import Sandbox


class ToolError(Exception):
    """A tool refused or failed; the model sees ``Error: <message>`` and the loop goes on."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call returned: the text the model sees, and whether it is an error."""

    content: str
    is_error: bool = False


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may touch: the workspace, the sandbox, the case's env.

    ``command_timeout`` is in seconds; ``deadline`` (``time.monotonic()``) is when
    the run's time ends, which cuts a command short; ``network`` is the case's.
    """

    workspace: Path
    sandbox: Sandbox
    env: Mapping[str, str]
    command_timeout: float = 60.0
    deadline: float | None = None
    network: bool = False


@dataclass(frozen=True)
class Tool:
    """A tool offered to the model.

    ``run(arguments, context)`` returns the result text or raises ToolError.
    ``parameters`` is a JSON Schema object (draft 2020-12) for the arguments.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[dict[str, Any], ToolContext], str]

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
