"""Sandboxes for tests: both modes where bubblewrap works here, a skip with the reason where not."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from runner.sandbox.bwrap import probe
from runner.sandbox.command import Sandbox
from runner.sandbox.visible import hidden_path

ROOT = Path(__file__).resolve().parent.parent
BWRAP, BWRAP_HARDENED, BWRAP_REASON = probe()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"bubblewrap unusable here: {BWRAP_REASON}")
MODES = [pytest.param("none", id="plain"), pytest.param("bwrap", id="bwrap", marks=needs_bwrap)]


def make_sandbox(mode: str) -> Sandbox:
    """A Sandbox of ``mode`` (``none`` or ``bwrap``, the latter only when usable)."""
    return Sandbox("bwrap", BWRAP, hardened=BWRAP_HARDENED) if mode == "bwrap" else Sandbox("none")


def _checkout_hidden() -> str | None:
    """Why commands under bubblewrap cannot see the checkout (and its .venv), e.g. a clone in a home folder, which
    bubblewrap hides as it would hide a user's own; None when they can, or bubblewrap is unusable anyway."""
    if BWRAP is None:
        return None
    found = hidden_path(make_sandbox("bwrap"), str(ROOT), Path("/nonexistent-workspace"), {"PATH": "/usr/bin:/bin"})
    return None if found is None else f"the checkout is hidden under bubblewrap ({found.reason})"


def _checkout_closed() -> str | None:
    """Why another user (nobody) cannot read the checkout: a folder on its way others may not enter; None if they can."""
    closed = [str(p) for p in (ROOT, *ROOT.parents) if not os.stat(p).st_mode & 0o001]
    return f"other users cannot enter {closed[0]}, on the checkout's way" if closed else None


CHECKOUT_HIDDEN, CHECKOUT_CLOSED = _checkout_hidden(), _checkout_closed()
# Tests whose commands run the checkout's own interpreter or files under bubblewrap, and tests run as another user.
needs_visible_checkout = pytest.mark.skipif(CHECKOUT_HIDDEN is not None, reason=str(CHECKOUT_HIDDEN))
needs_open_checkout = pytest.mark.skipif(CHECKOUT_CLOSED is not None, reason=str(CHECKOUT_CLOSED))


def processes_with(token: str) -> list[int]:
    """Host pids of live (non-zombie) processes whose command line contains ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if token in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def none_left(token: str, within: float = 2.0) -> bool:
    """Whether every process with ``token`` in its command line is gone within ``within`` seconds."""
    deadline = time.monotonic() + within
    while processes_with(token):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True

