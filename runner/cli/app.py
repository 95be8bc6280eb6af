"""The `tooltrial` command: the parser built from one module per subcommand, and the one error
boundary (runner.errors.run_at_boundary) every subcommand runs inside."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from runner import __version__
from runner.cli import cache, doctor, export, imports, listing, merge, new, plan, report, rescore, run, schema, validate
from runner.cli.options import Parser
from runner.errors import ExitCode, UserError, did_you_mean, run_at_boundary

SUBCOMMANDS = {
    "run": run,
    "list": listing,
    "validate": validate,
    "report": report,
    "rescore": rescore,
    "merge": merge,
    "export": export,
    "plan": plan,
    "schema": schema,
    "new": new,
    "import": imports,
    "doctor": doctor,
    "cache": cache,
}
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {name: module.command for name, module in SUBCOMMANDS.items()}


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser; each subcommand's module adds its own (``add``), its handler is in ``HANDLERS``."""
    return _parsers()[0]


def _parsers() -> tuple[Parser, dict[str, Parser]]:
    """The full parser and each subcommand's own, by name."""
    parser = Parser(prog="tooltrial", description="Measure how well LLM agents use tools.")
    parser.add_argument("--version", action="version", version=f"tooltrial {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in SUBCOMMANDS.values():
        module.add(sub)
    return parser, sub.choices


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` (without the program's name) parsed, and kept as ``words``. Raises UserError for an
    unknown subcommand (with a did-you-mean) and for an unknown option, pointing at the help of the
    subcommand it was given to; SystemExit for ``--help`` and ``--version``."""
    parser, subcommands = _parsers()
    command = next((word for word in argv if not word.startswith("-")), None)
    if command is not None and command not in subcommands:
        hint = did_you_mean(command, subcommands)
        raise UserError(f"unknown command {command!r}", hint=f"{hint} see 'tooltrial --help'" if hint else
                        f"choose from {', '.join(subcommands)}; see 'tooltrial --help'")
    args, extras = parser.parse_known_args(argv)
    if extras:
        subcommands[args.command].error(f"unrecognized arguments: {' '.join(extras)}")
    args.words = list(argv)  # as typed: run writes its own command line out again (to resume it)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tooltrial``; returns the exit code (see runner.errors.ExitCode). Without
    arguments it prints the usage and the subcommands on stderr and returns 4 (bad usage)."""

    def dispatch() -> int:
        words = list(sys.argv[1:] if argv is None else argv)
        if not words:
            print(build_parser().format_help(), end="", file=sys.stderr)
            return ExitCode.USAGE
        try:
            args = parse(words)
        except SystemExit as e:  # --help and --version
            return int(e.code or 0)
        return int(HANDLERS[args.command](args))

    return int(run_at_boundary(dispatch))
