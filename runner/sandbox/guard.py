"""Every command's first processes: its death with tooltrial, made sure of before anything of the command runs.

Linux's parent-death signal (``prctl(PR_SET_PDEATHSIG)``) does nothing when it is set after the parent died, and a
program that sets it late without looking whether its parent is still there (bubblewrap's process inside the
sandbox: bubblewrap issue 633; util-linux's ``unshare`` before 2.39) lives on when tooltrial is killed in that
window. So a command starts as::

    setpriv --pdeathsig KILL -- unshare [--user --map-current-user] --pid --fork --kill-child -- sh -c CHECK PID ...

``setpriv`` gives the first process its death signal before it runs anything else; ``unshare`` makes a PID
namespace whose first process gets SIGKILL when ``unshare`` dies; in that process CHECK reads in ``/proc`` that
its parent's parent is still PID (tooltrial) and exits at once when not, so both signals were set while their
parents lived. Everything after it (``prlimit``, bubblewrap and its namespaces, the command) runs inside that
namespace, which the kernel ends with its first process: tooltrial's death ends it, however early it comes. Root
needs no user namespace for this; another user maps itself to itself in one. Each process of it is tooltrial's,
not the command's: the command's limits (runner.sandbox.confine) begin after it.

Where no such namespace can be made, the first process still gets the signal and checks its parent (``sh``'s
``$PPID``) before going on: only a program that sets its own signal late (bubblewrap) is then left a window.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Sequence

from runner.sandbox.confine import util_linux
from runner.sandbox.trial import trial

SHELL = "/bin/sh"
# In the namespace's first process (/proc is still the host's there): its parent's parent must be $0, tooltrial.
_CHECK = ('while read -r k v; do [ "$k" = PPid: ] && break; done </proc/self/status; '
          'while read -r k w; do [ "$k" = PPid: ] && break; done <"/proc/$v/status"; '
          '[ "$w" = "$0" ] && exec "$@"; exit 125')
_PARENT_CHECK = '[ "$PPID" = "$0" ] && exec "$@"; exit 125'  # without a namespace: its own parent must be $0
_PROBE_TIMEOUT = 10.0  # seconds


@functools.cache
def guard_prefix() -> tuple[tuple[str, ...] | None, str]:
    """``(prefix, "")``: the ``setpriv`` and ``unshare`` arguments that start a guarded command here (see ``guarded``),
    or ``(None, reason)`` where this machine makes no such namespace (no util-linux, or no user namespace for a user
    that is not root). Probed once a process: starts ``true`` that way, through the check (a few milliseconds).
    Raises MachineBusy when the machine refused the trial each time it was made (runner.sandbox.trial)."""
    tools, unshare = util_linux(), shutil.which("unshare")
    if tools is None or unshare is None:
        return None, "util-linux's setpriv and unshare are not installed"
    user = () if os.geteuid() == 0 else ("--user", "--map-current-user")
    prefix = (tools[1], "--pdeathsig", "KILL", "--", unshare, *user, "--pid", "--fork", "--kill-child", "--")
    try:
        done = trial(guarded(["true"], prefix, os.getpid()), _PROBE_TIMEOUT, "unshare")
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"unshare could not run: {e}"
    if done.returncode == 0:
        return prefix, ""
    lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return None, lines[-1] if lines else f"unshare exited with {done.returncode}"


def guarded(argv: Sequence[str], prefix: tuple[str, ...] | None, parent: int) -> list[str]:
    """``argv`` started so that it dies with process ``parent`` (tooltrial's ``os.getpid()``, the process that starts
    it) even when that dies while it starts: behind ``prefix`` (``guard_prefix``) and the check; with ``prefix`` None,
    behind ``setpriv --pdeathsig KILL`` and a check of its parent; as is without util-linux."""
    if prefix is not None:
        return [*prefix, SHELL, "-c", _CHECK, str(parent), *argv]
    tools = util_linux()
    if tools is None:
        return list(argv)
    return [tools[1], "--pdeathsig", "KILL", "--", SHELL, "-c", _PARENT_CHECK, str(parent), *argv]
