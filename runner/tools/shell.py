"""The bash tool: one shell command in the workspace, through the case's sandbox."""

from __future__ import annotations

from typing import Any

from runner.sandbox import OUTPUT_LIMIT
from runner.tools.base import Tool, ToolContext, ToolError
from runner.tools.files import object_schema

# Room under the result cap for the sandbox's cut marker and the exit-code line.
_COMMAND_OUTPUT_LIMIT = OUTPUT_LIMIT - 200  # bytes


def _with_status(output: str, status: str) -> str:
    """The command's output, then ``status`` on a line of its own."""
    return f"{output}\n{status}" if output and not output.endswith("\n") else f"{output}{status}"


def _bash(arguments: dict[str, Any], context: ToolContext) -> str:
    result = context.sandbox.run(
        arguments["command"],
        context.workspace,
        context.env,
        context.command_timeout,
        output_limit=_COMMAND_OUTPUT_LIMIT,
    )
    if result.timed_out:
        raise ToolError(_with_status(result.output, f"[timed out after {context.command_timeout:g}s]"))
    return _with_status(result.output, f"[exit code {result.exit_code}]")


BASH = Tool(
    name="bash",
    description=(
        "Run a bash command in the workspace (the current directory) and return its output "
        "(stdout and stderr together) and exit code. stdin is closed; long output is cut in the middle."
    ),
    parameters=object_schema({"command": {"type": "string", "minLength": 1}}, ["command"]),
    run=_bash,
)
