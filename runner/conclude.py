"""What happens once the run matrix is done: gates, the report, JUnit, the comparison tables, the exit code.

Every run file is already on disk (written as each run ended); this adds
``report.json`` to the results folder, the ``--report`` and ``--junit`` files,
the tables after the run lines and the results folder's path (on stderr), or on
``--output json`` the report on stdout (the path is its ``results`` key). Every
report document carries the statistics (runner.reportdoc), the summary and
every run record (runner.report), as ``schemas/report.schema.json`` pins.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence, TextIO

from rich.console import Console

from runner.cases import Case
from runner.compare import aggregate
from runner.compare_tables import print_statistics
from runner.engine import RunKey
from runner.gates import evaluate, exit_code
from runner.junit import junit_xml
from runner.record import RunRecord
from runner.reportdoc import report_document, unfinished_list
from runner.results import ResultsWriter, to_json, write_replace


def utc_now() -> str:
    """The current time, ISO 8601 in UTC to the second (``2025-03-14T09:26:53Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Conclusion:
    """Where the outputs go: ``report`` and ``junit`` files (None: not written), ``as_json`` for
    ``--output json``, the suite's ``min_pass_rate`` gate (None: every run must pass), and the
    runs an interruption left ``unfinished`` (case, provider, prompt, run index)."""

    report: Path | None = None
    junit: Path | None = None
    as_json: bool = False
    min_pass_rate: float | None = None
    unfinished: Sequence[RunKey] = ()


def conclude(
    records: Sequence[RunRecord],
    cases: Sequence[Case],
    writer: ResultsWriter,
    started: str,
    outputs: Conclusion,
    console: Console,
    stdout: TextIO = sys.stdout,
) -> int:
    """Write the report files, print the comparison, and return the exit code: runner.gates.exit_code,
    or 2 (interrupted) when runs were left unfinished, which the report lists under ``unfinished``."""
    gates = evaluate(records, {c.full_id: c.min_pass_rate for c in cases}, outputs.min_pass_rate)
    comparison = aggregate(records)
    meta = {"run_id": writer.run_id, "results": str(writer.path), "started": started, "finished": utc_now()}
    unfinished = unfinished_list(outputs.unfinished)
    document = report_document(comparison, gates, records, exit_code(gates), meta, unfinished)
    writer.write_report(document)
    if outputs.report is not None:
        write_replace(outputs.report, to_json(document))
    if outputs.junit is not None:
        write_replace(outputs.junit, junit_xml(records, gates, started))
    print_statistics(console, comparison, gates)
    if outputs.as_json:
        json.dump(document, stdout, indent=2, default=str)
        print(file=stdout)
    else:
        print(f"results: {writer.path}", file=sys.stderr)
    return document["exit_code"]
