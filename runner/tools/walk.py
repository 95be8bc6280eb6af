"""Bounded looks at the workspace's folders for glob, grep and list_dir.

A ``Walk`` reads folders one at a time (``os.scandir``), sorted by name, ``.git``
left out, and counts every entry it reads: past ``limit`` entries it stops
reading and says so (``capped``), and it stops the tool call (ToolError) as soon
as the run's time is up or the suite is interrupted. Folders reached through a
symlink are not entered, so a walk sees each folder of the workspace at most once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from runner.tools.base import ToolContext

MAX_ENTRIES = 100_000  # folder entries one glob, grep or list_dir call may read
MAX_RESULTS = 500  # lines a glob, grep or list_dir result shows
_CHECK_EVERY = 256  # entries between looks at the clock and the cancel event


@dataclass
class Walk:
    """Reads folders for one tool call, within ``limit`` entries and the context's time.

    ``seen`` counts the entries read so far; ``capped`` is set once the limit stopped a read.
    """

    context: ToolContext
    limit: int = field(default_factory=lambda: MAX_ENTRIES)
    seen: int = 0
    capped: bool = False

    def entries(self, folder: Path) -> list[os.DirEntry[str]]:
        """The entries of ``folder`` but ``.git``, sorted by name; as many as the limit leaves.

        A folder that cannot be read (gone, no permission) has none. Raises ToolError
        (``stopped: ...``) when the run's time is up or the suite was interrupted.
        """
        self.context.check_stop()
        found: list[os.DirEntry[str]] = []
        try:
            with os.scandir(folder) as scan:
                for entry in scan:
                    if self.seen >= self.limit:
                        self.capped = True
                        break
                    self.seen += 1
                    if self.seen % _CHECK_EVERY == 0:
                        self.context.check_stop()
                    if entry.name != ".git":
                        found.append(entry)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return []
        return sorted(found, key=lambda entry: entry.name)

    def note(self) -> str:
        """The line saying the walk was cut short, or "" when it was not."""
        if not self.capped:
            return ""
        return f"[stopped after reading {self.limit} folder entries; narrow the path]"


def is_folder(entry: os.DirEntry[str]) -> bool:
    """Whether ``entry`` is a folder to enter: a real one, not a symlink to one."""
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (symlinks followed) is inside ``root`` (resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (RuntimeError, OSError):  # a symlink loop
        return False


def capped(lines: list[str], noun: str, hint: str, total: int | None = None) -> str:
    """``lines`` joined, at most MAX_RESULTS of them, with a note on how many of ``total``
    (default: ``len(lines)``) were left out."""
    total = len(lines) if total is None else total
    if total <= MAX_RESULTS:
        return "\n".join(lines)
    left = total - MAX_RESULTS
    return "\n".join([*lines[:MAX_RESULTS], f"[... {left} more {noun} not shown; {hint}]"])
