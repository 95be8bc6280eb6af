"""``tooltrial report RESULTS...``: the tables of results already on disk.

One folder: its run lines, pass count and comparison tables, as ``tooltrial run``
printed them. Two folders: the regression view, the first as before and the
second as after. ``--output json`` prints the report document (or the
regression document) instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence, TextIO

from rich.console import Console

from runner.errors import ExitCode, UserError
from runner.output.report import regression_document, report_document
from runner.output.load import Results, read_results
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate, exit_code
from runner.scoring.regression import regression
from runner.terminal.console import make_console
from runner.terminal.lines import RunPrinter, print_interrupted
from runner.terminal.statistics import print_regression, print_statistics
from runner.terminal.tables import print_summary


def add(sub: argparse._SubParsersAction) -> None:
    """The ``report`` subcommand's parser."""
    report = sub.add_parser("report", help="show results on disk; two folders show what changed")
    report.add_argument("folders", nargs="+", type=Path, metavar="RESULTS", help="results/<run-id> folders (or results/ for the newest)")
    report.add_argument("--output", choices=["text", "json"], default="text", help="tables, or one JSON document on stdout")


def command(args: argparse.Namespace) -> int:
    """Show the folders given; tables on stdout, or the JSON document there and the tables on stderr."""
    as_json = args.output == "json"
    return show_results(args.folders, as_json, make_console(sys.stderr if as_json else None), sys.stdout)


def show_results(folders: Sequence[Path], as_json: bool, console: Console, stdout: TextIO) -> int:
    """Print one folder's tables or two folders' regression view; raises UserError for any other count."""
    if len(folders) == 1:
        document = _show_one(read_results(folders[0]), as_json, console)
    elif len(folders) == 2:
        before, after = read_results(folders[0]), read_results(folders[1])
        change = regression(before.records, after.records)
        document = regression_document(change, str(before.path), str(after.path))
        if not as_json:
            print_regression(console, change, str(before.path), str(after.path))
    else:
        raise UserError(f"got {len(folders)} results folders", hint="give one to show it, or two to compare them")
    if as_json:  # ASCII, as run --output json prints it: any stdout carries it, lone surrogates included
        print(json.dumps(document, indent=2, default=str), file=stdout)
    return ExitCode.OK


def _show_one(results: Results, as_json: bool, console: Console) -> dict[str, Any]:
    """The report document of one folder, printing its lines and tables unless ``as_json``."""
    records = results.records
    report = results.report or {}
    unfinished = report.get("unfinished") or []
    model = aggregate(records)
    gates = evaluate(model.cells, _thresholds(results.report))
    if not as_json:
        printer = RunPrinter(console, len(model.arms) > 1, any(r.run > 1 for r in records))
        for record in records:
            printer.record(record)
        printer.totals(records, len(unfinished))
        print_summary(console, model)
        print_statistics(console, model, gates)
        if unfinished:
            left = [(u["case"], u["provider"], u["prompt"], u["run"]) for u in unfinished]
            print_interrupted(console, left, results.path, len(records))
    meta = {
        "run_id": results.path.name,
        "results": str(results.path),
        "started": report.get("started"),
        "finished": report.get("finished"),
    }
    return report_document(model, gates, records, exit_code(gates), meta, unfinished)


def _thresholds(report: dict[str, Any] | None) -> dict[str, float | None]:
    """Each case's gate threshold as the run recorded it (``cells[].gate.threshold``, the same in
    report versions 1 and 2); {} for a run that never finished."""
    cells = (report or {}).get("cells", [])
    return {c["case"]: c["gate"]["threshold"] for c in cells if c.get("gate")}
