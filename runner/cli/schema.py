"""``tooltrial schema``: the case file JSON Schema, for editors and other tools."""

from __future__ import annotations

import argparse
import json

from runner.errors import ExitCode
from runner.spec.schema import case_schema


def add(sub: argparse._SubParsersAction) -> None:
    """The ``schema`` subcommand's parser."""
    sub.add_parser("schema", help="print the case file JSON Schema")


def command(args: argparse.Namespace) -> int:
    """Print the schema (draft 2020-12) on stdout."""
    print(json.dumps(case_schema(), indent=2))
    return ExitCode.OK
