"""The summary tables printed after the run lines: one per arm (provider · prompt), then failure causes."""

from __future__ import annotations

from typing import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from runner.report import ArmSummary, Summary

_COLUMNS = ("group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time")


def arm_table(arm: ArmSummary) -> Table:
    """A row per case group and, when there are several, an ``all`` row; means to 2 decimals, ``-`` when undefined."""
    table = plain_table()
    for name in _COLUMNS:
        table.add_column(name, justify="left" if name == "group" else "right", no_wrap=True)
    for group, summary in arm.groups.items():
        table.add_row(group, *_cells(summary))
    if len(arm.groups) > 1:
        table.add_row("all", *_cells(arm.total), style="bold")
    return table


def failure_table(summary: Summary) -> Table:
    """Runs per failure cause, most frequent first."""
    table = plain_table()
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
        console.print(arm_table(arm))
    if overall.failures:
        console.print()
        console.print(failure_table(overall))


def plain_table(title: str | None = None) -> Table:
    """The one table style of tooltrial's terminal output: a rule under the header, no frame."""
    return Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)


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
