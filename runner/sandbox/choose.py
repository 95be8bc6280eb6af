"""The sandbox of one invocation (``--sandbox auto|bwrap|none``), decided once, before any run, and never changed
after: worker processes and Ray tasks rebuild this one (runner.sandbox.machine), and a command that cannot be
started confined later is its run's infrastructure error (runner.sandbox.started), never run unconfined.

``auto`` takes ``none`` only when bubblewrap does not work here (missing, refused by the kernel); a trial the
machine refused for the moment (out of processes or memory) is made again, and refused each time, stops the
invocation (MachineBusy, exit 6) rather than being read as that answer.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from runner.errors import UserError
from runner.sandbox.bwrap import probe
from runner.sandbox.command import Sandbox
from runner.sandbox.guard import guard_prefix, guarded
from runner.sandbox.searchpath import closed_warnings

_UNCONFINED = "they can read and write your files and use your network"


def bubblewrap() -> tuple[str | None, bool, str]:
    """runner.sandbox.bwrap.probe of the ``bwrap`` on PATH, its trial started as commands are (runner.sandbox.guard).
    Raises MachineBusy as the probes do."""
    return probe(wrap=functools.partial(guarded, prefix=guard_prefix()[0], parent=os.getpid()))


def choose_sandbox(requested: str, hide: Sequence[Path] = ()) -> Sandbox:
    """The Sandbox for ``--sandbox requested`` (one of runner.sandbox.command.MODES); ``hide`` as for Sandbox.

    ``auto`` is bwrap when it works here, else ``none`` after a warning on stderr. Every weakness of the chosen
    sandbox (``Confinement.note``) is a warning line on stderr before any run, and so is each folder dropped from
    commands' ``PATH`` (runner.sandbox.searchpath). Raises UserError when ``bwrap`` is requested but does not work,
    MachineBusy when the machine refused a probe's trial each time it was made.
    """
    if requested == "none":
        sandbox = Sandbox("none", note="requested with --sandbox none")
        print(f"warning: --sandbox none: commands run unconfined: {_UNCONFINED}", file=sys.stderr)
    else:
        binary, hardened, reason = bubblewrap()
        if binary is None and requested == "bwrap":
            raise UserError(f"bubblewrap sandbox unavailable: {reason}",
                            hint="install bubblewrap (apt-get install bubblewrap) or use --sandbox none")
        if binary is None:
            sandbox = Sandbox("none", note=f"bubblewrap unavailable: {reason}")
            print(f"warning: bubblewrap unavailable ({reason}); commands run unconfined: {_UNCONFINED}",
                  file=sys.stderr)
        else:
            sandbox = Sandbox("bwrap", binary, hide, hardened)
    for weakness in (*sandbox.weaknesses, *closed_warnings(os.environ.get("PATH", os.defpath))):
        print(f"warning: {weakness}", file=sys.stderr)
    return sandbox
