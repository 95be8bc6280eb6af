"""Finished runs with only their summaries in memory: a results folder scanned one run file at a time.

``tooltrial run`` keeps each run's summary (runner.scoring.summary) as it saves the run, and
``tooltrial report`` scans a folder likewise; whatever needs whole records (run lines, the report's
``runs``, JUnit, the HTML page, OpenTelemetry) reads them back from the run files, one at a time, so
memory does not grow with what the runs said or did. The folder's ``report.json`` is read up to its
``runs`` (which the run files hold again), so a report of 10,000 runs is not parsed whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from runner.errors import UserError
from runner.output.load import (
    NOT_OURS,
    checked,
    checked_part,
    read_run,
    record_from_dict,
    run_files,
    run_folder,
    schema_of,
)
from runner.output.report import run_item
from runner.output.spool import ItemSpool
from runner.output.store import REPORT_FILE, RUNS_DIR
from runner.run.record import RunRecord
from runner.scoring.summary import RunSummary, summarize

_PIECE = 1 << 20  # characters read at once


@dataclass(frozen=True)
class Runs:
    """Finished runs with only their summaries in memory (runner.scoring.summary): ``summaries`` and the
    run ``files`` that hold their whole records, in the same order, and the ``spool`` of their streamed
    outputs' pieces (the report's items among them) when the runs were just saved. ``records()`` reads
    the records back one at a time, so a reader of every record holds one at once."""

    summaries: list[RunSummary]
    files: list[Path]
    spool: ItemSpool | None = None

    def records(self, where: Callable[[RunSummary], bool] | None = None) -> Iterator[RunRecord]:
        """Each run's record (only those whose summary ``where`` holds for, when given), read back from its
        file (already checked when written or scanned)."""
        for summary, path in zip(self.summaries, self.files):
            if where is None or where(summary):
                yield record_from_dict(json.loads(path.read_text(encoding="utf-8")))

    def items(self, name: str = "report",
              make: Callable[[RunRecord, dict[str, Any] | None], str] = run_item) -> Iterator[str]:
        """Each run's piece of the streamed output ``name`` (runner.output.formats; by default the report's
        ``runs``, runner.output.report.run_item), in order: from the spool, which keeps each as
        ``(name, run key)``, where it holds them all, else made by ``make`` from the records read back."""
        keys = [(name, (s.case, s.provider, s.prompt, s.run, s.tool_defs)) for s in self.summaries]
        if self.spool is not None and self.spool.holds(keys):
            yield from self.spool.items(keys)
        else:
            yield from (make(record, None) for record in self.records())


@dataclass(frozen=True)
class Scanned:
    """A results folder read as runner.output.load.read_results reads it, keeping only each run's
    summary: ``runs``, and the ``report`` if finished, its ``runs`` left out and of each of its ``cells``
    only ``case`` and ``gate`` (read_report_head)."""

    path: Path
    runs: Runs
    report: dict[str, Any] | None


def scan_results(folder: Path) -> Scanned:
    """runner.output.load.read_results holding one record at a time: each run file is checked and its
    record summarized. Raises UserError as ``read_results`` does."""
    folder = run_folder(Path(folder))
    files = run_files(folder)
    if not files:
        raise UserError(f"no run files in {folder / RUNS_DIR}")
    summaries = []
    for path in files:
        summaries.append(summarize(read_run(path)))
    report = read_report_head(folder / REPORT_FILE) if (folder / REPORT_FILE).is_file() else None
    return Scanned(folder, Runs(summaries, files), report)


def read_report_head(path: Path) -> dict[str, Any]:
    """A ``report.json`` but its ``runs`` (given as ``[]``), with only ``case`` and ``gate`` of each of its
    ``cells``, checked against its schema; read a value at a time up to ``runs`` where tooltrial wrote it
    (its last key), else the whole file. Raises UserError."""
    try:
        head = _head(path)
        whole = path.read_text(encoding="utf-8") if head is None else None
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}: {e}", hint=NOT_OURS) from e
    return head if head is not None else checked(path, _whole(path, whole or ""), "report")


def _head(path: Path) -> dict[str, Any] | None:
    """The checked report of ``path`` read one top-level value at a time up to its ``runs`` key, each cell
    decoded, checked and cut to what a report reads of it (``case``, ``gate``) one at a time, so neither the
    file's text nor its cells are ever held whole (holding the text before ``runs`` took two copies of it
    at once: 80 MB at 10,000 cells); None where the file is not laid out so (``runs`` not on a line of its own
    after the other keys, ``cells`` not a list, no ``schema_version`` before it...): then it is read whole.
    Raises UserError for a cell not of its schema, OSError and UnicodeDecodeError as reading does."""
    kept: dict[str, Any] = {}
    with open(path, encoding="utf-8") as file:
        text = _Values(file)
        try:
            if not text.take("{"):
                return None
            while isinstance(key := text.value(), str) and key != "runs" and text.take(":"):
                if key != "cells":
                    kept[key] = text.value()
                elif "schema_version" in kept and text.take("["):
                    kept["cells"] = _cells(path, text, schema_of(kept, "report"))
                else:
                    return None
                if not text.take(","):
                    return None
        except (json.JSONDecodeError, RecursionError):
            return None
    if key != "runs" or text.blank != "\n  " or "cells" not in kept:  # indented so, runs is the last key (to_json)
        return None
    return {**checked(path, {**kept, "cells": [], "runs": []}, "report"), "cells": kept["cells"]}


def _cells(path: Path, text: _Values, schema: str) -> list[dict[str, Any]]:
    """The report's ``cells`` after their ``[``, each checked against ``schema``'s cell as it is decoded."""
    cells: list[dict[str, Any]] = []
    while not text.take("]"):
        if cells and not text.take(","):
            raise json.JSONDecodeError("expected ',' or ']'", "", 0)
        cell = text.value()
        checked_part(path, cell, schema, "cell", ["cells", len(cells)])
        cells.append({"case": cell.get("case"), "gate": cell.get("gate")})
    return cells


class _Values:
    """JSON values read one after another from a text file a piece at a time: only what is not yet decoded
    is held, a piece (``_PIECE`` characters) or, for a longer value, about twice the value."""

    def __init__(self, file: TextIO) -> None:
        self._file, self._text, self._at, self._ended = file, "", 0, False
        self.blank = ""  # the white space before the last value or character looked for
        self._decoder = json.JSONDecoder()

    def _more(self, at_least: int = 0) -> bool:
        """Read on; False at the end of the file."""
        piece = "" if self._ended else self._file.read(max(at_least, _PIECE))
        self._ended = not piece
        if piece:
            self._text, self._at = self._text[self._at:] + piece, 0
        return bool(piece)

    def _skip(self) -> None:
        """Past JSON white space, reading on where a piece ends in it; what it passed is ``blank``."""
        passed = []
        while True:
            start = self._at
            while self._at < len(self._text) and self._text[self._at] in " \t\r\n":
                self._at += 1
            passed.append(self._text[start:self._at])
            if self._at < len(self._text) or not self._more():
                self.blank = "".join(passed)
                return

    def take(self, char: str) -> bool:
        """Whether the next character but JSON white space is ``char``; taken if so."""
        self._skip()
        if self._text.startswith(char, self._at):
            self._at += 1
            return True
        return False

    def value(self) -> Any:
        """The next value. Raises json.JSONDecodeError (and RecursionError) as ``json.loads`` does."""
        self._skip()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._text, self._at)
            except json.JSONDecodeError:
                if self._more(len(self._text) - self._at):  # cut off where a piece ends: read as much again
                    continue
                raise
            if end < len(self._text) or not self._more():  # a number may go on in the next piece
                self._at = end
                return value


def _whole(path: Path, text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise UserError(f"cannot read {path}: {e}", hint=NOT_OURS) from e


def saved_runs(summaries: list[RunSummary], folder: Path, spool: ItemSpool | None = None) -> Runs:
    """The Runs of a results folder tooltrial has just written, whose runs' ``summaries`` it kept, in plan
    order, with the ``spool`` of their streamed pieces. Raises RuntimeError (tooltrial's own bug) when the
    folder's run files are not one per summary."""
    files = run_files(folder)
    if len(files) != len(summaries):
        raise RuntimeError(f"{folder / RUNS_DIR} holds {len(files)} run files for {len(summaries)} finished runs")
    return Runs(summaries, files, spool)
