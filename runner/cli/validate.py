"""``tooltrial validate``: every error of every case file, templates rendered, and with ``--baseline``
the cases a do-nothing or random-tool agent passes."""

from __future__ import annotations

import argparse
import sys

from runner.checks.judge import resolve_judges
from runner.cli.options import add_selection, sources
from runner.errors import ExitCode
from runner.names import SCRIPTED
from runner.providers.registry import resolve_provider
from runner.run.baselines import weak_cases
from runner.run.engine import preflight
from runner.run.options import Arm, RunOptions
from runner.run.simuser import resolve_users
from runner.run.prompts import load_prompt
from runner.sandbox.command import Sandbox
from runner.spec.config import load_config
from runner.spec.discover import load_sourced
from runner.text import plural


def add(sub: argparse._SubParsersAction) -> None:
    """The ``validate`` subcommand's parser."""
    parser = sub.add_parser("validate", help="check case files and report every error")
    add_selection(parser)
    parser.add_argument("--baseline", action="store_true", help="warn about cases a do-nothing or random-tool agent passes")
    parser.add_argument("--judge", metavar="MODEL", help="judge model for expect.judge checks during --baseline")
    parser.add_argument("--config", metavar="FILE", help="project config for --baseline (default: ./tooltrial.yml if it exists)")


def command(args: argparse.Namespace) -> int:
    """Exit 0 when every file is valid; UserErrors (exit 4) list every error; 5 without case files."""
    chosen = sources(args)
    files = [f for source in chosen for f in source.files()]
    if not files:
        print("no case file found", file=sys.stderr)
        return ExitCode.NO_CASES
    cases = [s.case for s in load_sourced(chosen, args.fixtures_dir)]  # raises UserErrors with every error
    preflight(cases, [Arm(resolve_provider(SCRIPTED), load_prompt(None))])  # turn and system templates render
    print(f"{plural(len(cases), 'case')} in {plural(len(files), 'file')} {'is' if len(cases) == 1 else 'are'} valid")
    if args.baseline:
        config = load_config(args.config)
        judges = resolve_judges(cases, args.judge or config.judge, lambda name: resolve_provider(name, config))
        users = resolve_users(cases, lambda name: resolve_provider(name, config))
        options = RunOptions(sandbox=Sandbox(), judges=judges, users=users)
        weak = weak_cases(cases, options, load_prompt(None))
        for one in weak:
            print(f"warning: {one.case} passes with the {one.agent} agent: its checks do not test the task")
        print(f"baseline: {len({w.case for w in weak})} of {len(cases)} cases pass without doing the task")
    return ExitCode.OK
