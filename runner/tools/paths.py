"""The one rule for which paths a tool may touch: those that resolve inside the workspace."""

from __future__ import annotations

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

