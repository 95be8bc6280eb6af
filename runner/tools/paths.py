"""The one rule for which paths a tool may touch: those that resolve inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path

from runner.tools.base import ToolError


def resolve_inside(workspace: Path, relative: str) -> Path:
    """The absolute, resolved path of ``relative`` (a path relative to ``workspace``).

    Symlinks are followed; the target need not exist. Raises ToolError for an
    empty path, a NUL byte, an absolute path, a symlink loop, or anything that
    resolves outside the workspace (``..``, a symlink pointing out).
    """
    if not relative:
        raise ToolError("path is empty")
    if "\0" in relative:
        raise ToolError(f"path contains a NUL byte: {relative!r}")
    if Path(relative).is_absolute():
        raise ToolError(f"path escapes the workspace: {relative} (use a path relative to the workspace)")
    root = workspace.resolve()
    try:
        target = (root / relative).resolve(strict=False)
    except (RuntimeError, OSError) as e:  # RuntimeError: a symlink loop on Python 3.11
        raise ToolError(f"cannot resolve {relative}: {e}") from e
    if not target.is_relative_to(root):
        raise ToolError(f"path escapes the workspace: {relative}")
    return target



def open_inside(workspace: Path, target: Path, flags: int, make_parents: bool = False) -> int:
    """A file descriptor for ``target`` (a ``resolve_inside`` result below ``workspace``), opened
    with ``os.open`` ``flags`` (mode 0o666 for a new file, less the umask) without following any symlink.

    Each folder from the workspace down is opened on its own with ``O_NOFOLLOW``,
    so a symlink put in the path after it was resolved (a command racing the tool)
    is refused instead of followed out of the workspace. ``O_NONBLOCK`` is added:
    opening a FIFO must not block the run (callers check the type with ``os.fstat``).
    ``make_parents`` creates missing folders. The caller closes the descriptor.
    Raises ToolError for the workspace itself, OSError otherwise (``ELOOP``: a symlink).
    """
    parts = target.relative_to(workspace.resolve()).parts
    if not parts:
        raise ToolError(f"{target} is the workspace itself")
    folder = os.open(workspace.resolve(), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            if make_parents:
                try:
                    os.mkdir(part, dir_fd=folder)
                except FileExistsError:
                    pass
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666, dir_fd=folder)
    finally:
        os.close(folder)
