"""``tooltrial schema``: the case JSON Schema, or the case-file schema, for editors and other tools."""

from __future__ import annotations

import argparse
import json

from runner.errors import ExitCode
from runner.spec.schema import case_file_schema, case_schema


def add(sub: argparse._SubParsersAction) -> None:
    """The ``schema`` subcommand's parser."""
    parser = sub.add_parser("schema", help="print a case's JSON Schema (--file: a case file's)")
    parser.add_argument(
        "--file",
        action="store_true",
        help="print the schema of a whole case file (a list of cases, or {defaults, cases}), the one editor "
        "headers name; it refers to case.schema.json beside it for each case",
    )


def command(args: argparse.Namespace) -> int:
    """Print the schema (draft 2020-12) on stdout."""
    print(json.dumps(case_file_schema() if args.file else case_schema(), indent=2))
    return ExitCode.OK
