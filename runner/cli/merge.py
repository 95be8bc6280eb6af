"""``tooltrial merge RESULTS... -o DIR``: shard folders (or whole results folders) joined into one
(runner.output.merge), then shown as ``tooltrial report`` shows a folder."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from runner.cli.options import check_writable
from runner.cli.outputs import add_outputs, check_output_files, wanted_outputs
from runner.cli.report import show_results
from runner.output.formats import MERGE
from runner.output.merge import PREFER, merge_results
from runner.terminal.console import make_console
from runner.text import plural, printable


def add(sub: argparse._SubParsersAction) -> None:
    """The ``merge`` subcommand's parser."""
    merge = sub.add_parser("merge", help="join shards (--shard K/N) into one results folder")
    merge.add_argument("folders", nargs="+", type=Path, metavar="RESULTS",
                       help="results/<run-id> folders (or folders of them, for the newest in each)")
    merge.add_argument("-o", "--results", type=Path, required=True, metavar="DIR",
                       help="write the merged results under DIR/<run-id>/, as 'run --results DIR' does")
    merge.add_argument("--prefer", choices=PREFER,
                       help="for a run two folders hold with different records, keep the one of the folder given first, "
                            "or last (default: refuse)")
    merge.add_argument("--output", choices=["text", "json"], default="text",
                       help="the merged folder's lines and tables, or its JSON report on stdout")
    add_outputs(merge, MERGE)
    merge.add_argument("-q", "--quiet", action="store_true", help="print only the runs that did not pass, and the summary")


def command(args: argparse.Namespace) -> int:
    """Merge, show the merged folder (and write the outputs asked for); the exit code is its report's (the
    gates', 2 with runs unfinished), 2 when an output could not be written."""
    check_writable("--results", args.results, folder=True)
    check_output_files(args, MERGE)
    outputs = wanted_outputs(args, MERGE, os.environ)
    merged = merge_results(args.folders, args.results, args.prefer)
    as_json = args.output == "json"
    ending = show_results([merged.path], as_json, make_console(sys.stderr if as_json else None), sys.stdout, outputs,
                          args.quiet, gated=True)
    again = f", {plural(merged.overlapping, 'run')} given twice kept once" if merged.overlapping else ""
    print(f"merged {plural(len(merged.records), 'run')} from {plural(len(args.folders), 'folder')}{again}: "
          f"{printable(str(merged.path))}", file=sys.stderr)
    return ending.code
