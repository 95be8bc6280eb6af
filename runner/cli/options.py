"""What the subcommands share: the parser that fails with exit 4, the case-selection flags, and
the argument types that refuse bad numbers with a message."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from runner.errors import UserError
from runner.output.store import not_replaceable
from runner.spec.discover import Source, Sourced, load_sourced, select, select_sources
from runner.spec.schema import case_schema
from runner.spec.unmatched import why_none_selected
from runner.suite.shard import INDEX_VARIABLE, Shard, parse_shard


class Parser(argparse.ArgumentParser):
    """argparse that raises a UserError (exit 4) instead of exiting with 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(message, hint=f"see '{self.prog} --help'")


def add_selection(parser: argparse.ArgumentParser) -> None:
    """The flags that choose cases: PATH..., ``-c``, ``--tag``, ``--cases-dir``, ``--no-user-cases``,
    ``--fixtures-dir``."""
    parser.add_argument("paths", nargs="*", metavar="PATH", help="case files, folders or globs (default: every case source, see 'list --sources')")
    parser.add_argument("-c", "--cases", action="append", default=[], metavar="GLOB", help="keep cases whose group/id matches (repeatable)")
    parser.add_argument("--tag", action="append", default=[], help="keep cases with this tag (repeatable)")
    parser.add_argument("--cases-dir", type=Path, help="folder of case files used instead of the default sources")
    parser.add_argument("--no-user-cases", action="store_true", help="leave out the user's case folder (~/.config/tooltrial/cases)")
    parser.add_argument("--fixtures-dir", type=Path, help="folder of fixture folders (default: ../fixtures beside the cases, else the bundled ones)")


def add_arms(parser: argparse.ArgumentParser) -> None:
    """The flags that make the arms of the run matrix, and its repeats: ``-p``, ``-P``, ``--faults``, ``-T``,
    ``--runs`` (``run`` runs them; ``list --shard`` counts them)."""
    parser.add_argument("-p", "--provider", action="append", default=[],
                        help="'scripted', a litellm model (ollama/qwen3, openai/gpt-4o) or an alias from tooltrial.yml (repeatable)")
    parser.add_argument("-P", "--prompt", action="append", default=[], metavar="FILE",
                        help="system prompt template: a file, or a bundled prompt's name (default, terse) from any folder "
                        "(repeatable, A/B)")
    parser.add_argument("--faults", action="append", default=[], metavar="FILE|off|case",
                        help="a fault arm: a fault profile file, off (no faults) or case (each case's own faults); "
                        "repeatable, the clean twin (off) added when not given (docs/robustness.md)")
    parser.add_argument("-T", "--tools", action="append", default=[], metavar="FILE",
                        help="tool definitions the model is shown (descriptions, parameter names, enums, which tools): "
                        "a YAML file, each one an arm (repeatable, A/B)")
    parser.add_argument("--runs", type=runs, default=1, metavar="N", help="repeat each case N times (a case's runs: wins)")


def add_shard(parser: argparse.ArgumentParser) -> None:
    """``--shard K/N`` (runner.suite.shard)."""
    parser.add_argument("--shard", type=shard, metavar="K/N",
                        help=f"only shard K of N: a fixed part of the runs, by case id and run number, the same on "
                             f"every machine (auto/N: K is ${INDEX_VARIABLE} + 1, as a Kubernetes Indexed Job sets it)")


def shard(text: str) -> Shard:
    """``--shard``'s value: ``K/N`` or ``auto/N`` (runner.suite.shard.parse_shard, K from the environment)."""
    try:
        return parse_shard(text, os.environ)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def sources(args: argparse.Namespace) -> list[Source]:
    """Where the selection flags say cases come from."""
    return select_sources(args.paths, args.cases_dir, user=not args.no_user_cases)


def selected(args: argparse.Namespace) -> list[Sourced]:
    """The cases the selection flags choose, each with its source; says ``no case selected`` on
    stderr when none is. Raises UserError/UserErrors for bad paths and case files."""
    everything = load_sourced(sources(args), args.fixtures_dir)
    kept = {case.full_id for case in select([s.case for s in everything], args.cases, args.tag)}
    chosen = [s for s in everything if s.case.full_id in kept]
    if not chosen:
        whys = why_none_selected([s.case for s in everything], args.cases, args.tag)
        for line in [f"no case selected: {why}" for why in whys] or ["no case selected"]:
            print(line, file=sys.stderr)
    return chosen


def _number(text: str, kind: type, wanted: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``-j``)."""
    value = int(_number(text, int, "a whole number"))
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def workers(text: str) -> int | None:
    """``--workers``: ``auto`` (None) or a whole number of at least 1."""
    return None if text == "auto" else positive_int(text)


def runs(text: str) -> int:
    """``--runs``: a whole number from 1 to what a case's ``runs`` may say."""
    value, most = positive_int(text), case_schema()["properties"]["runs"]["maximum"]
    if value > most:
        raise argparse.ArgumentTypeError(f"must be at most {most}, got {value}")
    return value


def fraction(text: str) -> float:
    """A number from 0 to 1 (``--min-pass-rate``)."""
    value = _number(text, float, "a number from 0 to 1")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def seconds(text: str) -> float:
    """Seconds for ``--timeout``: finite, above 0 and at most what a case's ``timeout`` may say."""
    value = _number(text, float, "a number of seconds")
    most = case_schema()["properties"]["timeout"]["maximum"]
    if not 0 < value <= most:  # NaN and infinity fail too
        raise argparse.ArgumentTypeError(f"must be greater than 0 and at most {most} (a day), got {text}")
    return value


def check_writable(flag: str, path: Path, folder: bool, example: str = "out.txt") -> None:
    """Refuse an output path of option ``flag`` that cannot be written as a file (``folder`` False) or a
    folder: what exists of it must be of that kind, and a file can be made in the nearest folder that
    exists (tried: permissions lie to root). Raises UserError naming the flag and the path, with a hint
    (for a folder given as a file, ``example`` the file name it suggests in it)."""
    nearest = path
    try:
        if not folder and path.is_dir():
            raise UserError(f"{flag} {path} is a folder", hint=f"give a file path, e.g. {path / example}")
        if not folder and not_replaceable(path):
            raise UserError(f"{flag} {path} is not a regular file (a device, pipe or socket)",
                            hint="tooltrial writes a file and moves it into place: give a file path; "
                                 "for the report on stdout, use --output json")
        if folder and path.exists() and not path.is_dir():
            raise UserError(f"{flag} {path} is a file", hint="give a folder, or a path where one can be made")
        nearest = path if folder and path.is_dir() else path.parent
        while not nearest.exists() and nearest != nearest.parent:
            nearest = nearest.parent
        if not nearest.is_dir():
            raise UserError(f"{flag} {path}: {nearest} is a file, not a folder", hint="give a path inside a folder")
        fd, probe = tempfile.mkstemp(dir=nearest, prefix=".tooltrial-", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"{flag} {path} cannot be written: {nearest}: {e.strerror}",
                        hint="give a path in a folder you can write to") from e
