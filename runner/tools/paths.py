"""The one rule for which paths a tool may touch: those that resolve inside the workspace."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from runner.tools.base import ToolError


def resolve_inside(workspace: Path, path: str) -> Path:
    """The absolute, resolved path of ``path``: relative to ``workspace``, or absolute and inside it.

    An absolute path is split where its leading folders resolve to the workspace (symlinks above it
    followed: ``/tmp/x`` where ``/tmp`` links to ``/private/tmp``); the rest then resolves exactly as
    the relative path it is. An absolute path no leading part of which is the workspace is refused,
    however it would resolve. Symlinks are followed; the target need not exist. Raises ToolError for an
    empty path, a NUL byte, an absolute path outside the workspace, a symlink loop, or anything that
    resolves outside the workspace (``..``, a symlink pointing out).
    """
    if not path:
        raise ToolError("path is empty")
    if "\0" in path:
        raise ToolError(f"path contains a NUL byte: {path!r}")
    root = workspace.resolve()
    relative = _below(path, root) if os.path.isabs(path) else path
    if relative is None:
        raise ToolError(f"path escapes the workspace: {path} (use a path relative to the workspace, "
                        f"or an absolute one inside {root})")
    try:
        target = (root / relative).resolve(strict=False)
    except (RuntimeError, OSError) as e:  # RuntimeError: a symlink loop on Python 3.11
        raise ToolError(f"cannot resolve {path}: {e}") from e
    if not target.is_relative_to(root):
        raise ToolError(f"path escapes the workspace: {path}")
    return target


def _below(path: str, root: Path) -> str | None:
    """The rest of the absolute ``path`` after its shortest leading part that resolves to ``root`` (the
    resolved workspace), ``..`` kept for the caller's resolution to judge, ``.`` for the workspace
    itself; None when no leading part resolves to it."""
    parts = PurePosixPath(path).parts
    for end in range(1, len(parts) + 1):
        if os.path.realpath(PurePosixPath(*parts[:end])) == str(root):
            return PurePosixPath(*parts[end:]).as_posix() if end < len(parts) else "."
    return None


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
