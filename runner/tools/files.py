"""File tools: read_file, write_file, edit_file, list_dir. Every path is relative to the workspace, or
absolute and inside it (runner.tools.paths.resolve_inside).

Files are opened through ``runner.tools.paths.open_inside`` (no symlink followed
after the path was resolved) and checked on the open descriptor: only regular
files are read or written, and none with more than one hard link: its other names
may lie outside the workspace (a command can ``ln /outside/file here``), and the
file tools run in tooltrial's own process, outside the sandbox and with its
rights, so they neither write such a file nor read it (a command may link a file
it cannot read itself). ``bash`` still reads it, under the sandbox.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from runner.text import plural
from runner.tools.base import ToolContext, ToolError
from runner.tools.paths import open_inside, resolve_inside
from runner.tools.walk import Walk, capped

MAX_FILE_BYTES = 10_000_000  # files larger than this are refused
BINARY_SNIFF_BYTES = 8192  # a NUL byte in this many leading bytes marks a binary file
DEFAULT_READ_LIMIT = 2000  # lines


def is_binary(data: bytes) -> bool:
    """Whether ``data`` (a file's bytes) has a NUL byte in its first 8 KiB."""
    return b"\0" in data[:BINARY_SNIFF_BYTES]


def open_file(workspace: Path, path: Path, shown: str, write: bool = False, create: bool = False) -> int:
    """A descriptor for regular file ``path`` (resolved inside ``workspace``) with one hard link:
    read-only, or read-write with ``write``. ``create`` makes a missing file and its folders.
    ``shown`` is the path as the model wrote it, for messages.

    Raises ToolError; the caller closes the descriptor.
    """
    flags = (os.O_RDWR if write else os.O_RDONLY) | (os.O_CREAT if create else 0)
    try:
        fd = open_inside(workspace, path, flags, make_parents=create)
    except FileNotFoundError as e:
        raise ToolError(f"file not found: {shown}") from e
    except IsADirectoryError as e:
        raise ToolError(f"{shown} is a directory") from e
    except OSError as e:
        raise ToolError(f"cannot open {shown}: {e.strerror}") from e
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown} is a directory; use list_dir")
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block, a device never ends
            raise ToolError(f"{shown} is not a regular file")
        if info.st_nlink > 1:
            raise ToolError(
                f"{shown} has {info.st_nlink} hard links, and the file tools refuse a file whose other names "
                "may lie outside the workspace; delete it to write a new one"
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(fd: int, shown: str) -> bytes:
    """The bytes of the regular file open on ``fd``, from where it is; raises ToolError past 10 MB."""
    size = os.fstat(fd).st_size
    if size > MAX_FILE_BYTES:
        raise ToolError(f"{shown} is {size} bytes, over the {MAX_FILE_BYTES} byte limit")
    with open(fd, "rb", closefd=False) as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew after the size check
        raise ToolError(f"{shown} is over the {MAX_FILE_BYTES} byte limit")
    return data


def read_text(workspace: Path, path: Path, shown: str, errors: str = "replace") -> str:
    """The text of regular, non-binary file ``path`` (resolved inside ``workspace``) of at most 10 MB,
    decoded as UTF-8 with ``errors``. Raises ToolError."""
    fd = open_file(workspace, path, shown)
    try:
        data = read_bytes(fd, shown)
    finally:
        os.close(fd)
    if is_binary(data):
        raise ToolError(f"{shown} is a binary file")
    return data.decode("utf-8", errors=errors)


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` split on ``\\n`` only, without a last empty one for a final newline."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def read_file(arguments: dict[str, Any], context: ToolContext) -> str:
    """The ``read_file`` tool: ``limit`` numbered lines of a text file from line ``offset``; raises ToolError."""
    shown = arguments["path"]
    lines = split_lines(read_text(context.workspace, resolve_inside(context.workspace, shown), shown))
    offset = arguments.get("offset", 1)
    limit = arguments.get("limit", DEFAULT_READ_LIMIT)
    if not lines:
        return f"{shown} is empty"
    if offset > len(lines):
        raise ToolError(f"offset {offset} is past the end of {shown} ({plural(len(lines), 'line')})")
    chosen = lines[offset - 1 : offset - 1 + limit]
    out = [f"{number:6}\t{line}" for number, line in enumerate(chosen, start=offset)]
    remaining = len(lines) - (offset - 1 + len(chosen))
    if remaining:
        out.append(f"[... {remaining} more lines; continue with offset={offset + len(chosen)}]")
    return "\n".join(out)


def write_file(arguments: dict[str, Any], context: ToolContext) -> str:
    """The ``write_file`` tool: ``content`` written to the file, its folders made; raises ToolError."""
    shown = arguments["path"]
    path = resolve_inside(context.workspace, shown)
    data = arguments["content"].encode("utf-8")
    with open(open_file(context.workspace, path, shown, write=True, create=True), "r+b") as f:
        f.truncate(0)  # only once open_file accepted it: a refused file keeps its bytes
        f.write(data)
    return f"wrote {plural(len(data), 'byte')} to {shown}"


def edit_file(arguments: dict[str, Any], context: ToolContext) -> str:
    """The ``edit_file`` tool: the one occurrence of ``old_string`` replaced; raises ToolError."""
    shown, old, new = arguments["path"], arguments["old_string"], arguments["new_string"]
    path = resolve_inside(context.workspace, shown)
    with open(open_file(context.workspace, path, shown, write=True), "r+b") as f:
        data = read_bytes(f.fileno(), shown)
        if is_binary(data):
            raise ToolError(f"{shown} is a binary file")
        text = data.decode("utf-8", errors="surrogateescape")  # round-trips bytes that are not UTF-8
        count = text.count(old)
        if count == 0:
            raise ToolError(f"old_string not found in {shown}")
        if count > 1:
            raise ToolError(
                f"old_string occurs {count} times in {shown}; include more context to make it unique"
            )
        f.seek(0)
        f.truncate(0)
        f.write(text.replace(old, new, 1).encode("utf-8", errors="surrogateescape"))
    return f"edited {shown}"


def list_dir(arguments: dict[str, Any], context: ToolContext) -> str:
    """The ``list_dir`` tool: a folder's entries, sorted, folders marked ``/``; raises ToolError."""
    shown = arguments.get("path", ".")
    path = resolve_inside(context.workspace, shown)
    if not path.exists():
        raise ToolError(f"directory not found: {shown}")
    if not path.is_dir():
        raise ToolError(f"{shown} is not a directory; use read_file")
    walk = Walk(context)
    entries = [entry.name + ("/" if _is_dir(entry) else "") for entry in walk.entries(path)]
    note = f"\n{walk.note()}" if walk.capped else ""
    if not entries:
        return f"{shown} is empty"
    return capped(entries, "entries", "use glob to find what you need") + note


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder, or a symlink to one (shown with ``/`` like a folder)."""
    try:
        return entry.is_dir()
    except OSError:
        return False
