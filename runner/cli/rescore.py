"""``tooltrial rescore RESULTS [PATH...]``: the current checks of each case applied to the runs a results folder
holds, with no model call (runner.run.rescore), written as a new results folder that names its source and lists
every verdict that changed (report.json's ``rescored``), then shown as ``tooltrial report`` shows a folder.

A run is rescored only when nothing but its case's ``expect`` changed since it ran (runner.run.rescore.
changed_inputs): the saved transcript would not answer a case whose turns, tools or files changed, so such a
case is refused, named at its line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from runner.checks.judge import refuse_judge, resolve_judges
from runner.cli.options import add_selection, check_writable, selected
from runner.cli.outputs import add_outputs, check_output_files, wanted_outputs
from runner.cli.report import show_results
from runner.errors import ExitCode, Location, UserError
from runner.output.formats import RESCORE
from runner.output.load import Results, read_results
from runner.output.report import report_document
from runner.output.store import ResultsWriter
from runner.providers.kind import ProviderSpec
from runner.providers.registry import resolve_provider
from runner.run.record import RunRecord
from runner.run.rescore import Rescoring, changed_inputs, rebuilds, rescorable, rescore
from runner.sandbox.choose import choose_sandbox
from runner.sandbox.command import Sandbox
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate, exit_code
from runner.scoring.summary import summarize
from runner.scoring.verdicts import VerdictChange, verdict_change
from runner.spec.case import Case
from runner.spec.config import load_config
from runner.terminal.console import make_console
from runner.text import plural, printable

ASK_AGAIN = "-"  # --judge given without a model: each case's own judge, else the config's


def add(sub: argparse._SubParsersAction) -> None:
    """The ``rescore`` subcommand's parser."""
    rescore = sub.add_parser("rescore", help="apply each case's current checks to saved runs, with no model call")
    rescore.add_argument("source", type=Path, metavar="RESULTS",
                         help="the results/<run-id> folder whose runs to score again (or results/ for the newest)")
    add_selection(rescore)
    rescore.add_argument("-o", "--results", type=Path, metavar="DIR",
                         help="write the rescored results under DIR/<run-id>/ (default: the folder RESULTS is in)")
    rescore.add_argument("--judge", nargs="?", const=ASK_AGAIN, metavar="MODEL",
                         help="ask the judges again (MODEL: the judge of cases that name none, else the config's); "
                              "without it each run's judge results are kept")
    rescore.add_argument("--config", metavar="FILE", help="project config for --judge (default: ./tooltrial.yml)")
    rescore.add_argument("--output", choices=["text", "json"], default="text",
                         help="the rescored folder's lines and tables, or its JSON report on stdout")
    add_outputs(rescore, RESCORE)
    rescore.add_argument("-q", "--quiet", action="store_true", help="print only the runs that did not pass, and the summary")


def command(args: argparse.Namespace) -> int:
    """Rescore, write the new folder, show it and the changed verdicts; the exit code is its report's (the gates'),
    2 when an output could not be written, 5 when no case is selected. Raises UserError (exit 4) for a case
    changed beyond its checks, a run with no provenance, or a judge that cannot be resolved."""
    check_output_files(args, RESCORE)
    outputs = wanted_outputs(args, RESCORE, os.environ)
    source = read_results(args.source)
    root = args.results or source.path.parent
    check_writable("--results", root, folder=True)
    cases = {s.case.full_id: s.case for s in selected(args)}
    if not cases:
        return ExitCode.NO_CASES
    _refuse_unmatched(source, cases)
    todo = [r for r in source.records if r.case in cases and rescorable(r)]
    _refuse_changed(todo, cases, source.path)
    how = Rescoring(_sandbox(todo, cases, [source.path, root]), _judges(args, [cases[r.case] for r in todo]),
                    rejudge=args.judge is not None)
    records = [rescore(cases[r.case], r, how) if r.case in cases else r for r in source.records]
    changes = [c for old, new in zip(source.records, records) if (c := verdict_change(old, new)) is not None]
    path = _write(source, records, changes, root)
    as_json = args.output == "json"
    out = sys.stderr if as_json else sys.stdout
    ending = show_results([path], as_json, make_console(out if as_json else None), sys.stdout, outputs, args.quiet,
                          gated=True)
    _print_changes(changes, len(todo), len(source.records), source.path, out)
    print(f"rescored results: {printable(str(path))}", file=sys.stderr)
    return ending.code


def _refuse_unmatched(source: Results, cases: Mapping[str, Case]) -> None:
    """Raise UserError when no run of ``source`` is of a selected case: there would be nothing to rescore."""
    ran = list(dict.fromkeys(r.case for r in source.records))
    if ran and not set(ran) & set(cases):
        shown = ", ".join(printable(c) for c in ran[:3]) + (", ..." if len(ran) > 3 else "")
        raise UserError(f"none of the {plural(len(source.records), 'run')} in {printable(str(source.path))} is of a "
                        f"selected case ({plural(len(cases), 'case')} selected, none of them ran there)",
                        hint=f"give the case files the runs were made from: the runs are of {shown}")


def _refuse_changed(records: Sequence[RunRecord], cases: Mapping[str, Case], source: Path) -> None:
    """Raise UserError at the case's line for the first run whose case changed beyond its checks since it ran,
    or that has no provenance to tell."""
    for record in records:
        case = cases[record.case]
        where = Location(str(case.source), case.line)
        if record.provenance is None:
            raise UserError(f"case {case.full_id}: its run in {source} kept no fingerprints of what it ran on, so "
                            "what changed since cannot be told", where,
                            hint="run the case again: rescore needs runs made by a tooltrial that records provenance")
        changed = changed_inputs(case, record.provenance)
        if changed:
            raise UserError(f"case {case.full_id} changed since its run in {source}: {', '.join(changed)}; only "
                            "expect may change, the saved transcript would not answer the case as it is now", where,
                            hint="put back what changed, or run the case again with 'tooltrial run'")


def _sandbox(records: Sequence[RunRecord], cases: Mapping[str, Case], hide: Sequence[Path]) -> Sandbox | None:
    """The sandbox of the verify and setup commands a rebuilt workspace runs: the mode the runs were made under
    (``auto`` for runs that did not record one); None when no run's case has file, verify or check commands. Raises
    UserError for runs made under different modes."""
    needing = [r for r in records if rebuilds(cases[r.case])]
    modes = sorted({r.sandbox.mode if r.sandbox is not None else "auto" for r in needing})
    if not modes:
        return None
    if len(modes) > 1:
        raise UserError(f"the runs were made under different sandboxes ({', '.join(modes)}), and rescore runs "
                        "verify commands under the one they used", hint="rescore the runs of each sandbox apart (-c)")
    return choose_sandbox(modes[0], hide)


def _judges(args: argparse.Namespace, cases: Sequence[Case]) -> Mapping[str | None, ProviderSpec]:
    """The judges to ask again (runner.checks.judge.resolve_judges) when ``--judge`` is given, else none."""
    if args.judge is None:
        return {}
    model = None if args.judge == ASK_AGAIN else args.judge
    refuse_judge(model)
    config = load_config(args.config)
    return resolve_judges(cases, model or config.judge, lambda name: resolve_provider(name, config, False))


def _write(source: Results, records: Sequence[RunRecord], changes: Sequence[VerdictChange], root: Path) -> Path:
    """The rescored results folder ``root/<run-id>/``: each record in the source's order, report.json with
    ``rescored: {source, changed}`` and each case's gate threshold as the source's report recorded it."""
    report = source.report or {}
    thresholds = {c["case"]: c["gate"]["threshold"] for c in report.get("cells", []) if c.get("gate")}
    model = aggregate([summarize(r) for r in records])
    gates = evaluate(model.cells, thresholds)
    writer = ResultsWriter(root)
    for number, record in enumerate(records, start=1):
        writer.write_run(record, number)
    meta = {"run_id": writer.run_id, "results": str(writer.path), "started": report.get("started"),
            "finished": report.get("finished"),
            "rescored": {"source": str(source.path), "changed": [c.to_dict() for c in changes]}}
    writer.write_report(report_document(model, gates, records, exit_code(gates), meta, report.get("unfinished") or []))
    return writer.path


def _print_changes(changes: Sequence[VerdictChange], rescored: int, runs: int, source: Path, out: TextIO) -> None:
    """``rescored N of M runs from SOURCE: K runs whose checks changed, J whose status changed``, then a line per
    such run (``pass -> fail``, or ``still pass`` where only its checks changed) and per check whose verdict
    changed."""
    flipped = sum(c.before != c.after for c in changes)
    print(f"rescored {rescored} of {plural(runs, 'run')} from {printable(str(source))}: "
          f"{plural(len(changes), 'run')} whose checks changed, {flipped} whose status changed", file=out)
    for change in changes:
        status = f"still {change.after}" if change.before == change.after else f"{change.before} -> {change.after}"
        print(f"  {printable(change.case)} [{printable(change.arm)}] #{change.run}: {status}", file=out)
        for check in change.checks:
            print(f"    {printable(check.check)}: {check.before or 'none'} -> {check.after or 'none'}: "
                  f"{printable(check.message)}", file=out)
