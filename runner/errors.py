"""User-facing errors and the one boundary that maps them to exit codes.

Exit codes (DESIGN.md "CLI"): 0 all passed, 1 the agent failed some case,
2 interrupted, partial results kept (Ctrl-C, an output closed during the runs, a
results folder or report file that could not be written), 3 tooltrial's own internal
error, 4 bad usage / config / case file (a fixture that cannot be copied too), 5 no
case selected, 6 infrastructure broke runs (provider or judge unreachable, setup
failed, the machine out of processes). Which wins when runs break for several reasons: runner.scoring.gates.
"""

from __future__ import annotations

import difflib
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TextIO, TypeVar

from runner.text import printable


class ExitCode(IntEnum):
    """Process exit codes of the `tooltrial` command."""

    OK = 0
    FAILED = 1
    INTERRUPTED = 2
    INTERNAL = 3
    USAGE = 4
    NO_CASES = 5
    INFRASTRUCTURE = 6


@dataclass(frozen=True)
class Location:
    """A position in a user file; line and column are 1-based."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column is not None:
                parts.append(str(self.column))
        return ":".join(parts)


class UserError(Exception):
    """A mistake the user can fix: bad usage, a bad case or config file.

    Args:
        message: what is wrong, one line.
        location: where, if it is in a file.
        path: the enclosing keys, e.g. ``"expect.files"``, shown before the message.
        hint: what to do about it, shown in parentheses.

    Rendered as ``file:line:col: path: message (hint)``.
    """

    exit_code = ExitCode.USAGE

    def __init__(
        self,
        message: str,
        location: Location | None = None,
        path: str = "",
        hint: str = "",
    ) -> None:
        self.message = message
        self.location = location
        self.path = path
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        text = f"{self.path}: {self.message}" if self.path else self.message
        if self.hint:
            text = f"{text} ({self.hint})"
        return f"{self.location}: {text}" if self.location else text


class CaseFileError(UserError):
    """A case file that cannot be loaded or does not match the case schema."""


class CaseFileWarning(CaseFileError):
    """A case file mistake that stops no run but makes a check check nothing (``avoid`` naming a
    tool the case does not offer). ``validate`` prints it as a warning, ``validate --strict`` as an
    error; ``run`` and ``list`` run the case as written."""


class ConfigError(UserError):
    """A project config file (tooltrial.yml) or CLI option that is invalid."""


class MachineBusy(UserError):
    """The machine refused a process or a thread again and again (``Resource temporarily unavailable``,
    ``Cannot allocate memory``: out of processes or memory), so tooltrial could not find out or do what it
    needed: an infrastructure failure (exit 6), never read as what the machine cannot do."""

    exit_code = ExitCode.INFRASTRUCTURE


THREAD_REFUSED = "the machine could not start a thread for this run (out of processes or memory)"


def thread_refused(error: BaseException) -> bool:
    """Whether ``error`` is the machine refusing a new thread (Python's ``can't start new thread``: out of
    processes or memory), not a bug of the thread's use."""
    return isinstance(error, RuntimeError) and "can't start new thread" in str(error)


class UserErrors(Exception):
    """Several user errors found at once (``tooltrial validate`` reports all)."""

    exit_code = ExitCode.USAGE

    def __init__(self, errors: Sequence[UserError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(e.render() for e in errors))


AnyUserError = TypeVar("AnyUserError", bound=UserError)


def in_file_order(errors: Iterable[AnyUserError]) -> list[AnyUserError]:
    """``errors`` sorted by line, then column, in their file: one without a position (or without
    a line or column) counts as line 0, column 0, so it comes first; ties keep their order."""
    def place(error: UserError) -> tuple[int, int]:
        where = error.location
        return (where.line or 0, where.column or 0) if where else (0, 0)

    return sorted(errors, key=place)


def did_you_mean(word: str, choices: Iterable[str], otherwise: str = "") -> str:
    """A hint naming the choice closest to a misspelled ``word`` (difflib), else ``otherwise``."""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean {close[0]!r}?" if close else otherwise


def run_at_boundary(fn: Callable[[], int], stderr: TextIO | None = None) -> int:
    """Call ``fn`` and turn every expected error into a message and an exit code.

    User errors print one line each (``error: ...``, ``warning: ...`` for a CaseFileWarning listed
    beside them) and give 4; Ctrl-C, or a closed stdout (``| head``),
    gives 2; anything else is an internal error: one line on stderr naming a log file made
    for this invocation alone (``tooltrial-internal-error-*.log`` in the temp folder,
    created new, readable by its owner only), which holds the traceback, and 3.
    Messages are shown as runner.text.printable writes them.
    """
    err = stderr or sys.stderr
    try:
        return fn()
    except UserErrors as e:
        for one in e.errors:
            label = "warning" if isinstance(one, CaseFileWarning) else "error"
            print(f"{label}: {printable(one.render())}", file=err)
        return e.exit_code
    except UserError as e:
        print(f"error: {printable(e.render())}", file=err)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # the reader of stdout went away (``| head``): cut short, like Ctrl-C
        silence_output()
        return ExitCode.INTERRUPTED
    except Exception as e:  # noqa: BLE001 (the boundary: anything unexpected is a bug)
        where = _internal_log(traceback.format_exc())
        print(printable(f"internal error: {type(e).__name__}: {e} ({where})"), file=err)
        return ExitCode.INTERNAL


def _internal_log(text: str) -> str:
    """Write ``text`` to a new log file of its own (mkstemp: a fresh name, never a file or link
    already there); where it went, or the text itself when no log could be written."""
    try:
        fd, path = tempfile.mkstemp(prefix="tooltrial-internal-error-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as log:
            log.write(text)
    except OSError as e:
        return f"no log: {e.strerror}; traceback:\n{text}"
    return f"traceback in {path}"


def silence_output() -> None:
    """Point stdout's and stderr's file descriptors at /dev/null, so nothing more printed to a
    closed pipe fails, nor the interpreter's last flush of what is still buffered (the recipe
    in Python's ``signal`` docs)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (OSError, ValueError):  # no real file (replaced, or already closed)
            pass
