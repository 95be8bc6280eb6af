"""``tooltrial list``: the selected cases, ``group/id`` and description, or where each came from."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.cli.options import add_selection, selected
from runner.errors import ExitCode
from runner.terminal.console import make_console
from runner.terminal.lines import print_case_list, print_sources


def add(sub: argparse._SubParsersAction) -> None:
    """The ``list`` subcommand's parser."""
    parser = sub.add_parser("list", help="list cases (group/id and description)")
    add_selection(parser)
    parser.add_argument("--sources", action="store_true", help="show where each case came from and what it overrides")


def command(args: argparse.Namespace) -> int:
    """Print the list; exit 5 when no case is selected."""
    chosen = selected(args)
    if args.sources:
        print_sources(make_console(), chosen, Path.cwd())
    else:
        print_case_list(make_console(), [s.case for s in chosen])
    return ExitCode.OK if chosen else ExitCode.NO_CASES
