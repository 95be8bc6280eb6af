"""A probe's trial command (bubblewrap, a PID namespace, the start-up guard), made again while the machine
refuses it for the moment.

Under fork pressure (a busy machine, or a model's fork bomb in another suite) a trial fails with
``Resource temporarily unavailable`` or ``Cannot allocate memory``: that says nothing of what the machine can do,
so it must not decide the sandbox. Such a try is made again after a short, growing wait; a trial refused each
time raises MachineBusy (exit 6) rather than being taken for an answer.
"""

from __future__ import annotations

import errno
import subprocess
import time
from collections.abc import Sequence

from runner.errors import MachineBusy

TRANSIENT = frozenset((errno.EAGAIN, errno.ENOMEM))  # a start refused for the moment
TRANSIENT_WORDS = (b"Resource temporarily unavailable", b"Cannot allocate memory")  # their strerror in a message
TRIES = 6
FIRST_WAIT = 0.05  # seconds before the second try; doubled before each further one (1.55 s in all)


def transient(error: OSError) -> bool:
    """Whether ``error`` (from starting a process) is the machine's refusal for the moment: out of processes or
    memory."""
    return error.errno in TRANSIENT


def trial(argv: Sequence[str], timeout: float, what: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` (stdin closed, stdout and stderr captured), the trial of ``what`` (a program's name, for the
    message), and return how it ended.

    A try that cannot start for the moment (``transient``), or that fails saying so on its stderr, is made again,
    up to TRIES in all, after FIRST_WAIT seconds, then twice as long each time. Raises MachineBusy when every try was
    refused so, subprocess.TimeoutExpired after ``timeout`` seconds of one try, OSError when ``argv`` cannot be
    started for good (its program missing).
    """
    wait = FIRST_WAIT
    for attempt in range(1, TRIES + 1):
        try:
            done = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, check=False)
        except OSError as e:
            if not transient(e):
                raise
            why = e.strerror or str(e)
        else:
            if done.returncode == 0 or not any(words in done.stderr for words in TRANSIENT_WORDS):
                return done
            why = _last_line(done.stderr)
        if attempt < TRIES:
            time.sleep(wait)
            wait *= 2
    waited = FIRST_WAIT * (2 ** (TRIES - 1) - 1)
    raise MachineBusy(f"cannot tell whether {what} works here: {why} ({TRIES} tries in {waited:.2f} s)",
                      hint="the machine is out of processes or memory; try again once it is less busy")


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", errors="replace").strip().splitlines()
    return lines[-1] if lines else "refused"
