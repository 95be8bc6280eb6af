"""``tooltrial list``: the selected cases, ``group/id`` and description, or where each came from;
with ``--shard``, the cases that shard holds runs of, counted over the arms ``run -l`` is given as ``run`` plans them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from runner.cli.options import add_arms, add_selection, add_shard, selected
from runner.errors import ExitCode
from runner.names import SCRIPTED
from runner.providers.kind import ProviderSpec
from runner.run.options import Arm
from runner.run.prompts import load_prompts
from runner.spec.case import Case
from runner.spec.discover import Sourced
from runner.spec.faults import load_profiles
from runner.spec.tooldefs import load_all
from runner.suite.engine import plan_runs
from runner.suite.options import make_arms, with_faults
from runner.terminal.console import make_console
from runner.terminal.lines import print_case_list, print_sources


def add(sub: argparse._SubParsersAction) -> None:
    """The ``list`` subcommand's parser."""
    parser = sub.add_parser("list", help="list cases (group/id and description)")
    add_selection(parser)
    add_shard(parser)
    add_arms(parser)
    parser.add_argument("--sources", action="store_true", help="show where each case came from and what it overrides")


def command(args: argparse.Namespace) -> int:
    """Print the list; exit 5 when no case is selected (or the shard holds none of their runs). The arm flags'
    files (``-P``, ``-T``, ``--faults``) are read and checked as ``run`` reads them, shard or not."""
    chosen = selected(args)
    arms = _arms(args)
    notes: dict[str, str] = {}
    if args.shard is not None and chosen:
        chosen, notes = _in_shard(args, chosen, arms)
    if args.sources:
        print_sources(make_console(), chosen, Path.cwd())
    else:
        print_case_list(make_console(), [s.case for s in chosen], notes)
    return ExitCode.OK if chosen else ExitCode.NO_CASES


def _in_shard(args: argparse.Namespace, chosen: list[Sourced], arms: list[Arm]) -> tuple[list[Sourced], dict[str, str]]:
    """The cases ``args.shard`` holds a run of, and for each it holds only some runs of, which
    (``run 2 of 2``, ``runs 1, 3 of 3``); says on stderr how many of the suite's runs the shard holds, over every
    arm (runner.suite.engine.plan_runs, as ``run --shard`` plans them): the arms of ``-p``, ``-P``, ``-T`` and
    ``--faults`` (with its clean twin), each case ``--runs`` times; a case's own ``runs`` wins."""
    shard, repeats = args.shard, args.runs
    cases = [item.case for item in chosen]
    total = sum(1 for _ in plan_runs(cases, arms, repeats))
    held_runs: dict[str, list[int]] = {}
    kept = 0
    for case, arm, number in plan_runs(cases, arms, repeats, shard):
        kept += 1
        if arm is arms[0]:
            held_runs.setdefault(case.full_id, []).append(number)
    held = [item for item in chosen if item.case.full_id in held_runs]
    notes = {case.full_id: _note(held_runs[case.full_id], case, repeats) for case in cases
             if len(held_runs.get(case.full_id, [])) not in (0, case.runs or repeats)}
    each = f" of {len(arms)} arms" if len(arms) > 1 else ""
    print(f"shard {shard.label} holds {kept} of {total} runs{each} ({len(held)} of {len(chosen)} cases)", file=sys.stderr)
    return held, notes


def _note(runs: list[int], case: Case, repeats: int) -> str:
    """``(run 2 of 2)``, ``(runs 1, 3 of 3)``: which runs of a case a shard holds, when only some."""
    return f"(run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))} of {case.runs or repeats})"


def _arms(args: argparse.Namespace) -> list[Arm]:
    """The arms ``run`` would make of ``args``, its providers named only: nothing is resolved or run to list.
    Raises what loading a ``-P``, ``-T`` or ``--faults`` file raises."""
    providers = [ProviderSpec(name, _not_run) for name in args.provider or [SCRIPTED]]
    return with_faults(make_arms(providers, load_prompts(args.prompt), load_all(args.tools)), load_profiles(args.faults))


def _not_run(case: Case) -> NoReturn:
    raise AssertionError("a listed arm's provider is never run")
