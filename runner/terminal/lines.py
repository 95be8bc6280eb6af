"""The run lines: ``PASS``/``FAIL``/``ERROR`` per run, failed checks indented, a pass count; and
the case lists of ``tooltrial list``. Untrusted text goes through runner.terminal.console.shown.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.text import Text

from runner.run.record import ERROR, FAIL, PASS, RunRecord
from runner.scoring.gates import blame, is_infrastructure_error
from runner.spec.case import Case
from runner.spec.discover import Sourced
from runner.terminal.console import shown
from runner.text import first_line

_STYLES = {PASS: "bold green", FAIL: "bold red", ERROR: "bold yellow"}
TRUNCATED_MARK = "final reply cut off at the output limit (finish reason length): judged as it stood"


class RunPrinter:
    """Prints ``PASS group/id``, ``FAIL group/id`` + one indented line per failed check,
    ``ERROR group/id: cause``, and finally ``N/M passed``.

    ``label_arms`` appends ``[provider · prompt]`` when several arms run;
    ``label_runs`` appends ``#run`` when cases repeat.
    """

    def __init__(self, console: Console, label_arms: bool = False, label_runs: bool = False) -> None:
        self.console = console
        self.label_arms = label_arms
        self.label_runs = label_runs

    def record(self, record: RunRecord) -> None:
        line = Text()
        line.append(record.status.upper(), style=_STYLES[record.status])
        line.append(shown(f" {record.case}"))
        if self.label_runs:
            line.append(f" #{record.run + 1}")
        if self.label_arms:
            line.append(shown(f" [{record.arm}]", style="dim"))
        if record.status == ERROR:
            line.append(shown(f": {first_line(record.cause, 'unknown error')}"))
        self.console.print(line)
        if record.status == FAIL:
            for check in record.failed_checks:
                self.console.print(shown(f"  {check.message}"))
        if record.truncated_reply:
            self.console.print(shown(f"  {TRUNCATED_MARK}"))
        for warning in record.warnings:
            self.console.print(shown(f"  warning: {warning}"))
        if record.workspace:
            self.console.print(shown(f"  workspace kept: {record.workspace}", style="dim"))

    def totals(self, records: Sequence[RunRecord], unfinished: int = 0) -> None:
        """``N/M passed``, with ``(K runs not finished: interrupted)`` when ``unfinished`` runs of the
        plan did not finish (Ctrl-C, a results folder that refused a run); then, when some runs ended by an error not of the agent's making, how many
        were not scored and whose doing they were (``note: K of M runs not scored, ended by errors not of
        the agent's making: infrastructure K``, one count per blame, most frequent first);
        then, when some runs' commands ran without bubblewrap, how many and why."""
        passed = sum(r.status == PASS for r in records)
        left = f" ({plural(unfinished, 'run')} not finished: interrupted)" if unfinished else ""
        self.console.print(Text(f"{passed}/{len(records)} passed{left}", style="bold"))
        blames = Counter(str(blame(r)) for r in records if is_infrastructure_error(r))
        if blames:
            who = ", ".join(f"{name} {count}" for name, count in blames.most_common())
            self.console.print(Text(f"note: {blames.total()} of {len(records)} runs not scored, "
                                    f"ended by errors not of the agent's making: {who}", style="yellow"))
        unconfined = [r.sandbox for r in records if r.sandbox is not None and r.sandbox.mode == "none"]
        if unconfined:
            notes = "; ".join(dict.fromkeys(s.note for s in unconfined if s.note))
            why = f" ({notes})" if notes else ""
            self.console.print(Text(f"note: {len(unconfined)} of {len(records)} runs ran without bubblewrap{why}",
                                    style="yellow"))


def plural(count: int, noun: str) -> str:
    """``1 run``, ``0 runs``, ``2 runs``: ``count`` and ``noun`` (that takes an ``s``) agreeing."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def print_case_list(console: Console, cases: Sequence[Case]) -> None:
    """``group/id`` and the description, aligned, one case per line."""
    width = max((len(c.full_id) for c in cases), default=0)
    if cases:  # one print: rich's cost is per call, and suites have thousands of cases
        console.print(shown("\n".join(f"{case.full_id:<{width}}  {case.description}".rstrip() for case in cases)))


def print_sources(console: Console, sourced: Sequence[Sourced], cwd: Path) -> None:
    """``group/id``, its source, ``file:line`` and what it overrides, aligned, one case per line.

    Files under ``cwd`` are shown relative to it, files under the home folder with ``~``.
    """
    id_width = max((len(s.case.full_id) for s in sourced), default=0)
    label_width = max((len(s.source.label) for s in sourced), default=0)
    for item in sourced:
        where = f"{_short(item.case.source, cwd)}:{item.case.line}"
        line = f"{item.case.full_id:<{id_width}}  {item.source.label:<{label_width}}  {where}"
        if item.overrides:
            line += f"  (overrides {', '.join(o.label for o in item.overrides)})"
        console.print(shown(line))


def _short(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd``, else to the home folder (``~/...``), else absolute."""
    absolute = path.resolve()
    for base, prefix in ((cwd.resolve(), ""), (Path.home().resolve(), "~/")):
        if absolute.is_relative_to(base):
            return prefix + absolute.relative_to(base).as_posix()
    return str(absolute)


def print_interrupted(console: Console, left: Sequence[tuple[str, str, str, int]], folder: Path, finished: int) -> None:
    """Say which runs did not finish and how to run just those."""
    cases = ", ".join(dict.fromkeys(case for case, _, _, _ in left))
    console.print(shown(f"interrupted: {plural(len(left), 'run')} did not finish (cases: {cases})"))
    if finished:
        console.print(shown(f"to run just those: tooltrial run <the same arguments> --resume {folder}"))
    else:
        console.print(Text("no run finished: run the same command again"))
