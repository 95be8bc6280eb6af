"""``tooltrial new GROUP/ID``: a commented case skeleton that validates, added to GROUP.yml."""

from __future__ import annotations

import argparse
from pathlib import Path

from runner.errors import ExitCode
from runner.spec.authoring import default_cases_dir, new_case


def add(sub: argparse._SubParsersAction) -> None:
    """The ``new`` subcommand's parser."""
    parser = sub.add_parser("new", help="start a case from a commented skeleton that validates")
    parser.add_argument("case", metavar="GROUP/ID", help="the new case's full id; it goes to GROUP.yml")
    parser.add_argument("--fixture", metavar="NAME", help="copy fixture folder NAME into the workspace (made empty if missing)")
    parser.add_argument("--cases-dir", type=Path, metavar="D", help="folder of case files (default: ./cases if it exists, else ./.tooltrial/cases)")


def command(args: argparse.Namespace) -> int:
    """Write the skeleton and say where, and how to try it."""
    written = new_case(args.case, args.cases_dir or default_cases_dir(), args.fixture)
    print(f"wrote {args.case} to {written.path}:{written.line}")
    if written.fixture_created:
        print(f"created the empty fixture folder {written.fixture_created}: put the case's starting files there")
    print(f"try it offline: tooltrial run {written.path} -c {args.case}")
    return ExitCode.OK
