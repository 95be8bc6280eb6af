"""The table of output formats: every file (or collector) a finished suite can be written to besides the
results folder, one row each.

A row says which options it adds to which subcommands' parsers (runner.cli.outputs builds them from
here), what its options' values become (its target), and the function that writes it from the finished
runs (runner.output.finish.Ending). Rows are data only: their functions are named as ``module:function`` and
imported when the output is asked for, so ``tooltrial --help`` loads no writer. Adding a format: its
module in runner/output/ and a row here (or ``register`` for one that lives elsewhere).

A streamed format's piece of each run is made from the record in hand as the run is saved (``item``),
kept in a spool (runner.output.spool) and handed to its writer in plan order at the end, so no run file
is read back for it; the report's ``runs`` go that way. A whole format's writer reads the records back
from the run files, one at a time, once every run is done.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RUN, REPORT, MERGE, RESCORE = "run", "report", "merge", "rescore"


@dataclass(frozen=True)
class Option:
    """One option a format adds.

    Attributes:
        flag: the long option, ``--junit``; its value is ``args.junit``.
        help: its help text, or each subcommand's own by name.
        metavar: the value's name in the help (``FILE``, ``URL``); None for a switch that takes none.
        file: whether the value is a file the format writes: a path, checked before anything runs (it can
            be written, it is not one of the run's own case or prompt files).
        example: a file name for the hint when the path given is a folder (``junit.xml``).
    """

    flag: str
    help: str | Mapping[str, str]
    metavar: str | None = "FILE"
    file: bool = True
    example: str = "out.txt"

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds the value (``--summary-md``: ``summary_md``)."""
        return self.flag.removeprefix("--").replace("-", "_")

    def help_for(self, command: str) -> str:
        """The help text ``command`` shows."""
        return self.help if isinstance(self.help, str) else self.help[command]


@dataclass(frozen=True)
class OutputFormat:
    """One row of the table.

    Attributes:
        name: the format's name, unique in the table.
        options: what it adds to the parser of each of ``commands``, in the order the help lists them; it is
            asked for when one of them is given a value (a switch alone only refines the others).
        writer: ``module:function`` of ``(target, ending) -> None``: writes the format from the finished runs
            (runner.output.finish.Ending). Raises OSError for a file it cannot write (a line ``cannot write
            TARGET: why`` then, and the other outputs are still written) or runner.output.finish.NotWritten
            with the lines to show.
        commands: the subcommands that offer it.
        item: a streamed format's ``module:function`` of ``(record, data) -> str``, its piece of one run
            (``data``: the record's ``to_dict()`` where made already, else None); None for a format
            written whole at the end.
        target: ``module:function`` of ``(values) -> target``, called before anything runs with its options'
            values by ``dest``: what the writer is given, raising UserError for values that cannot work (an
            extra not installed, a switch without its option); None: the first option's value.
        env: an environment variable that asks for the format as well, its value the target's path
            (``$GITHUB_STEP_SUMMARY``).
    """

    name: str
    options: tuple[Option, ...]
    writer: str
    commands: frozenset[str]
    item: str | None = None
    target: str | None = None
    env: str | None = None

    @property
    def streams(self) -> bool:
        """Whether each run's piece is made as the run is saved, rather than read back at the end."""
        return self.item is not None


FORMATS: list[OutputFormat] = [
    OutputFormat("report", (Option("--report", "also write the JSON report to FILE", example="report.json"),),
                 "runner.output.report:write_report", frozenset({RUN, RESCORE}), item="runner.output.report:run_item"),
    OutputFormat("junit", (Option("--junit", "write JUnit XML to FILE", example="junit.xml"),),
                 "runner.output.junit:write_junit", frozenset({RUN, RESCORE})),
    OutputFormat("html", (Option("--html", {
        RUN: "write the report as one self-contained HTML page to FILE (opens offline)",
        REPORT: "also write one self-contained HTML page to FILE "
                "(of two folders: the second, with the regression view)",
        RESCORE: "also write the rescored results as one self-contained HTML page to FILE",
    }, example="report.html"),), "runner.output.html:write_page", frozenset({RUN, REPORT, RESCORE})),
    OutputFormat("summary_md", (Option("--summary-md", {
        RUN: "write a Markdown summary to FILE (also appended to $GITHUB_STEP_SUMMARY when that is set)",
        REPORT: "also write a Markdown summary (of the regression, for two folders) to FILE",
        RESCORE: "also write a Markdown summary of the rescored results to FILE",
    }, example="summary.md"),), "runner.output.markdown:write_summary", frozenset({RUN, REPORT, RESCORE})),
    OutputFormat("step_summary", (), "runner.output.markdown:append_summary", frozenset({RUN}),
                 env="GITHUB_STEP_SUMMARY"),
    OutputFormat("otel", (
        Option("--otel", "write each run as an OpenTelemetry trace to FILE (OTLP JSON lines; needs the otel extra)",
               example="traces.jsonl"),
        Option("--otel-endpoint", "send each run as an OpenTelemetry trace to an OTLP/HTTP collector (http://localhost:4318)",
               metavar="URL", file=False),
        Option("--otel-content", "put the messages sent, the replies, tool arguments and results in the traces (they may hold secrets)",
               metavar=None, file=False),
    ), "runner.output.otlp:write_traces", frozenset({RUN}), target="runner.output.otlp:otel_target"),
]


def register(row: OutputFormat) -> None:
    """Add ``row`` to the table, after the others: for a format outside runner/output/, registered at
    start-up, before a command line is parsed (runs only read the table). Raises ValueError when the table
    has a format of that name or an option of one of its flags."""
    flags = {option.flag for other in FORMATS for option in other.options}
    if any(other.name == row.name for other in FORMATS) or flags & {option.flag for option in row.options}:
        raise ValueError(f"the output table already has {row.name!r} or one of its options")
    FORMATS.append(row)


def unregister(name: str) -> None:
    """Take the format ``name`` out of the table. Raises KeyError when it has none of that name."""
    FORMATS.remove(by_name(name))


def offered(command: str) -> list[OutputFormat]:
    """The formats ``command`` offers, in table order."""
    return [row for row in FORMATS if command in row.commands]


def by_name(name: str) -> OutputFormat:
    """The format ``name``. Raises KeyError when the table has none."""
    for row in FORMATS:
        if row.name == name:
            return row
    raise KeyError(name)


def streamed(names: Iterable[str]) -> dict[str, Callable[..., str]]:
    """Format name -> the function that makes its piece of a run (``item``), for the report (report.json,
    in every results folder, is made of its items) and each of ``names`` that streams."""
    wanted = {"report", *names}
    return {row.name: load(row.item) for row in FORMATS if row.item is not None and row.name in wanted}


def load(ref: str) -> Callable[..., Any]:
    """The function ``module:function`` names, its module imported now."""
    module, _, function = ref.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found
