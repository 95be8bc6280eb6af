"""What a suite's judges are worth, printed after the statistics (from report.json's ``judges``,
runner.scoring.judging): the runs graded by a judge not calibrated on its rubric, and the table splitting the
variance of judged scores into the judge's own and run to run (``run --judge-repeats``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console

from runner.terminal.console import shown
from runner.terminal.tables import plain_table
from runner.text import plural


def calibration_line(judges: Mapping[str, Any]) -> str | None:
    """``judges: N of M judged runs by a judge not calibrated on its rubric (J: status, n runs; ...)``, or None when
    every judge was calibrated."""
    if not judges["uncalibrated_runs"]:
        return None
    marks = "; ".join(f"{c['judge']}: {c['status']}" + (f" (kappa {c['kappa']:.2f} < {c['min_kappa']:.2f})"
                      if c["status"] == "under-calibrated" and c["kappa"] is not None and c["min_kappa"] is not None
                      else "") + f", {plural(c['runs'], 'run')}" for c in judges["calibrations"] if c["status"] != "calibrated")
    return (f"judges: {judges['uncalibrated_runs']} of {judges['judged_runs']} judged runs by a judge not "
            f"calibrated on its rubric ({marks}); see tooltrial judge calibrate")


def print_judges(console: Console, judges: Mapping[str, Any] | None) -> None:
    """The calibration line (yellow) and the noise table: per cell, runs x repeats, the judge's variance, the
    run-to-run variance (``-`` with one run), their total and the judge's share of it."""
    if judges is None:
        return
    line = calibration_line(judges)
    if line is not None:
        console.print()
        console.print(shown(line, style="yellow"))
    if not judges["noise"]:
        return
    table = plain_table("Judge noise: the variance of judged scores, the judge's own and run to run")
    for header in ("arm", "case", "runs x repeats", "judge", "run to run", "total", "judge share"):
        table.add_column(header, justify="left" if header in ("arm", "case") else "right", overflow="fold")
    for n in judges["noise"]:
        share = f"{n['judge_variance'] / n['total_variance']:.0%}" if n["total_variance"] else "-"
        run = "-" if n["run_variance"] is None else f"{n['run_variance']:.4f}"
        table.add_row(shown(n["arm"]), shown(n["case"]), f"{n['runs']} x {n['repeats']}", f"{n['judge_variance']:.4f}",
                      run, f"{n['total_variance']:.4f}", share)
    console.print()
    console.print(table)
