"""The summary tables printed after the run lines: one per arm (provider · prompt), then failure causes."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from runner.scoring.aggregate import Aggregate, Arm, Figures, TrajectoryMeans
from runner.terminal.console import shown

_COLUMNS = ("group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time")
_JUDGE_COLUMN = "judge tokens"
_INFRA_COLUMN = "infra"
_TRAJECTORY = ("group", "runs", "exact", "in order", "any order", "name prec", "name rec", "call prec", "call rec")
_UNLIMITED = 10_000  # columns
_SHORT = {"accuracy": "acc", "outcome": "outc", "process": "proc", "redundant": "redun", "errors": "errs",
          _JUDGE_COLUMN: "judge tok"}  # headers of a table too wide for the terminal


def arm_table(arm: Arm, short: bool = False) -> Table:
    """A row per case group and, when there are several, an ``all`` row: passes of the scored runs
    (``passed/scored rate``), means to 2 decimals (``-`` when undefined), then totals of calls,
    redundant calls, errors, tokens and seconds.

    An ``infra`` column after ``passed`` counts the runs that were not scored (ended by an error not of
    the agent's making: runner.scoring.aggregate) when the arm has any; a ``judge tokens`` column follows
    ``tokens`` when some judge of the arm reported tokens. ``short`` abbreviates the longer headers
    (``acc``, ``outc``, ``proc``, ...) for narrow terminals.
    """
    judged = arm.figures.judge_tokens.total_tokens is not None
    infra = arm.figures.infra_errors > 0
    columns = (*_COLUMNS[:-1], _JUDGE_COLUMN, _COLUMNS[-1]) if judged else _COLUMNS
    if infra:
        columns = (*columns[:2], _INFRA_COLUMN, *columns[2:])
    table = plain_table()
    for name in columns:
        table.add_column(_SHORT.get(name, name) if short else name, justify="left" if name == "group" else "right",
                         no_wrap=name == "passed")
    for group, figures in arm.groups.items():
        table.add_row(shown(group), *_cells(figures, judged, infra))
    if len(arm.groups) > 1:
        table.add_row("all", *_cells(arm.figures, judged, infra), style="bold")
    return table


def trajectory_table(arm: Arm) -> Table | None:
    """The trajectory match means of ``arm`` (runner.scoring.aggregate.TrajectoryMeans): a row per case
    group whose runs have a reference, and an ``all`` row when the arm has several groups; ``runs`` counts
    the scored runs with a reference, the rest are means to 2 decimals (``-`` when undefined). None when
    no run of the arm has a trajectory match."""
    if arm.figures.trajectory_mean is None:
        return None
    table = plain_table()
    for name in _TRAJECTORY:
        table.add_column(name, justify="left" if name == "group" else "right", no_wrap=True)
    rows = [(group, f.trajectory_mean) for group, f in arm.groups.items() if f.trajectory_mean is not None]
    for group, means in rows:
        table.add_row(shown(group), *_trajectory_cells(means))
    if len(arm.groups) > 1:
        table.add_row("all", *_trajectory_cells(arm.figures.trajectory_mean), style="bold")
    return table


def _trajectory_cells(means: TrajectoryMeans) -> list[str]:
    scores = (means.exact, means.in_order, means.any_order, means.name_precision, means.name_recall,
              means.call_precision, means.call_recall)
    return [str(means.runs), *map(_score, scores)]


def failure_table(figures: Figures) -> Table:
    """Runs per failure cause, most frequent first."""
    table = plain_table()
    table.add_column("failure cause", no_wrap=True)
    table.add_column("runs", justify="right", no_wrap=True)
    for cause, count in sorted(figures.failures.items(), key=lambda item: (-item[1], item[0])):
        table.add_row(shown(cause), str(count))
    return table


def print_summary(console: Console, model: Aggregate) -> None:
    """What follows the run lines: the token line (when any agent or judge reported usage), after a
    blank line each arm's label and table (and, when some of its runs have a reference list of calls,
    the ``trajectory match`` table; when some case has injections, the ``prompt injections`` table), then the failure causes when some run did not pass."""
    usage = usage_line(model.overall)
    if usage:
        console.print(usage, markup=False)
    overall = model.overall
    for arm in model.arms:
        console.print()
        console.print(shown(arm.label, style="bold"))
        table = arm_table(arm)
        console.print(table if _natural_width(console, table) <= console.width else arm_table(arm, short=True))
        trajectory = trajectory_table(arm)
        if trajectory is not None:
            console.print()
            console.print("trajectory match", style="bold", markup=False)
            console.print(trajectory)
        _print_injections(console, arm)
        for note in arm_notes(arm):
            console.print(shown(note, style="yellow"))
    if overall.failures:
        console.print()
        console.print(failure_table(overall))


def _print_injections(console: Console, arm: Arm) -> None:
    from runner.terminal.injections import injection_table  # it builds on this module's plain_table

    table = injection_table(arm)
    if table is not None:
        console.print()
        console.print(table)


def arm_notes(arm: Arm) -> list[str]:
    """The lines under an arm's table, each only when it has something to count: runs whose case's own
    ``system`` replaced the arm's prompt, runs whose final reply was cut off at the output limit, and
    the seconds runs waited for a free provider slot (an alias's ``max_concurrency``) and for the provider's
    rate limit (runner.providers.ratelimit)."""
    f, notes = arm.figures, []
    if f.prompt_overridden:
        notes.append(f"note: {f.prompt_overridden} of {f.runs} runs used their case's own system prompt, "
                     f"not {arm.prompt}")
    if f.truncated_replies:
        notes.append(f"note: {f.truncated_replies} of {f.runs} runs ended with a final reply cut off at the "
                     "output limit")
    if f.queued_total:
        notes.append(f"note: runs waited {f.queued_total:.1f}s in all for a free slot of {arm.provider} "
                     "(not counted in time)")
    if f.rate_limited_total:
        notes.append(f"note: requests waited {f.rate_limited_total:.1f}s in all for the rate limit of {arm.provider} "
                     "(not counted in time)")
    return notes


def plain_table(title: str | None = None) -> Table:
    """The one table style of tooltrial's terminal output: a rule under the header, no frame, two spaces between columns.

    Columns added with ``overflow="fold"`` break a value too wide for a narrow terminal onto the next line instead of cutting it.
    The title is shown as it reads (runner.terminal.lines.shown); cells given as ``str`` are read as rich markup, so untrusted ones go in as ``shown``.
    """
    return Table(title=None if title is None else shown(title), title_justify="left", title_style="bold", box=box.SIMPLE_HEAD,
                 show_edge=False, pad_edge=False, collapse_padding=True)


def _natural_width(console: Console, table: Table) -> int:
    """The width ``table`` takes when nothing limits it."""
    return console.measure(table, options=console.options.update_width(_UNLIMITED)).maximum


def _cells(figures: Figures, judged: bool, infra: bool) -> list[str]:
    """The row's cells in column order; ``judged`` adds the judge tokens cell, ``infra`` the count of
    runs not scored."""
    rate = "-" if figures.pass_rate is None else f"{figures.pass_rate:.0%}"
    return [
        f"{figures.passed}/{figures.scored} {rate}",
        *([str(figures.infra_errors)] if infra else []),
        _score(figures.accuracy_mean),
        _score(figures.outcome_mean),
        _score(figures.process_mean),
        str(figures.calls_total),
        str(figures.redundant_total),
        str(figures.errors_total),
        _count(figures.tokens.total_tokens),
        *([_count(figures.judge_tokens.total_tokens)] if judged else []),
        f"{figures.duration_total:.1f}s",
    ]


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def usage_line(overall: Figures) -> str:
    """The usage of every run (``overall``, the aggregation's figures of them all) on one line;
    "" when neither an agent nor a judge reported any.

    ``tokens: P prompt (K cached) + C completion (R reasoning) = T total, cost $X; N requests reported
    no usage`` is the agents' (each bracket and the last part only when not zero; ``none reported``
    when no agent reported tokens; ``?`` for a count no run reported); ``; judges: N tokens, $Y`` follows when some judge
    reported usage, each of its parts only when known. Cost is USD.
    """
    agent, judges = _agent_usage(overall), _judge_usage(overall)
    if not agent and not judges:
        return ""
    return "tokens: " + (agent or "none reported") + (f"; judges: {judges}" if judges else "")


def _agent_usage(f: Figures) -> str:
    """``P prompt + C completion = T total, cost $X``; "" when no run reported tokens."""
    used = f.tokens
    prompt, completion, tokens = used.prompt_tokens, used.completion_tokens, used.total_tokens
    if tokens is None and prompt is None and completion is None:
        return ""
    cached = f" ({used.cached_tokens:,} cached)" if used.cached_tokens else ""
    reasoning = f" ({used.reasoning_tokens:,} reasoning)" if used.reasoning_tokens else ""
    text = f"{_known(prompt)} prompt{cached} + {_known(completion)} completion{reasoning} = {_known(tokens)} total"
    text += f", cost ${f.cost_total:.4f}" if f.cost_total is not None else ""
    if used.unreported:
        n = used.unreported
        text += f"; {n} request{'' if n == 1 else 's'} reported no usage"
    return text


def _known(tokens: int | None) -> str:
    """A token count with thousands separators, ``?`` when no run reported it."""
    return "?" if tokens is None else f"{tokens:,}"


def _judge_usage(f: Figures) -> str:
    """``N tokens, $Y`` over every run's judges, each part only when known; "" when neither is."""
    tokens, cost = f.judge_tokens.total_tokens, f.judge_cost_total
    parts = ([f"{tokens:,} tokens"] if tokens is not None else []) + ([f"${cost:.4f}"] if cost is not None else [])
    return ", ".join(parts)
