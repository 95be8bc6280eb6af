"""Sandboxes for tests: both modes where bubblewrap works here, a skip with the reason where not."""

from __future__ import annotations

import os
import pickle
import time
import traceback
from pathlib import Path
from typing import Any, Callable, TypeVar

import pytest

from runner.bwrap import host_view, probe
from runner.confine import namespace_prefix
from runner.sandbox import Sandbox

T = TypeVar("T")

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


NOBODY = 65534


def as_nobody(fn: Callable[[], T]) -> T:
    """``fn()`` in a forked child running as uid and gid 65534 (nobody), its result (pickled) returned;
    an exception in the child fails the caller with the child's traceback. As a user other than
    root, ``fn()`` runs as is. The child is tooltrial's own interpreter, already loaded, so nothing
    under root's home needs to be readable; what ``fn`` writes must be writable by nobody. The
    probes cached for root (namespaces, host view) are made again as nobody."""
    if os.geteuid() != 0:
        return fn()
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.environ["HOME"] = "/nonexistent"
            namespace_prefix.cache_clear()
            host_view.cache_clear()
            outcome: tuple[str, Any] = ("ok", fn())
        except BaseException:  # everything goes back to the parent
            outcome = ("error", traceback.format_exc())
        with os.fdopen(write_end, "wb") as out:
            out.write(pickle.dumps(outcome))
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as received:
        data = received.read()
    os.waitpid(child, 0)
    kind, value = pickle.loads(data)
    if kind == "error":
        pytest.fail(f"as nobody:\n{value}")
    return value
