"""The fault tables (runner.scoring.robustness): each arm's recovery, and the robustness table of each case's pass
rate with its faults against its clean twin (``--faults off``). Pass rates read ``passed/runs``; a difference is in
percentage points, the fault arm's rate minus the clean twin's.
"""

from __future__ import annotations

from rich.console import Console

from runner.scoring.aggregate import Aggregate
from runner.terminal.console import shown
from runner.terminal.tables import plain_table


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_robustness(console: Console, model: Aggregate) -> None:
    """The recovery table when some run got a fault, then the robustness table when the suite had a clean twin."""
    if model.recoveries:
        table = plain_table("Faults")
        for name in ("arm", "faulted runs", "recovered", "fault_not_handled", "retries / run", "calls to recover"):
            table.add_column(name, justify="left" if name == "arm" else "right", overflow="fold")
        for r in model.recoveries:
            rate = "-" if r.recovery is None else f"{r.recovered}/{r.faulted} {100 * r.recovery:.0f}%"
            table.add_row(shown(r.arm), str(r.faulted), rate, str(r.not_handled), _number(r.retries),
                          _number(r.calls_to_recover))
        console.print()
        console.print(table)
    if model.robustness:
        table = plain_table("Robustness (pass rate with faults vs the clean twin, faults off)")
        for name in ("case", "arm", "faults", "clean", "faulty", "difference"):
            table.add_column(name, justify="right" if name in ("clean", "faulty", "difference") else "left",
                             overflow="fold")
        for row in model.robustness:
            difference = "-" if row.difference is None else f"{100 * row.difference:+.0f} pts"
            table.add_row(shown(row.case), shown(row.base), shown(row.faults), f"{row.clean_passed}/{row.clean_runs}",
                          f"{row.passed}/{row.runs}", difference)
        console.print()
        console.print(table)
