"""``tooltrial plan RESULTS --difference D``: from a pilot's results folder, the paired runs and cases each
comparison of its arms needs to detect a difference D in pass rate (runner.scoring.planning), with the
assumptions printed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runner.errors import UserError
from runner.output.scan import scan_results
from runner.scoring.pairs import comparisons
from runner.scoring.planning import Need, plan
from runner.scoring.power import ALPHA, POWER
from runner.text import plural, printable


def add(sub: argparse._SubParsersAction) -> None:
    """The ``plan`` subcommand's parser."""
    parser = sub.add_parser("plan", help="the runs a comparison of arms needs to detect a difference, from a pilot")
    parser.add_argument("folder", type=Path, metavar="RESULTS", help="the pilot's results/<run-id> folder (or results/ for the newest)")
    parser.add_argument("--difference", type=_fraction, required=True, metavar="D",
                        help="the difference in pass rate to detect, as a fraction (0.05 for 5 points)")
    parser.add_argument("--alpha", type=_fraction, default=ALPHA, help=f"two-sided significance level (default {ALPHA})")
    parser.add_argument("--power", type=_fraction, default=POWER,
                        help=f"the chance of a significant result when the difference is real (default {POWER})")
    parser.add_argument("--runs", type=int, metavar="N", help="runs of each case in the planned suite (default: the pilot's)")
    parser.add_argument("--discordance", type=_fraction, metavar="S",
                        help="the share of pairs expected to disagree, at least D (default: each comparison's in the "
                             "pilot, raised to D where lower)")


def command(args: argparse.Namespace) -> int:
    """Print each comparison's plan and the assumptions; 0. Raises UserError for a pilot with fewer than two
    arms, or --runs below 1."""
    results = scan_results(args.folder)
    summaries = results.runs.summaries
    compared = comparisons(summaries)
    if not compared:
        raise UserError(f"{args.folder} has one arm: plan compares arms",
                        hint="run the pilot with two -P prompts or two -p providers, then plan from its folder")
    if args.runs is not None and args.runs < 1:
        raise UserError(f"--runs {args.runs}: a case needs at least one run", hint="give --runs 1 or more")
    if args.discordance is not None and args.discordance < args.difference:
        raise UserError(f"--discordance {args.discordance:g} is below --difference {args.difference:g}: a difference "
                        f"of {args.difference:g} needs at least {args.difference:.0%} of pairs to disagree",
                        hint=f"give --discordance {args.difference:g} or more, or leave it out to take the pilot's")
    pilot = max(r.run for r in summaries)
    repeats = args.runs or pilot
    out = sys.stdout
    out.write(f"plan: a difference of {args.difference:g} in pass rate, two-sided alpha {args.alpha:g}, "
              f"power {args.power:g}, {plural(repeats, 'run')} a case (the pilot: {plural(pilot, 'run')} a case)\n")
    for need in plan(compared, repeats, args.difference, args.alpha, args.power, args.discordance):
        seen = "no pairs" if need.observed is None else f"{need.observed:.0%} of them disagreed"
        out.write(f"\n{printable(need.title)}: {plural(need.pairs, 'pair')} in the pilot, {seen}; "
                  f"{_assumed(need, args.difference)}\n"
                  f"  needs {plural(need.needed, 'paired run')}: {plural(need.cases, 'case')} at "
                  f"{plural(repeats, 'run')} a case (Connor's approximation: {need.connor})\n")
    out.write(ASSUMPTIONS)
    return 0


ASSUMPTIONS = """
assumptions:
  - the test is the exact McNemar test tooltrial reports, on runs paired by case and run index; the runs
    needed are the fewest at which its power reaches the target, searched from Connor's normal
    approximation (1987), which that test reaches only 0.76 to 0.78 of the time where 0.80 is asked
  - the share of pairs whose arms disagree is --discordance where given, else as in the pilot and at least
    the difference, since a difference needs at least that share of pairs to disagree
  - every pair is independent: where one case's runs tend to agree with each other, more cases help
    more than more runs of the same cases
"""


def _assumed(need: Need, difference: float) -> str:
    """The discordance the plan assumes and where it came from: ``assumed 30% (--discordance)``, ``assumed 40%
    (the pilot's)``, or the floor with its reason."""
    if need.source == "given":
        return f"assumed {need.discordance:.0%} (--discordance)"
    if need.source == "pilot":
        return f"assumed {need.discordance:.0%} (the pilot's)"
    fewer = "the pilot has no pairs" if need.observed is None else "the pilot's is lower"
    return (f"assumed {need.discordance:.0%}, the least a difference of {difference:g} allows ({fewer}; "
            "give --discordance to plan at another)")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number (give a fraction such as 0.05)") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (give a fraction such as 0.05 for 5%)")
    return value
