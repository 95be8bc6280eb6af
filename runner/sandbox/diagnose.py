"""What ``tooltrial doctor`` finds out about the sandbox on this machine: bubblewrap found and confining a trial
command, user namespaces allowed, the seccomp filter loadable, folders of ``PATH`` commands cannot search, and
the mode a run with the default ``--sandbox auto`` uses (runner.sandbox.choose.choose_sandbox decides the same way).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from runner.sandbox.bwrap import PROBE_TIMEOUT
from runner.sandbox.choose import bubblewrap
from runner.sandbox.searchpath import closed_entries
from runner.sandbox.seccomp import socket_filter


@dataclass(frozen=True)
class SandboxCheck:
    """One check: its ``name``, ``ok`` (True, False, or None when it could not be made) and ``detail``, a sentence."""

    name: str
    ok: bool | None
    detail: str


@dataclass(frozen=True)
class SandboxReport:
    """The sandbox here: the ``mode`` runs use (``bwrap`` or ``none``), ``why`` (a clause), and the ``checks``."""

    mode: str
    why: str
    checks: tuple[SandboxCheck, ...]


def diagnose_sandbox() -> SandboxReport:
    """Check the sandbox on this machine: runs ``true`` under bubblewrap (once or twice) and under ``unshare --user``;
    a few milliseconds. Never raises for what the machine lacks; raises MachineBusy when the machine refused the
    bubblewrap trial each time it was made (out of processes or memory)."""
    binary, hardened, reason = bubblewrap()
    checks = (_bwrap(binary, reason), _user_namespaces(binary is not None, hardened), _seccomp(), _path())
    if binary is None:
        return SandboxReport("none", f"bubblewrap unavailable: {reason}; commands run unconfined", checks)
    return SandboxReport("bwrap", "bubblewrap works here", checks)


def _bwrap(binary: str | None, reason: str) -> SandboxCheck:
    if binary is not None:
        return SandboxCheck("bwrap", True, f"{binary} runs `true` confined")
    if shutil.which("bwrap") is None:
        return SandboxCheck("bwrap", False, "not found on PATH: install bubblewrap (apt-get install bubblewrap)")
    return SandboxCheck("bwrap", False, reason)


def _user_namespaces(works: bool, hardened: bool) -> SandboxCheck:
    """Whether this user may make a user namespace (``unshare --user true`` runs), and what that means for bwrap."""
    name = "user namespaces"
    unshare = shutil.which("unshare")
    if unshare is None:
        return SandboxCheck(name, None, "not checked: util-linux's unshare is not installed")
    try:
        done = subprocess.run([unshare, "--user", "true"], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return SandboxCheck(name, None, f"not checked: unshare could not run: {e}")
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        needed = "; bubblewrap needs them to run as a user other than root" if os.geteuid() != 0 else ""
        return SandboxCheck(name, False, f"not allowed ({lines[-1] if lines else f'exit {done.returncode}'}){needed}")
    if hardened:
        return SandboxCheck(name, True, "allowed; commands cannot make their own (bwrap --disable-userns)")
    if works:
        return SandboxCheck(name, True, "allowed, but this bwrap cannot keep commands from making their own "
                                        "(bubblewrap 0.8 or later can)")
    return SandboxCheck(name, True, "allowed")


def _seccomp() -> SandboxCheck:
    program, missing = socket_filter()
    if program is None:
        return SandboxCheck("seccomp filter", False, f"{missing}: commands can reach the host's Unix sockets")
    return SandboxCheck("seccomp filter", True, "loads: commands cannot open Unix sockets")


def _path() -> SandboxCheck:
    closed = closed_entries(os.environ.get("PATH", os.defpath))
    if not closed:
        return SandboxCheck("PATH", True, "every folder on it can be searched")
    return SandboxCheck("PATH", False, f"{', '.join(closed)} cannot be read by this user: commands run without "
                                       f"{'it' if len(closed) == 1 else 'them'}")
