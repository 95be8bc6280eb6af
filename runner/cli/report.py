"""``tooltrial report RESULTS...``: the tables of results already on disk.

One folder: its run lines, pass count and comparison tables, as ``tooltrial run``
printed them. Two folders: the regression view, the first as before and the
second as after. ``--output json`` prints the report document (or the
regression document) instead. The output formats the table offers ``report``
(runner.output.formats: ``--html``, ``--summary-md``) are written as ``run``
writes them, by the same finish (runner.output.finish): of one folder, or of the
second with the regression.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console

from runner.cli.outputs import add_outputs, check_output_files, wanted_outputs
from runner.errors import UserError
from runner.output.finish import Ending, View, finish
from runner.output.formats import REPORT
from runner.output.regressiondoc import regression_document
from runner.output.report import report_head
from runner.output.scan import Scanned, scan_results
from runner.run.record import PASS
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate, exit_code
from runner.scoring.regression import regression
from runner.terminal.console import make_console
from runner.terminal.lines import RunPrinter
from runner.terminal.statistics import print_regression


def add(sub: argparse._SubParsersAction) -> None:
    """The ``report`` subcommand's parser."""
    report = sub.add_parser("report", help="show results on disk; two folders show what changed")
    report.add_argument("folders", nargs="+", type=Path, metavar="RESULTS", help="results/<run-id> folders (or results/ for the newest)")
    report.add_argument("--output", choices=["text", "json"], default="text", help="tables, or one JSON document on stdout")
    report.add_argument("--allow-changed", action="store_true",
                        help="with two folders, keep cases and arms whose inputs changed in the paired analysis")
    add_outputs(report, REPORT)
    report.add_argument("-q", "--quiet", action="store_true", help="print only the runs that did not pass, and the summary")


def command(args: argparse.Namespace) -> int:
    """Show the folders given; tables on stdout, or the JSON document there and the tables on stderr."""
    as_json = args.output == "json"
    console = make_console(sys.stderr if as_json else None)
    check_output_files(args, REPORT)
    outputs = wanted_outputs(args, REPORT, os.environ)
    return show_results(args.folders, as_json, console, sys.stdout, outputs, args.quiet,
                        allow_changed=args.allow_changed).code


def show_results(folders: Sequence[Path], as_json: bool, console: Console, stdout: TextIO,
                 outputs: Mapping[str, Any] | None = None, quiet: bool = False, gated: bool = False,
                 allow_changed: bool = False) -> Ending:
    """Print one folder's run lines (its passing runs' left out when ``quiet``) or two folders' regression
    view, then end as ``run`` does (runner.output.finish.finish): write ``outputs`` (format name -> target:
    of one folder, or of the second with the regression), print the tables and the JSON document, the
    report's or the regression's. The exit code (``Ending.code``) is the gates' when ``gated``, else 0,
    and 2 when an output could not be written. Raises UserError for any other count of folders. Only each
    run's summary stays in memory: what needs a whole record reads it back from its file. Two folders' cells
    whose inputs changed are left out of the paired analysis unless ``allow_changed`` (runner.scoring.regression)."""
    if len(folders) == 1:
        results = scan_results(folders[0])
        ending = _ending(results, gated)
        printer = None if as_json else RunPrinter(console, len(ending.model.arms) > 1,
                                                  any(r.run > 1 for r in ending.runs.summaries), quiet)
        if printer is not None:
            for record in results.runs.records((lambda run: run.status != PASS) if quiet else None):  # no file read in vain
                printer.record(record)
    elif len(folders) == 2:
        before, after = scan_results(folders[0]), scan_results(folders[1])
        try:
            change = regression(before.runs.summaries, after.runs.summaries, allow_changed)
        except UserError as e:
            raise _shards_hint(e, before, after) from None
        printer = None
        ending = _ending(after, gated, regression_document(change, str(before.path), str(after.path)))
        if not as_json:
            print_regression(console, change, str(before.path), str(after.path))
    else:
        raise UserError(f"got {len(folders)} results folders", hint="give one to show it, or two to compare them")
    finish(ending, outputs or {}, View(printer, as_json, stdout=stdout))
    return ending


def _shards_hint(error: UserError, before: Scanned, after: Scanned) -> UserError:
    """``error`` with a hint to ``merge`` when the two folders are shards of one suite (the same plan)."""
    first, second = ((r.report or {}).get("shard") for r in (before, after))
    if not first or not second or first["plan"] != second["plan"]:
        return error
    names = " and ".join(f"{p['index']}/{p['count']}" for p in (first, second))
    return UserError(error.message, hint=f"these are shards {names} of one suite: join them with "
                                         f"tooltrial merge {before.path} {after.path} -o DIR")


def _ending(results: Scanned, gated: bool, change: dict[str, Any] | None = None) -> Ending:
    """The Ending of one folder: its report document but ``runs`` (runner.output.report.report_head), as
    report.json has it: figures aggregated afresh, times, unfinished runs, ``shard``, ``merged`` and ``sequential`` as the
    run recorded them; with the regression document ``change`` for two folders."""
    runs, report = results.runs.summaries, results.report or {}
    model = aggregate(runs)
    gates = evaluate(model.cells, _thresholds(results.report))
    meta: dict[str, Any] = {
        "run_id": results.path.name,
        "results": str(results.path),
        "started": report.get("started"),
        "finished": report.get("finished"),
        # what part of a suite it is; how run --until-decided stopped it
        **{key: report[key] for key in ("shard", "merged", "rescored", "sequential") if key in report},
    }
    document = report_head(model, gates, runs, exit_code(gates), meta, report.get("unfinished") or [])
    return Ending(results.runs, document, model, gates, change=change, gated=gated)


def _thresholds(report: dict[str, Any] | None) -> dict[str, float | None]:
    """Each case's gate threshold as the run recorded it (``cells[].gate.threshold``, the same in
    report versions 1 and 2); {} for a run that never finished."""
    cells = (report or {}).get("cells", [])
    return {c["case"]: c["gate"]["threshold"] for c in cells if c.get("gate")}
