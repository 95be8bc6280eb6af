"""File tools: read_file, write_file, edit_file, list_dir. Every path is relative to the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.tools.base import Tool, ToolContext, ToolError
from runner.tools.paths import resolve_inside

MAX_FILE_BYTES = 10_000_000  # files larger than this are refused
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this many leading bytes marks a binary file
DEFAULT_READ_LIMIT = 2000  # lines


def is_binary(path: Path) -> bool:
    """Whether the file at ``path`` has a NUL byte in its first 8 KiB. Raises OSError."""
    with path.open("rb") as f:
        return b"\0" in f.read(BINARY_SNIFF_BYTES)


def read_text(path: Path, shown: str, errors: str = "replace") -> str:
    """The text of a regular, non-binary file of at most 10 MB, decoded as UTF-8 with ``errors``.

    ``shown`` is the path as the model wrote it, for messages. Raises ToolError; a FIFO
    or device is refused before it is opened (opening a FIFO would block the run).
    """
    if not path.exists():
        raise ToolError(f"file not found: {shown}")
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; use list_dir")
    if not path.is_file():
        raise ToolError(f"{shown} is not a regular file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ToolError(f"{shown} is {size} bytes, over the {MAX_FILE_BYTES} byte limit")
    if is_binary(path):
        raise ToolError(f"{shown} is a binary file")
    return path.read_bytes().decode("utf-8", errors=errors)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` split on ``\\n`` only, without a last empty one for a final newline."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _read_file(arguments: dict[str, Any], context: ToolContext) -> str:
    shown = arguments["path"]
    lines = split_lines(read_text(resolve_inside(context.workspace, shown), shown))
    offset = arguments.get("offset", 1)
    limit = arguments.get("limit", DEFAULT_READ_LIMIT)
    if not lines:
        return f"{shown} is empty"
    if offset > len(lines):
        raise ToolError(f"offset {offset} is past the end of {shown} ({len(lines)} lines)")
    chosen = lines[offset - 1 : offset - 1 + limit]
    out = [f"{number:6}\t{line}" for number, line in enumerate(chosen, start=offset)]
    remaining = len(lines) - (offset - 1 + len(chosen))
    if remaining:
        out.append(f"[... {remaining} more lines; continue with offset={offset + len(chosen)}]")
    return "\n".join(out)


def _write_file(arguments: dict[str, Any], context: ToolContext) -> str:
    shown = arguments["path"]
    path = resolve_inside(context.workspace, shown)
    if path.is_dir():
        raise ToolError(f"{shown} is a directory")
    if path.exists() and not path.is_file():  # a FIFO would block the write
        raise ToolError(f"{shown} is not a regular file")
    data = arguments["content"].encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return f"wrote {len(data)} bytes to {shown}"


def _edit_file(arguments: dict[str, Any], context: ToolContext) -> str:
    shown, old, new = arguments["path"], arguments["old_string"], arguments["new_string"]
    path = resolve_inside(context.workspace, shown)
    text = read_text(path, shown, errors="surrogateescape")  # round-trips bytes that are not UTF-8
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string not found in {shown}")
    if count > 1:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; include more context to make it unique"
        )
    path.write_bytes(text.replace(old, new, 1).encode("utf-8", errors="surrogateescape"))
    return f"edited {shown}"


def _list_dir(arguments: dict[str, Any], context: ToolContext) -> str:
    shown = arguments.get("path", ".")
    path = resolve_inside(context.workspace, shown)
    if not path.exists():
        raise ToolError(f"directory not found: {shown}")
    if not path.is_dir():
        raise ToolError(f"{shown} is not a directory; use read_file")
    entries = sorted(
        entry.name + ("/" if entry.is_dir() else "") for entry in path.iterdir() if entry.name != ".git"
    )
    return "\n".join(entries) if entries else f"{shown} is empty"


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A JSON Schema object with exactly these properties."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "description": "Path relative to the workspace."}

READ_FILE = Tool(
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
    run=_read_file,
)

WRITE_FILE = Tool(
    name="write_file",
    description="Write `content` to a file, replacing it if it exists and creating parent folders.",
    parameters=object_schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    run=_write_file,
)

EDIT_FILE = Tool(
    name="edit_file",
    description=(
        "Replace the one occurrence of `old_string` in a file with `new_string`. "
        "`old_string` must match exactly (whitespace included) and occur exactly once."
    ),
    parameters=object_schema(
        {"path": _PATH, "old_string": {"type": "string", "minLength": 1}, "new_string": {"type": "string"}},
        ["path", "old_string", "new_string"],
    ),
    run=_edit_file,
)

LIST_DIR = Tool(
    name="list_dir",
    description="List a directory's entries, sorted; directories end with '/'.",
    parameters=object_schema(
        {"path": {"type": "string", "description": "Directory relative to the workspace (default '.')."}}, []
    ),
    run=_list_dir,
)
