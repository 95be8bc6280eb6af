"""``tooltrial export RESULTS --format messages``: finished runs as JSON lines (runner.output.export), one
per run, the runs chosen by status, case and provider, to stdout or ``-o FILE``."""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path

from runner.cli.options import check_writable
from runner.errors import UserError
from runner.kinds import Status
from runner.output.export import EXPORT_FORMATS, Filter, export_lines
from runner.output.scan import scan_results
from runner.output.store import write_replace
from runner.text import plural, printable


def add(sub: argparse._SubParsersAction) -> None:
    """The ``export`` subcommand's parser."""
    export = sub.add_parser("export", help="write finished runs as JSON lines (the conversation, verdict and scores)")
    export.add_argument("folder", type=Path, metavar="RESULTS", help="a results/<run-id> folder (or results/ for the newest)")
    export.add_argument("--format", choices=list(EXPORT_FORMATS), default="messages",
                        help="messages: OpenAI chat format (messages + tools) with the run's verdict and scores")
    export.add_argument("--status", action="append", choices=[s.value for s in Status], default=[],
                        help="keep runs of this status (repeatable; default: every run)")
    export.add_argument("-c", "--cases", action="append", default=[], metavar="GLOB",
                        help="keep runs whose case group/id matches (repeatable)")
    export.add_argument("-p", "--provider", action="append", default=[], metavar="GLOB",
                        help="keep runs whose provider matches (repeatable)")
    export.add_argument("--no-cut", action="store_true",
                        help="leave out runs with a message text the run file keeps cut to its head and tail")
    export.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the lines to FILE (default: stdout)")


def command(args: argparse.Namespace) -> int:
    """Write the lines; say on stderr how many runs were exported. Exit 0, 2 when ``-o`` cannot be
    written; a folder that is no results folder, and filters that match no run, are a UserError (raised
    before anything is written: ``-o``'s file is then neither made nor changed)."""
    if args.output is not None:
        check_writable("-o", args.output, folder=False, example="runs.jsonl")
    keep = Filter(frozenset(Status(s) for s in args.status), tuple(args.cases), tuple(args.provider), args.no_cut)
    results = scan_results(args.folder)
    made = export_lines(results.runs.records(keep.keeps), EXPORT_FORMATS[args.format], keep)
    first = next(made, None)  # before any output: a filter that matches nothing writes no line, no file
    if first is None and (args.status or args.cases or args.provider or args.no_cut):
        raise UserError("no run matched the filters", hint="check --status, -c, -p and --no-cut against 'tooltrial report'")
    count = [0]

    def lines() -> Iterator[str]:
        for line in itertools.chain([] if first is None else [first], made):
            count[0] += 1
            yield line

    if args.output is None:
        for line in lines():
            sys.stdout.write(line)
        sys.stdout.flush()
    else:
        try:
            write_replace(args.output, lines())
        except OSError as e:
            print(f"error: cannot write {printable(str(args.output))}: {e.strerror or e}", file=sys.stderr)
            return 2
    where = "" if args.output is None else f" to {printable(str(args.output))}"
    print(f"exported {plural(count[0], 'run')} of {len(results.runs.summaries)}{where}", file=sys.stderr)
    return 0
