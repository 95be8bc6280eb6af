"""The bash tool: one shell command in the workspace, through the case's sandbox."""

from __future__ import annotations

from typing import Any

from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.command import budget
from runner.text import OUTPUT_LIMIT
from runner.tools.base import TIME_IS_UP, ToolContext, ToolError

# Room under the result cap for the sandbox's cut marker and the exit-code line.
_COMMAND_OUTPUT_LIMIT = OUTPUT_LIMIT - 200  # bytes


def _with_status(output: str, status: str) -> str:
    """The command's output, then ``status`` on a line of its own."""
    return f"{output}\n{status}" if output and not output.endswith("\n") else f"{output}{status}"


def bash(arguments: dict[str, Any], context: ToolContext) -> str:
    """The ``bash`` tool: ``command`` run in the workspace under the sandbox; its output, then its exit code.
    Raises ToolError when it timed out or was stopped."""
    command = arguments["command"]
    if "\0" in command:
        raise ToolError("command contains a NUL byte")
    timeout = budget(context.command_timeout, context.deadline)
    bounds = Bounds(timeout, _COMMAND_OUTPUT_LIMIT, context.cancel)
    result = context.sandbox.run(command, context.workspace, context.env, bounds, Access(network=context.network))
    if result.timed_out:
        stopped = context.stop_reason()
        if stopped is None and timeout < context.command_timeout:
            stopped = TIME_IS_UP
        why = f"stopped: {stopped}" if stopped else f"timed out after {timeout:g}s"
        raise ToolError(_with_status(result.output, f"[{why}]"))
    return _with_status(result.output, f"[exit code {result.exit_code}]")
