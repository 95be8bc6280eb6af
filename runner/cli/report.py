"""``tooltrial report RESULTS...``: the tables of results already on disk.

One folder: its run lines, pass count and comparison tables, as ``tooltrial run``
printed them. Two folders: the regression view, the first as before and the
second as after. ``--output json`` prints the report document (or the
regression document) instead. ``--html FILE`` also writes the HTML page
(runner.output.html): of one folder, or of the second with the regression view.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence, TextIO

from rich.console import Console

from runner.cli.options import check_writable
from runner.errors import ExitCode, UserError
from runner.output.html import write_html
from runner.output.markdown import regression_markdown, summary_markdown
from runner.output.report import regression_document, report_head, report_text, run_dict
from runner.output.store import ascii_json, write_replace
from runner.output.scan import Scanned, scan_results
from runner.run.record import PASS
from runner.scoring.aggregate import Aggregate, aggregate
from runner.scoring.gates import Gate, evaluate, exit_code
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
    report.add_argument("--html", type=Path, metavar="FILE",
                        help="also write one self-contained HTML page to FILE (of two folders: the second, with the regression view)")
    report.add_argument("--summary-md", type=Path, metavar="FILE", help="also write a Markdown summary (of the regression, for two folders) to FILE")
    report.add_argument("-q", "--quiet", action="store_true", help="print only the runs that did not pass, and the summary")


def command(args: argparse.Namespace) -> int:
    """Show the folders given; tables on stdout, or the JSON document there and the tables on stderr."""
    as_json = args.output == "json"
    console = make_console(sys.stderr if as_json else None)
    return show_results(args.folders, as_json, console, sys.stdout, args.html, args.summary_md, args.quiet)


def show_results(folders: Sequence[Path], as_json: bool, console: Console, stdout: TextIO, html: Path | None = None,
                 summary_md: Path | None = None, quiet: bool = False) -> int:
    """Print one folder's tables (its passing runs' lines left out when ``quiet``) or two folders' regression
    view, write the ``html`` page and the Markdown summary to ``summary_md`` (of the regression, for two
    folders) when given. Raises UserError
    for any other count of folders, or when ``html`` or ``summary_md`` is a folder or cannot be written.
    Only each run's summary stays in memory: what needs a whole record reads it back from its file."""
    for flag, path in (("--html", html), ("--summary-md", summary_md)):
        if path is not None:
            check_writable(flag, path, folder=False)
    if len(folders) == 1:
        results = scan_results(folders[0])
        document = _show_one(results, as_json, console, quiet)
        _write_page(html, document, results)
        _write_summary(summary_md, lambda: summary_markdown(document, map(run_dict, results.runs.records())))
        if as_json:  # ASCII, as run --output json prints it: any stdout carries it, lone surrogates included
            for piece in report_text(document, results.runs.items()):
                print(ascii_json(piece), end="", file=stdout)
    elif len(folders) == 2:
        before, after = scan_results(folders[0]), scan_results(folders[1])
        try:
            change = regression(before.runs.summaries, after.runs.summaries)
        except UserError as e:
            raise _shards_hint(e, before, after) from None
        document = regression_document(change, str(before.path), str(after.path))
        if not as_json:
            print_regression(console, change, str(before.path), str(after.path))
        _write_page(html, _document(after), after, document)
        _write_summary(summary_md, lambda: regression_markdown(document))
        if as_json:
            print(json.dumps(document, indent=2, default=str), file=stdout)
    else:
        raise UserError(f"got {len(folders)} results folders", hint="give one to show it, or two to compare them")
    return ExitCode.OK


def _shards_hint(error: UserError, before: Scanned, after: Scanned) -> UserError:
    """``error`` with a hint to ``merge`` when the two folders are shards of one suite (the same plan)."""
    parts = [(r.report or {}).get("shard") for r in (before, after)]
    if not all(parts) or parts[0]["plan"] != parts[1]["plan"]:
        return error
    names = " and ".join(f"{p['index']}/{p['count']}" for p in parts)
    return UserError(error.message, hint=f"these are shards {names} of one suite: join them with "
                                         f"tooltrial merge {before.path} {after.path} -o DIR")


def _write_summary(summary_md: Path | None, markdown: Callable[[], str]) -> None:
    """Write the Markdown summary ``markdown()`` to ``summary_md`` unless None. Raises UserError."""
    if summary_md is None:
        return
    try:
        write_replace(summary_md, markdown())
    except OSError as e:
        raise UserError(f"--summary-md {summary_md} cannot be written: {e.strerror or e}",
                        hint="give a file path in a folder you can write to") from e


def _write_page(html: Path | None, document: dict[str, Any], results: Scanned, change: dict[str, Any] | None = None) -> None:
    """Write the HTML page of ``results`` (its report ``document`` but ``runs``, with the regression document
    ``change``) to ``html`` unless None."""
    if html is None:
        return
    try:
        write_html(html, document, results.runs.summaries, map(run_dict, results.runs.records()), change)
    except OSError as e:
        raise UserError(f"cannot write {html}: {e.strerror or e}", hint="give a path in a folder you can write to") from e


def _show_one(results: Scanned, as_json: bool, console: Console, quiet: bool = False) -> dict[str, Any]:
    """The report document but ``runs`` of one folder, printing its lines (only those of runs that did not pass
    when ``quiet``) and tables unless ``as_json``."""
    runs = results.runs.summaries
    unfinished = (results.report or {}).get("unfinished") or []
    model = aggregate(runs)
    gates = evaluate(model.cells, _thresholds(results.report))
    if not as_json:
        printer = RunPrinter(console, len(model.arms) > 1, any(r.run > 1 for r in runs), quiet)
        for record in results.runs.records((lambda run: run.status != PASS) if quiet else None):  # no file read in vain
            printer.record(record)
        printer.totals(runs, len(unfinished))
        print_summary(console, model)
        print_statistics(console, model, gates)
        if unfinished:
            left = [(u["case"], u["provider"], u["prompt"], u["run"]) for u in unfinished]
            print_interrupted(console, left, results.path, len(runs))
    return _document(results, model, gates)


def _document(results: Scanned, model: Aggregate | None = None, gates: Sequence[Gate] | None = None) -> dict[str, Any]:
    """The report document of one folder but its ``runs`` (runner.output.report.report_head), as report.json
    has it: figures aggregated afresh (``model`` and ``gates`` when already made), times, unfinished runs,
    ``shard`` and ``merged`` as the run recorded them."""
    runs, report = results.runs.summaries, results.report or {}
    unfinished = report.get("unfinished") or []
    model = model or aggregate(runs)
    gates = evaluate(model.cells, _thresholds(results.report)) if gates is None else gates
    meta = {
        "run_id": results.path.name,
        "results": str(results.path),
        "started": report.get("started"),
        "finished": report.get("finished"),
        **{key: report[key] for key in ("shard", "merged") if key in report},  # what part of a suite it is
    }
    return report_head(model, gates, runs, exit_code(gates), meta, unfinished)


def _thresholds(report: dict[str, Any] | None) -> dict[str, float | None]:
    """Each case's gate threshold as the run recorded it (``cells[].gate.threshold``, the same in
    report versions 1 and 2); {} for a run that never finished."""
    cells = (report or {}).get("cells", [])
    return {c["case"]: c["gate"]["threshold"] for c in cells if c.get("gate")}
