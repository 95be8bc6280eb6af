"""Sandboxes for tests: both modes where bubblewrap works here, a skip with the reason where not."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runner.sandbox.bwrap import probe
from runner.sandbox.command import Sandbox

BWRAP, BWRAP_HARDENED, BWRAP_REASON = probe()
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason=f"bubblewrap unusable here: {BWRAP_REASON}")
MODES = [pytest.param("none", id="plain"), pytest.param("bwrap", id="bwrap", marks=needs_bwrap)]


def make_sandbox(mode: str) -> Sandbox:
    """A Sandbox of ``mode`` (``none`` or ``bwrap``, the latter only when usable)."""
    return Sandbox("bwrap", BWRAP, hardened=BWRAP_HARDENED) if mode == "bwrap" else Sandbox("none")


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

