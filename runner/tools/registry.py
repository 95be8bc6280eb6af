"""The builtin tools, one row each in ``BUILTINS``: every fact about them that the case loader, the
checks, the scorer and the toolbox read (name, description, JSON-Schema parameters, whether it
changes nothing), in the order they are offered, without importing the tools themselves and the
sandbox they run in. runner.tools.toolbox.BUILTIN_TOOLS joins each row to the function its
``run`` names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Builtin:
    """One builtin tool: the ``name``, ``description`` and ``parameters`` (a JSON Schema object,
    draft 2020-12) the model is shown; ``read_only``: whether a call of it changes nothing, so a
    repeat of an earlier call across it is redundant (runner.scoring.metrics); ``run``: its
    implementation as ``module:function``, a function ``(arguments, ToolContext) -> str`` that
    raises runner.tools.base.ToolError."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    read_only: bool
    run: str


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A JSON Schema object with exactly these properties."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "description": "Path relative to the workspace, or absolute inside it."}

BUILTINS: dict[str, Builtin] = {tool.name: tool for tool in (
    Builtin(
        name="read_file",
        description=(
            "Read a text file. Lines come numbered (cat -n style). Reads at most `limit` lines "
            "starting at line `offset`; when more remain, the last line says how to continue."
        ),
        parameters=object_schema(
            {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1, "description": "First line, 1-based (default 1)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most lines to read (default 2000)."},
            },
            ["path"],
        ),
        read_only=True,
        run="runner.tools.files:read_file",
    ),
    Builtin(
        name="write_file",
        description="Write `content` to a file, replacing it if it exists and creating parent folders.",
        parameters=object_schema(
            {"path": _PATH, "content": {"type": "string", "description": (
                "The file's whole new text, written exactly as given: include every line, and the final newline.")}},
            ["path", "content"],
        ),
        read_only=False,
        run="runner.tools.files:write_file",
    ),
    Builtin(
        name="edit_file",
        description=(
            "Replace the one occurrence of `old_string` in a file with `new_string`. "
            "`old_string` must match exactly (whitespace included) and occur exactly once."
        ),
        parameters=object_schema(
            {
                "path": _PATH,
                "old_string": {"type": "string", "minLength": 1, "description": (
                    "The exact text to replace, whitespace and indentation included; it must occur exactly once in "
                    "the file, so include enough surrounding lines to make it unique.")},
                "new_string": {"type": "string", "description": (
                    "The text to put in place of `old_string`, indented as the file is; empty to delete it.")},
            },
            ["path", "old_string", "new_string"],
        ),
        read_only=False,
        run="runner.tools.files:edit_file",
    ),
    Builtin(
        name="list_dir",
        description="List a directory's entries, sorted; directories end with '/'.",
        parameters=object_schema(
            {"path": {"type": "string", "description": "Directory relative to the workspace, or absolute inside it (default '.')."}}, []
        ),
        read_only=True,
        run="runner.tools.files:list_dir",
    ),
    Builtin(
        name="glob",
        description=(
            "Find files by name pattern (e.g. '*.md', '**/*.py' for any depth) under `path`. "
            "Returns workspace-relative paths, sorted."
        ),
        parameters=object_schema(
            {
                "pattern": {"type": "string", "minLength": 1, "description": "'**' matches any depth."},
                "path": {"type": "string", "description": "Directory to search in (default '.')."},
            },
            ["pattern"],
        ),
        read_only=True,
        run="runner.tools.search:glob",
    ),
    Builtin(
        name="grep",
        description=(
            "Search file contents with a Python regular expression. Returns 'file:line:text' "
            "for every matching line, sorted by file then line; binary files are skipped."
        ),
        parameters=object_schema(
            {
                "pattern": {"type": "string", "description": "Python regular expression, searched in each line."},
                "path": {"type": "string", "description": "File or directory to search (default '.')."},
                "glob": {"type": "string", "description": "Only files whose path matches, e.g. '*.py'."},
            },
            ["pattern"],
        ),
        read_only=True,
        run="runner.tools.search:grep",
    ),
    Builtin(
        name="bash",
        description=(
            "Run a bash command in the workspace (the current directory) and return its output "
            "(stdout and stderr together) and exit code. stdin is closed; long output is cut in the middle."
        ),
        parameters=object_schema(
            {"command": {"type": "string", "minLength": 1, "description": (
                "The bash command line to run, e.g. 'python -m pytest -q'. Nothing can answer a prompt: "
                "pass the flags that skip one.")}},
            ["command"],
        ),
        read_only=False,
        run="runner.tools.shell:bash",
    ),
)}

BUILTIN_NAMES = tuple(BUILTINS)
READ_ONLY_TOOLS = frozenset(name for name, tool in BUILTINS.items() if tool.read_only)
