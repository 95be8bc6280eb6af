"""The output options of a subcommand, from the table of formats (runner.output.formats): added to its
parser, checked before anything runs, and turned into what ``runner.output.finish.finish`` writes."""

from __future__ import annotations

import argparse
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from runner.cli.options import check_writable
from runner.errors import UserError
from runner.output.formats import Option, OutputFormat, load, offered


def add_outputs(parser: argparse.ArgumentParser, command: str, only: Collection[str] | None = None,
                leave: Collection[str] = ()) -> None:
    """Add the options of each format ``command`` offers to its ``parser``, in table order: only those named
    in ``only`` when given, and none of those in ``leave`` (a subcommand whose help lists its formats in
    two places adds them in two calls)."""
    for row in offered(command):
        if (only is None or row.name in only) and row.name not in leave:
            for option in row.options:
                if option.metavar is None:
                    parser.add_argument(option.flag, action="store_true", help=option.help_for(command))
                else:
                    parser.add_argument(option.flag, type=Path if option.file else str, metavar=option.metavar,
                                        help=option.help_for(command))


def output_files(args: argparse.Namespace, command: str) -> list[tuple[Option, Path]]:
    """Each file option of ``command``'s formats that was given, with its path, in table order."""
    return [(option, getattr(args, option.dest)) for row in offered(command) for option in row.options
            if option.file and getattr(args, option.dest) is not None]


def check_output_files(args: argparse.Namespace, command: str) -> None:
    """Refuse, before anything runs, an output file that cannot be written (runner.cli.options.check_writable).
    Raises UserError naming the option and the path, with a hint."""
    for option, path in output_files(args, command):
        check_writable(option.flag, path, folder=False, example=option.example)


def refuse_inputs(args: argparse.Namespace, command: str, inputs: Collection[Path]) -> None:
    """Refuse an output file that is one of ``inputs`` (the run's own case and prompt files): writing it
    would replace them. Raises UserError naming the option, the path and what it holds."""
    held = {path.resolve() for path in inputs}
    for option, path in output_files(args, command):
        if path.resolve() in held:
            raise UserError(f"{option.flag} {path} is an input of this run (a case or prompt file)",
                            hint="give another path: writing there would replace it")


def wanted_outputs(args: argparse.Namespace, command: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """Format name -> its target (what its writer is given), for each format of ``command`` asked for by
    one of its options or its environment variable, in table order. Raises UserError as a format's
    ``target`` does for values that cannot work."""
    wanted: dict[str, Any] = {}
    for row in offered(command):
        values = {option.dest: getattr(args, option.dest) for option in row.options}
        if any(value not in (None, False) for value in values.values()):
            wanted[row.name] = _target(row, values)
        elif row.env is not None and environ.get(row.env):
            wanted[row.name] = Path(environ[row.env])
    return wanted


def _target(row: OutputFormat, values: Mapping[str, Any]) -> Any:
    """What ``row``'s writer is given for its options' ``values``: its ``target`` function's, else the
    first option's value."""
    return load(row.target)(values) if row.target is not None else values[row.options[0].dest]
