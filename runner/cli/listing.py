"""``tooltrial list``: the selected cases, ``group/id`` and description, or where each came from;
with ``--shard``, the cases that shard holds runs of."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runner.cli.options import add_selection, add_shard, selected
from runner.errors import ExitCode
from runner.spec.discover import Sourced
from runner.terminal.console import make_console
from runner.terminal.lines import print_case_list, print_sources


def add(sub: argparse._SubParsersAction) -> None:
    """The ``list`` subcommand's parser."""
    parser = sub.add_parser("list", help="list cases (group/id and description)")
    add_selection(parser)
    add_shard(parser)
    parser.add_argument("--sources", action="store_true", help="show where each case came from and what it overrides")


def command(args: argparse.Namespace) -> int:
    """Print the list; exit 5 when no case is selected (or the shard holds none of their runs)."""
    chosen = selected(args)
    notes: dict[str, str] = {}
    if args.shard is not None and chosen:
        chosen, notes = _in_shard(args, chosen)
    if args.sources:
        print_sources(make_console(), chosen, Path.cwd())
    else:
        print_case_list(make_console(), [s.case for s in chosen], notes)
    return ExitCode.OK if chosen else ExitCode.NO_CASES


def _in_shard(args: argparse.Namespace, chosen: list[Sourced]) -> tuple[list[Sourced], dict[str, str]]:
    """The cases ``args.shard`` holds a run of, and for each it holds only some runs of, which
    (``run 2 of 2``, ``runs 1, 3 of 3``); says on stderr how many runs of each arm the shard holds. ``run -l`` gives
    ``--runs``; a case's own ``runs`` wins."""
    shard, repeats = args.shard, getattr(args, "runs", 1)
    held: list[Sourced] = []
    notes: dict[str, str] = {}
    total = kept = 0
    for item in chosen:
        case = item.case
        planned = case.runs or repeats
        runs = [n for n in range(1, planned + 1) if shard.holds(case.full_id, n)]
        total, kept = total + planned, kept + len(runs)
        if runs:
            held.append(item)
        if runs and len(runs) < planned:
            notes[case.full_id] = f"(run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))} of {planned})"
    print(f"shard {shard.label} holds {kept} of {total} runs of each arm ({len(held)} of {len(chosen)} cases)",
          file=sys.stderr)
    return held, notes
