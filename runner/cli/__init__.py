"""The `tooltrial` command: argument parsing and one module per subcommand."""

from runner.cli.app import main

__all__ = ["main"]
