"""Rich tables of repeated runs, arm comparisons, paired verdicts, ``--until-decided``, failed gates and regressions.

Values a run did not report show as ``-``. Pass rates are percentages of the scored runs with
the Wilson 95% interval in parentheses; ``±`` is the sample standard deviation. Runs ended by an
error not of the agent's making are not scored (runner.scoring.aggregate): where there are any,
an ``infra`` column or ``infra errors`` row counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Console

from runner.scoring.aggregate import Aggregate, Arm, Figures
from runner.scoring.gates import Gate
from runner.scoring.paired import Paired
from runner.scoring.regression import Regression
from runner.terminal.console import shown
from runner.terminal.robustness import print_robustness
from runner.terminal.tables import plain_table

Number = float | None


def _pct(value: Number) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _fixed(digits: int) -> Callable[[Number], str]:
    return lambda value: "-" if value is None else f"{value:.{digits}f}"


def _points(value: Number) -> str:
    """A difference of two fractions in percentage points."""
    return "-" if value is None else f"{100 * value:.0f} pts"


def _usd(value: Number) -> str:
    return "-" if value is None else f"${value:.4f}"


def _secs(value: Number) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _rate(m: Figures) -> str:
    if m.pass_rate is None:  # no run was scored: no rate, and no interval worth showing
        return "-"
    low, high = m.interval
    return f"{_pct(m.pass_rate)} ({_pct(low)}–{_pct(high)})"


def _spread(mean: Number, std: Number) -> str:
    return "-" if mean is None else f"{mean:.2f}±{std or 0:.2f}"


# (label, value of a Figures, how to show it): the rows both the comparison and the regression show.
ROWS: list[tuple[str, Callable[[Figures], Number], Callable[[Number], str]]] = [
    ("accuracy", lambda m: m.accuracy_mean, _fixed(2)),
    ("outcome", lambda m: m.outcome_mean, _fixed(2)),
    ("process", lambda m: m.process_mean, _fixed(2)),
    ("calls / run", lambda m: m.calls_mean, _fixed(1)),
    ("redundant / run", lambda m: m.redundant_mean, _fixed(1)),
    ("errors / run", lambda m: m.errors_mean, _fixed(1)),
    ("tokens / run", lambda m: m.tokens_mean, _fixed(0)),
    ("cost", lambda m: m.cost_total, _usd),
    ("time / run", lambda m: m.duration_mean, _secs),
    ("tokens / pass", lambda m: m.tokens_per_pass, _fixed(0)),
    ("cost / pass", lambda m: m.cost_per_pass, _usd),
]


def _top_k(arms: Sequence[Arm]) -> int:
    """The largest k every arm with a scored run has pass@k for (an arm without shows ``-``); 0 when none has."""
    return min((max(a.pass_hat_k) for a in arms if a.pass_hat_k), default=0)


def _at(values: dict[int, float], k: int) -> str:
    """The estimate at ``k`` to 2 decimals; ``-`` without one (k = 0: no scored run)."""
    return f"{values[k]:.2f}" if k in values else "-"


def _infra_row(figures: Sequence[Figures]) -> list[str]:
    """The ``infra errors`` row's cells, or none when no run of ``figures`` went unscored."""
    return [str(f.infra_errors) for f in figures] if any(f.infra_errors for f in figures) else []


def print_cells(console: Console, model: Aggregate) -> None:
    """Per arm, one row per case: runs, pass rate and interval, pass@k and pass^k at k = scored runs,
    outcome, process, flaky; an ``infra`` column after ``runs`` counts the runs not scored, when any."""
    infra = model.overall.infra_errors > 0
    for arm in model.labels:
        title = "Runs per case" + (f": {arm}" if len(model.arms) > 1 else "")
        table = plain_table(title)
        headers = ("case", "runs", *(("infra",) if infra else ()),
                   "pass rate (95% CI)", "pass@k", "pass^k", "outcome", "process", "flaky")
        for header in headers:
            table.add_column(header, justify="left" if header == "case" else "right", overflow="fold")
        for cell in (c for c in model.cells if c.arm == arm):
            m, k = cell.figures, cell.figures.scored
            table.add_row(
                shown(cell.case), str(m.runs), *([str(m.infra_errors)] if infra else []), _rate(m),
                _at(cell.pass_at_k, k), _at(cell.pass_hat_k, k),
                _spread(m.outcome_mean, m.outcome_std), _spread(m.process_mean, m.process_std),
                "flaky" if cell.flaky else "",
            )
        console.print()
        console.print(table)


def print_comparison(console: Console, model: Aggregate) -> None:
    """One column per arm, one row per metric; pass@k and pass^k at the largest k every arm has."""
    arms = model.arms
    k = _top_k(arms)
    table = plain_table("Comparison")
    table.add_column("metric", overflow="fold")
    for arm in arms:
        table.add_column(shown(arm.label), justify="right", overflow="fold")
    infra = _infra_row([a.figures for a in arms])
    if infra:
        table.add_row("infra errors", *infra)
    table.add_row("pass rate (95% CI)", *(_rate(a.figures) for a in arms))
    table.add_row(f"pass@{k or 'k'}", *(_at(a.pass_at_k, k) for a in arms))
    table.add_row(f"pass^{k or 'k'}", *(_at(a.pass_hat_k, k) for a in arms))
    for label, value, show in ROWS:
        table.add_row(label, *(show(value(a.figures)) for a in arms))
    console.print()
    console.print(table)


def print_paired(console: Console, paired: Paired) -> None:
    """The cases whose paired runs flipped, the one-line verdict, then each difference with its interval
    (``Paired.estimates``)."""
    for flip in paired.flips:
        console.print(shown(f"  {flip.case}: {flip.pass_to_fail} pass→fail, {flip.fail_to_pass} fail→pass"))
    style = "bold" if paired.significant else ""
    console.print(shown(paired.verdict, style=style))
    for line in paired.estimates:
        console.print(shown(f"  {line}"))


def print_failed_gates(console: Console, gates: Sequence[Gate]) -> None:
    """One line per gate that did not hold, saying whether the agent or the infrastructure broke it."""
    for gate in gates:
        if not gate.held:
            console.print(shown(
                f"gate failed: {gate.case} [{gate.arm}]: {gate.passes}/{gate.runs} passed, "
                f"needs {gate.threshold:.0%} ({gate.broken_by})",
                style="bold red",
            ))


def print_regression(console: Console, regression: Regression, before: str, after: str) -> None:
    """Per matched arm a before/after/change table, then the paired runs that went pass→fail and fail→pass
    (``pass→fail: 3 runs in 2 cases``, then each case with its count and pass rates), the cells one side
    only ran, the changes of inputs (runner.scoring.inputs), then the paired verdict, whose flip counts are the
    same runs'."""
    console.print(shown(f"before: {before}\nafter:  {after}"))
    for old, new in regression.arms:
        k = _top_k([old, new])
        title = old.label if old.label == new.label else f"{old.label} → {new.label}"
        table = plain_table(title)
        for header in ("metric", "before", "after", "change"):
            table.add_column(header, justify="left" if header == "metric" else "right", overflow="fold")
        infra = _infra_row([old.figures, new.figures])
        if infra:
            table.add_row("infra errors", *infra, "")
        rate = old.figures.pass_rate, new.figures.pass_rate
        table.add_row("pass rate", _pct(rate[0]), _pct(rate[1]), _change(*rate, _points))
        hat = old.pass_hat_k.get(k), new.pass_hat_k.get(k)
        table.add_row(f"pass^{k or 'k'}", _fixed(2)(hat[0]), _fixed(2)(hat[1]), _change(*hat, _fixed(2)))
        for label, value, show in ROWS:
            a, b = value(old.figures), value(new.figures)
            table.add_row(label, show(a), show(b), _change(a, b, show))
        console.print()
        console.print(table)
    for title, key, changes in (("pass→fail", "pass_to_fail", regression.pass_to_fail),
                                ("fail→pass", "fail_to_pass", regression.fail_to_pass)):
        runs = sum(getattr(change, key) for change in changes)
        counted = f"{_many(runs, 'run')} in {_many(len(changes), 'case')}" if changes else "none"
        console.print(shown(f"{title}: {counted}", style="bold"))
        for change in changes:
            console.print(shown(f"  {change.case} [{change.arm}]: {_many(getattr(change, key), 'run')}, "
                                f"pass rate {_pct(change.before)} → {_pct(change.after)}"))
    for side, cells in (("only before", regression.only_before), ("only after", regression.only_after)):
        if cells:
            console.print(shown(f"{side} ({_many(len(cells), 'case')}, not compared): {', '.join(cells)}", style="dim"))
    if regression.changed:
        kept = "kept in the paired analysis: --allow-changed" if regression.allow_changed else \
            f"{_many(len(regression.left_out), 'case')} left out of the paired analysis; --allow-changed keeps them"
        console.print(shown(f"changed inputs ({kept}):", style="bold"))
        for edit in regression.changed:
            console.print(shown(f"  {edit.name}: {edit.change}"))
    console.print(shown(regression.paired.verdict))
    for line in regression.paired.estimates:
        console.print(shown(f"  {line}"))


def _many(count: int, noun: str) -> str:
    """``1 run``, ``2 runs``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _change(before: Number, after: Number, show: Callable[[Number], str]) -> str:
    if before is None or after is None:
        return "-"
    if after == before:
        return ""
    return ("+" if after > before else "-") + show(abs(after - before))


def print_statistics(console: Console, model: Aggregate, gates: Sequence[Gate]) -> None:
    """What follows the run lines: the per-case table when any case ran more than once, the comparison
    when there are several arms, then each paired analysis (runner.scoring.pairs: with more than two
    arms, each two that differ in one dimension, a blank line before each), and the gates that failed
    where a gate is more than "every run passes" (several runs or a threshold below 1); the fault tables
    (runner.terminal.robustness) before the comparison."""
    if any(c.figures.runs > 1 for c in model.cells):
        print_cells(console, model)
    print_robustness(console, model)
    if len(model.arms) > 1:
        print_comparison(console, model)
    for paired in model.comparisons:
        if len(model.comparisons) > 1:  # a blank line tells each comparison's flipped cases from the last verdict
            console.print()
        print_paired(console, paired)
    print_failed_gates(console, [g for g in gates if g.runs > 1 or g.threshold < 1])


def print_sequential(console: Console, section: Mapping[str, Any] | None) -> None:
    """``run --until-decided``: a row per comparison (its decision, the round it stopped after, the pairs, B's
    pass rate minus A's, the evidence for the decision it reached or is nearest: ``_nearest``), then the runs, tokens and cost spent and saved, and why each
    comparison stopped (report.json's ``sequential``, runner.suite.rounds); nothing when ``section`` is None."""
    if section is None:
        return
    table = plain_table(f"Until decided (alpha {section['alpha']:g}, margin ±{section['margin']:g}, cap {section['cap']})")
    for header in ("comparison", "decision", "stopped after", "pairs", "difference", "evidence"):
        table.add_column(header, justify="left" if header in ("comparison", "decision") else "right", overflow="fold")
    for c in section["comparisons"]:
        stopped = "-" if c["stopped_after"] is None else f"round {c['stopped_after']}"
        table.add_row(shown(c["title"]), c["decision"].replace("_", " "), stopped, str(c["pairs"]),
                      "-" if c["difference"] is None else f"{c['difference']:+.2f}", f"{_nearest(c['evidence']):.3g}")
    console.print()
    console.print(table)
    console.print(shown(section["summary"]))
    for c in section["comparisons"]:
        console.print(shown(c["reason"]))


def _nearest(evidence: Mapping[str, float]) -> float:
    """The e-value of the decision reached or nearest: B better (above 0), A better (below 0), or within the
    margin (the lesser of its two sides)."""
    return max(evidence["above_zero"], evidence["below_zero"],
               min(evidence["below_margin"], evidence["above_minus_margin"]))
