"""The summary tables printed after the run lines: one per arm (provider · prompt), then failure causes."""

from __future__ import annotations

from typing import Sequence

from rich import box
from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.segment import Segments
from rich.table import Table
from rich.text import Text

from runner.report import ArmSummary, Summary

_COLUMNS = ("group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time")


def arm_table(arm: ArmSummary) -> Table:
    """A row per case group and, when there are several, an ``all`` row; means to 2 decimals, ``-`` when undefined."""
    table = _table()
    for name in _COLUMNS:
        table.add_column(name, justify="left" if name == "group" else "right", no_wrap=True)
    for group, summary in arm.groups.items():
        table.add_row(group, *_cells(summary))
    if len(arm.groups) > 1:
        table.add_row("all", *_cells(arm.total), style="bold")
    return table


def failure_table(summary: Summary) -> Table:
    """Runs per failure cause, most frequent first."""
    table = _table()
    table.add_column("failure cause", no_wrap=True)
    table.add_column("runs", justify="right", no_wrap=True)
    for cause, count in sorted(summary.failures.items(), key=lambda item: (-item[1], item[0])):
        table.add_row(cause, str(count))
    return table


def print_summary(console: Console, arms: Sequence[ArmSummary], overall: Summary) -> None:
    """After a blank line, each arm's label and table, then the failure causes when some run did not pass."""
    for arm in arms:
        console.print()
        console.print(Text(arm.label, style="bold"))
        _print_whole(console, arm_table(arm))
    if overall.failures:
        console.print()
        _print_whole(console, failure_table(overall))


def _table() -> Table:
    return Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)


def _print_whole(console: Console, renderable: RenderableType) -> None:
    """Print at the natural width even when wider than the console (80 columns on a pipe), never cut."""
    width = Measurement.get(console, console.options.update_width(1000), renderable).maximum
    lines = console.render_lines(renderable, console.options.update_width(width), pad=False, new_lines=True)
    console.print(Segments([segment for line in lines for segment in line]))


def _cells(summary: Summary) -> list[str]:
    return [
        f"{summary.passed}/{summary.runs} {summary.pass_rate:.0%}",
        _score(summary.accuracy),
        _score(summary.outcome),
        _score(summary.process),
        str(summary.calls),
        str(summary.redundant),
        str(summary.errors),
        "-" if summary.tokens is None else str(summary.tokens),
        f"{summary.duration:.1f}s",
    ]


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
