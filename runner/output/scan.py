"""Finished runs with only their summaries in memory: a results folder scanned one run file at a time.

``tooltrial run`` keeps each run's summary (runner.scoring.summary) as it saves the run, and
``tooltrial report`` scans a folder likewise; whatever needs whole records (run lines, the report's
``runs``, JUnit, the HTML page, OpenTelemetry) reads them back from the run files, one at a time, so
memory does not grow with what the runs said or did. The folder's ``report.json`` is read up to its
``runs`` (which the run files hold again), so a report of 10,000 runs is not parsed whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

_RUNS_KEY = '\n  "runs": '  # how to_json writes report.json's last key: a line break never occurs inside a string
_CELLS_KEY = '\n  "cells": '
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
    ``cells``, checked against its schema; only the text before ``runs`` is read where tooltrial wrote it
    (its last key), else the whole file. Raises UserError."""
    try:
        head = _text_before(path, _RUNS_KEY)
        whole = path.read_text(encoding="utf-8") if head is None else None
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}: {e}", hint=NOT_OURS) from e
    return _head(path, head) if head is not None else checked(path, _whole(path, whole or ""), "report")


def _text_before(path: Path, key: str) -> str | None:
    """The text of ``path`` before the first ``key`` in it, read a piece at a time; None when it has none.
    One copy of that text is alive once it is returned, two while the pieces are joined (a report's cells
    are about 2.8 KB each, so 28 MB at 10,000). Raises OSError and ValueError (not UTF-8) as reading does."""
    pieces: list[str] = []
    read = 0  # characters in ``pieces``
    carry = ""  # the end of what was read, where the key may start
    with open(path, encoding="utf-8") as text:
        while piece := text.read(_PIECE):
            window = carry + piece
            at = window.find(key)
            pieces.append(piece)
            if at >= 0:
                joined = "".join(pieces)
                del pieces[:]
                return joined[: read - len(carry) + at]
            read += len(piece)
            carry = window[-(len(key) - 1):]
    return None


def _head(path: Path, text: str) -> dict[str, Any]:
    """The checked report of ``text`` (report.json up to ``,`` and its ``runs`` key), ``runs`` empty and
    each cell decoded, checked and cut to what a report reads of it (``case``, ``gate``) one at a time;
    the whole file's where that text is not as tooltrial writes it."""
    version = re.match(r'\{\s*"schema_version": (\d+),', text)
    start = text.find(_CELLS_KEY)
    if version is None or start < 0 or not text.startswith("[", start + len(_CELLS_KEY)):
        return checked(path, _whole(path, path.read_text(encoding="utf-8")), "report")
    schema = schema_of({"schema_version": int(version.group(1))}, "report")
    decoder, at = json.JSONDecoder(), start + len(_CELLS_KEY) + 1
    cells: list[dict[str, Any]] = []
    try:
        while (at := _blank(text, at)) < len(text) and text[at] != "]":
            cell, at = decoder.raw_decode(text, at)
            checked_part(path, cell, schema, "cell", ["cells", len(cells)])
            cells.append({"case": cell.get("case"), "gate": cell.get("gate")})
            at = _blank(text, at)
            at += text.startswith(",", at)
        rest = json.loads(text[:start] + _CELLS_KEY + "[]" + text[at + 1:].removesuffix(",") + "\n}")
    except (ValueError, RecursionError):
        return checked(path, _whole(path, path.read_text(encoding="utf-8")), "report")
    return {**checked(path, {**rest, "runs": []}, "report"), "cells": cells}


def _blank(text: str, at: int) -> int:
    """The place of the first character at or after ``at`` that is not JSON white space."""
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


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
