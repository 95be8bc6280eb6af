"""``tooltrial import bfcl QUESTIONS --answers POSSIBLE_ANSWER -o DIR``: another harness's cases written
as tooltrial case files, one per category (runner.spec.foreign.bfcl)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from runner.errors import ExitCode, UserError
from runner.output.store import write_new, write_replace
from runner.spec.foreign.bfcl import import_bfcl
from runner.spec.foreign.bfclfile import case_file_text, file_name


def add(sub: argparse._SubParsersAction) -> None:
    """The ``import`` subcommand's parser, with one subcommand per format (``bfcl``)."""
    parser = sub.add_parser("import", help="write case files from BFCL's test data")
    formats = parser.add_subparsers(dest="format", required=True, metavar="FORMAT", parser_class=type(parser))
    bfcl = formats.add_parser("bfcl", help="Berkeley Function-Calling Leaderboard JSON-lines files (single-turn)")
    bfcl.add_argument("questions", type=Path, metavar="QUESTIONS", help="a BFCL questions file, e.g. BFCL_v4_simple_python.json")
    bfcl.add_argument("--answers", type=Path, metavar="FILE", help="its answer key, possible_answer/<the same name> (needed but for irrelevance and relevance)")
    bfcl.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder the case files go to, bfcl_<category>.yml each (made if missing)")
    bfcl.add_argument("--force", action="store_true", help="replace case files that exist")
    bfcl.add_argument("--script", action="store_true", help="give each case its first acceptable answer as the scripted provider's replies, so '-p scripted' checks the import")


def command(args: argparse.Namespace) -> int:
    """Write the case files and say where; nothing is written when an entry is malformed (UserErrors,
    exit 4) or a file exists without ``--force`` (UserError, exit 4)."""
    imported = import_bfcl(args.questions, args.answers, args.script)
    if not imported.groups:
        raise UserError(f"{args.questions}: no entries", hint="a BFCL questions file holds one JSON object a line")
    targets = {args.output / file_name(category): category for category in imported.groups}
    existing = [str(path) for path in targets if path.exists()]
    if existing and not args.force:
        raise UserError(f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}",
                        hint="give --force to replace, or another -o folder")
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot make the folder {args.output}: {e.strerror or e}") from e
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for path, category in targets.items():
        cases = imported.groups[category]
        text = case_file_text(category, cases, args.questions.name)
        try:
            (write_replace if args.force else write_new)(path, text)
        except FileExistsError as e:
            raise UserError(f"{path} already exists", hint="give --force to replace it") from e
        except OSError as e:
            raise UserError(f"cannot write {path}: {e.strerror or e}") from e
        print(f"wrote {len(cases)} case{'' if len(cases) == 1 else 's'} to {path}")
    return ExitCode.OK
