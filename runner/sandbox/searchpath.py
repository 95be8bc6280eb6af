"""The ``PATH`` commands get: tooltrial's own, less the folders this user cannot search.

Root's ``PATH`` kept by ``su`` (``/root/.cargo/bin`` for a user who cannot enter ``/root``) names
folders no command of that user can run a program from; under bubblewrap, bringing them back
(runner.sandbox.bwrap.host_view) would fail every command. They are dropped, and said once.
"""

from __future__ import annotations

import os
import stat


def closed_entries(path: str) -> list[str]:
    """The absolute entries of ``PATH`` value ``path`` this user cannot search, in order, once each: a
    folder without execute permission for it, or one inside such a folder. A missing entry is not one."""
    closed = []
    for entry in dict.fromkeys(path.split(os.pathsep)):
        if not os.path.isabs(entry):
            continue
        try:
            info = os.stat(entry)
        except PermissionError:
            closed.append(entry)
            continue
        except OSError:  # missing, or not a folder: nothing there to run, nothing to warn about
            continue
        if stat.S_ISDIR(info.st_mode) and not os.access(entry, os.X_OK):
            closed.append(entry)
    return closed


def searchable(path: str) -> str:
    """``PATH`` value ``path`` without its ``closed_entries``."""
    closed = set(closed_entries(path))
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if entry not in closed)


def closed_warnings(path: str) -> list[str]:
    """One sentence per entry of ``path`` that ``searchable`` drops, for a ``warning:`` line."""
    return [f"PATH entry {entry} cannot be read by this user (uid {os.getuid()}); commands run without it"
            for entry in closed_entries(path)]
