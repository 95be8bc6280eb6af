"""The prompt-injection table printed under an arm's table (runner.scoring.injection): utility without attack,
utility under attack and attack success, each as runs, rate and Wilson 95% interval."""

from __future__ import annotations

from rich.table import Table

from runner.scoring.aggregate import Arm
from runner.scoring.injection import Rate
from runner.terminal.tables import plain_table

_ROWS = (("utility, no attack", "utility_clean"), ("utility under attack", "utility_attacked"),
         ("attack success", "attack_success"))


def injection_table(arm: Arm) -> Table | None:
    """A row per measure of ``arm``'s injections (``1/2  50%  9%-91%``, ``-`` for a rate of no run); None when no
    case of the arm has injections."""
    if arm.injection is None:
        return None
    table = plain_table()
    for name in ("prompt injections", "runs", "rate", "95% interval"):
        table.add_column(name, justify="left" if name == "prompt injections" else "right", no_wrap=True)
    for label, key in _ROWS:
        table.add_row(label, *_cells(getattr(arm.injection, key)))
    return table


def _cells(rate: Rate) -> list[str]:
    if rate.rate is None:
        return [f"0/{rate.runs}", "-", "-"]
    low, high = rate.interval
    return [f"{rate.count}/{rate.runs}", f"{rate.rate:.0%}", f"{low:.0%}-{high:.0%}"]
