"""The `tooltrial` command: the parser built from one module per subcommand, and the one error
boundary (runner.errors.run_at_boundary) every subcommand runs inside."""

from __future__ import annotations

import argparse
from typing import Callable, Sequence

from runner import __version__
from runner.cli import listing, new, report, run, schema, validate
from runner.cli.options import Parser
from runner.errors import run_at_boundary

SUBCOMMANDS = {"run": run, "list": listing, "validate": validate, "report": report, "schema": schema, "new": new}
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {name: module.command for name, module in SUBCOMMANDS.items()}


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser; each subcommand's module adds its own (``add``), its handler is in ``HANDLERS``."""
    parser = Parser(prog="tooltrial", description="Measure how well LLM agents use tools.")
    parser.add_argument("--version", action="version", version=f"tooltrial {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in SUBCOMMANDS.values():
        module.add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tooltrial``; returns the exit code (see runner.errors.ExitCode)."""

    def dispatch() -> int:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help and --version
            return int(e.code or 0)
        return int(HANDLERS[args.command](args))

    return int(run_at_boundary(dispatch))
