"""Durable results on disk: one JSON file per finished run, a report at the end; the one atomic write.

Layout of one invocation's folder::

    results/<run-id>/                  run-id = UTC time + random suffix: 20250314T092653Z-3fa2c1
      runs/0001-<case>-<arm>-r1.json   one run record each, written the moment the run ends
      runs/0002-...
      report.json                      the summary, written when the whole matrix is done

Every file is written to a hidden temporary file in the same folder, flushed
to disk, then hard-linked to its final name: the link is atomic and fails if
the name exists, so a file is either complete or absent, and nothing is ever
overwritten. A crash or Ctrl-C loses no finished run; readers ignore the
leftover ``.*.tmp`` files. Each document carries ``schema_version``
(``schemas/run.schema.json``, ``schemas/report.schema.json``); runner.output.load reads them back.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from runner.errors import UserError
from runner.output.decode import out_of_range
from runner.run.record import RunRecord

SCHEMA_VERSION = 2
RUNS_DIR = "runs"
REPORT_FILE = "report.json"
_SURROGATE = re.compile("[\ud800-\udfff]")  # only ever inside a string of JSON text


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-xxxxxx``: UTC time to the second and 6 random hex digits; sorts by time."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def write_new(path: Path, text: str | Iterable[str]) -> None:
    """Create ``path`` with ``text`` (a string, or its pieces in order) atomically; raises FileExistsError
    rather than overwrite it."""
    _write_atomic(path, text, os.link)


def write_replace(path: Path, text: str | Iterable[str]) -> None:
    """Write ``path`` atomically, replacing any earlier file (for ``--report`` and ``--junit`` targets);
    ``text`` is a string or its pieces in order, written as they come (a report too large to hold at once).
    Raises OSError (EINVAL) for a path that is no regular file to replace (``not_replaceable``): a device, a
    pipe, ``/dev/stdout``'s link."""
    if not_replaceable(path):
        raise OSError(errno.EINVAL, "not a regular file (a device, pipe or socket)", str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, text, os.replace)


def not_replaceable(path: Path) -> bool:
    """Whether ``path`` exists as something an atomic write must not replace: not a regular file, or one reached
    through /dev or /proc (``/dev/stdout`` leads, by ``/proc/self/fd/1``, to a regular file when stdout is one,
    and replacing it would replace the machine's link)."""
    if not os.path.lexists(path):
        return False
    step = Path(os.path.abspath(path))
    for _ in range(40):  # the kernel's own bound on a chain of links
        if step.is_relative_to("/dev") or step.is_relative_to("/proc"):
            return True
        if not step.is_symlink():
            return not step.is_file()
        step = Path(os.path.normpath(step.parent / os.readlink(step)))
    return True


def _umask() -> int:
    """The process's umask, read without setting it (``os.umask`` sets it for every thread): Linux's
    /proc/self/status says it; 0o022 where it does not."""
    with contextlib.suppress(OSError, StopIteration, ValueError), open("/proc/self/status", encoding="ascii") as status:
        return int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    return 0o022


_MODE = 0o666 & ~_umask()  # what open() would give a new file; mkstemp's own is 0o600


def _write_atomic(path: Path, text: str | Iterable[str], publish: Callable[[str, Path], None]) -> None:
    """Write a hidden temporary file beside ``path`` (mode as a plain new file would get), flush it to
    disk, then ``publish(temp, path)``."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".tmp")
    try:
        os.fchmod(fd, _MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.writelines([text] if isinstance(text, str) else text)
            out.flush()
            os.fsync(out.fileno())
        publish(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)


def json_default(value: Any) -> Any:
    """What JSON text holds for a value JSON has no type for (``json.dumps``'s ``default``): a sequence
    other than text (runner.output.report.CellDicts) as its list, anything else as its ``str``."""
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return list(value)
    return str(value)


def to_json(document: Any) -> str:
    """``document`` as indented JSON text (two spaces, as ``json.dumps(indent=2)`` lays it out; non-ASCII
    kept, anything else JSON has no type for as ``json_default`` writes it) that always encodes as UTF-8.

    Encoded by orjson (with ``indent``, ``json`` falls back to its pure-Python encoder, many times slower),
    so a float is written as its shortest decimal (``1e-05`` is ``0.00001``)
    and a NaN or an infinity, which JSON has not, as ``null`` (where a record's free JSON holds one, say a
    model's tool arguments; its own fields never do: ResultsWriter.write_run refuses them). A lone surrogate (a byte of a file name
    that is not UTF-8, as ``os.fsdecode`` holds it, or a model's ``"\\ud800"``) is written as its JSON
    escape, ``\\udcff``, which ``json.loads`` reads back exactly, and an integer beyond 64 bits in full
    (``_stood_in``). A high surrogate next to a low one is written as the character they pair to, which
    is what ``json.loads`` reads either as: so a record encoded again after a round trip through its
    file gives the same text.
    """
    try:
        return orjson.dumps(document, default=json_default, option=_OPTIONS).decode() + "\n"
    except orjson.JSONEncodeError:
        return _stood_in(document)


_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
_LONGEST = (-(2**63), 2**64)  # the integers orjson writes: from this, below that


def _stood_in(document: Any) -> str:
    """``to_json`` of a document orjson refuses: each text holding a surrogate and each integer beyond
    64 bits stands in as a string of its own (NUL, a random nonce, its number, NUL), the document is
    encoded, and each stand-in's JSON is replaced by the value's own (``json``'s, which writes text
    as orjson does). A document nested deeper than orjson goes (255 levels) is encoded by ``json``."""
    nonce, own = secrets.token_hex(8), []

    def stand(text: str) -> str:
        own.append(text)
        return f"\x00{nonce}{len(own) - 1}\x00"

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return stand(_text_json(value)) if _SURROGATE.search(value) else value
        if isinstance(value, int) and not isinstance(value, bool) and not _LONGEST[0] <= value < _LONGEST[1]:
            return stand(str(int(value)))
        if isinstance(value, dict):
            return {swap(key): swap(item) for key, item in value.items()}
        if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            return [swap(item) for item in value]
        return value

    try:
        text = orjson.dumps(swap(document), default=json_default, option=_OPTIONS).decode()
    except (orjson.JSONEncodeError, RecursionError):
        return _text_json(document) + "\n"
    return re.sub(f'"\\\\u0000{nonce}(\\d+)\\\\u0000"', lambda found: own[int(found.group(1))], text) + "\n"


def _text_json(value: Any) -> str:
    """``value`` as ``json`` writes it (indented), each surrogate pair as its character, each lone one escaped."""
    text = json.dumps(value, indent=2, ensure_ascii=False, default=json_default)
    return _SURROGATE.sub(_escaped, _PAIR.sub(_paired, text)) if _SURROGATE.search(text) else text


_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _paired(found: re.Match[str]) -> str:
    return found.group().encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _escaped(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


_NON_ASCII = re.compile("[^\x00-\x7f]")


def ascii_json(text: str) -> str:
    """JSON text as ``to_json`` makes it, with every character beyond ASCII written as its ``\\u`` escape
    (a surrogate pair beyond U+FFFF), as ``json.dumps``'s ``ensure_ascii`` writes them: for a stdout of
    any encoding, without encoding the document again. Outside strings JSON text is ASCII,
    so every such character is inside one, where the escape means the same."""
    return _NON_ASCII.sub(lambda found: json.dumps(found.group())[1:-1], text)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:60] or "x"


class ResultsWriter:
    """Writes one invocation's results under ``root/<run-id>/``; safe to call from several threads.

    Raises UserError when the folder cannot be created.
    """

    def __init__(self, root: Path) -> None:
        self.run_id = new_run_id()
        self.path = Path(root) / self.run_id
        try:
            (self.path / RUNS_DIR).mkdir(parents=True)
        except OSError as e:
            raise UserError(f"cannot create the results folder {self.path}: {e.strerror}") from e
        self._next = 0
        self._lock = threading.Lock()

    def write_run(self, record: RunRecord, number: int | None = None, data: dict[str, Any] | None = None) -> Path:
        """Write one finished run as ``runs/NNNN-<case>-<arm>-r<run>.json`` and return its path.

        ``number`` is NNNN, the run's place in the plan, so the files sort in plan order
        whatever order the runs end in; None takes the number after the highest so far.
        ``data`` is ``record.to_dict()`` where the caller has made it already.

        Raises ValueError, writing nothing, for a record holding a number that reading the file back would
        refuse (runner.output.decode: out of its range, or a NaN, which the JSON would hold as null): such a
        number is tooltrial's own bug, and the run is saved as its internal error instead
        (runner.suite.engine).
        """
        fault = out_of_range(record)
        if fault is not None:
            where = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in fault[0]).lstrip(".")
            raise ValueError(f"the record of {record.case} run {record.run} cannot be written: {where}: {fault[1]}")
        with self._lock:
            if number is None:
                number = self._next + 1
            self._next = max(self._next, number)
        name = f"{number:04d}-{_slug(record.case)}-{_slug(record.arm)}-r{record.run}.json"
        path = self.path / RUNS_DIR / name
        fields = record.to_dict() if data is None else data
        write_new(path, to_json({"schema_version": SCHEMA_VERSION, "run_id": self.run_id, **fields}))
        return path

    def write_report(self, report: dict[str, Any] | str | Iterable[str]) -> Path:
        """Write ``report.json`` (once): the report document, or its text as ``to_json`` made it (or its
        pieces: runner.output.report.report_text)."""
        path = self.path / REPORT_FILE
        write_new(path, to_json(report) if isinstance(report, dict) else report)
        return path


# JSON's types, as Python hints and as messages name them.
