"""The run lines: ``PASS``/``FAIL``/``ERROR`` per run, failed checks indented, a pass count; and
the case lists of ``tooltrial list``. Untrusted text goes through runner.terminal.console.shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console
from rich.text import Text

from runner.run.record import ERROR, FAIL, PASS, CommandRun, RunRecord
from runner.scoring.gates import blame, is_infrastructure_error
from runner.scoring.summary import RunSummary, retried_count
from runner.spec.case import Case
from runner.spec.discover import Sourced
from runner.terminal.console import shown
from runner.text import first_line, plural

_STYLES = {PASS: "bold green", FAIL: "bold red", ERROR: "bold yellow"}
OUTPUT_LINES = 5  # lines of a failed setup or verify command's output under its run's line
TRUNCATED_MARK = "final reply cut off at the output limit (finish reason length): judged as it stood"


class RunPrinter:
    """Prints ``PASS group/id``, ``FAIL group/id`` or ``ERROR group/id: cause``, then under a FAIL or
    ERROR one indented line per failed check (but the one that is the cause) and the first lines of
    each failed setup or verify command's output; finally ``N/M passed``.

    ``label_arms`` appends ``[provider · prompt]`` when several arms run;
    ``label_runs`` appends ``#run`` when cases repeat; ``quiet`` (``run -q``) leaves passing runs out.
    """

    def __init__(self, console: Console, label_arms: bool = False, label_runs: bool = False,
                 quiet: bool = False) -> None:
        self.console = console
        self.label_arms = label_arms
        self.label_runs = label_runs
        self.quiet = quiet

    def record(self, record: RunRecord) -> None:
        if self.quiet and record.status == PASS:
            return
        line = Text()
        line.append(record.status.upper(), style=_STYLES[record.status])
        line.append(shown(f" {record.case}"))
        if self.label_runs:
            line.append(f" #{record.run}")
        if self.label_arms:
            line.append(shown(f" [{record.arm}]", style="dim"))
        if record.status == ERROR:
            line.append(shown(f": {first_line(record.cause, 'unknown error')}"))
        self.console.print(line)
        if record.status != PASS:  # an error's checks that did run and fail too (a script that ran out)
            failed = [c for c in record.commands if c.failed]
            for command in failed:
                if command.phase == "setup":
                    self._command_output(command)
            verify = [c for c in failed if c.phase == "verify"]  # in the order of their checks
            cause = first_line(record.cause, "")
            for check in record.failed_checks:
                if check.message != cause:
                    self.console.print(shown(f"  {check.message}"))
                if check.check.endswith("verify") and verify:  # expect.verify, or a turn's
                    self._command_output(verify.pop(0))
            for command in verify:  # a verify whose check a stop left out
                self._command_output(command)
        if record.truncated_reply:
            self.console.print(shown(f"  {TRUNCATED_MARK}"))
        for warning in record.warnings:
            self.console.print(shown(f"  warning: {warning}"))
        if record.workspace:
            self.console.print(shown(f"  workspace kept: {record.workspace}", style="dim"))

    def _command_output(self, command: CommandRun) -> None:
        """The first OUTPUT_LINES lines a failed setup or verify command printed (stdout, then
        stderr), escaped, and how many more the run record keeps; nothing for a silent one."""
        lines = (command.stdout + ("\n" if command.stdout and not command.stdout.endswith("\n") else "")
                 + command.stderr).splitlines()
        if not lines:
            return
        shown_lines = "\n".join(f"    | {text}" for text in lines[:OUTPUT_LINES])
        self.console.print(shown(shown_lines, style="dim"))
        if len(lines) > OUTPUT_LINES:
            more = plural(len(lines) - OUTPUT_LINES, "more line")
            self.console.print(shown(f"    ({more} in the run record's commands)", style="dim"))

    def totals(self, records: Sequence[RunSummary], unfinished: int = 0) -> None:
        """``N/M passed``, with ``(K runs not finished: interrupted)`` when ``unfinished`` runs of the
        plan did not finish (Ctrl-C, a results folder that refused a run); then how many runs were run again by
        ``--retry-errors`` (``K runs retried after ...``), when some were; then, when some runs ended by an error not of the agent's making, how many
        were not scored and whose doing they were (``note: K of M runs not scored, ended by errors not of
        the agent's making: infrastructure K``, one count per blame, most frequent first);
        then, when some runs' commands ran without bubblewrap, how many and why."""
        passed = sum(r.status == PASS for r in records)
        left = f" ({plural(unfinished, 'run')} not finished: interrupted)" if unfinished else ""
        self.console.print(Text(f"{passed}/{len(records)} passed{left}", style="bold"))
        retried = retried_count(records)
        if retried:
            self.console.print(Text(f"{plural(retried, 'run')} retried after an error not of the agent's making "
                                    "(--retry-errors; each keeps its earlier attempts)"))
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


def print_case_list(console: Console, cases: Sequence[Case], notes: Mapping[str, str] | None = None) -> None:
    """``group/id`` and the description, aligned, one case per line; a case's note (``notes`` by full id,
    e.g. the runs of it a shard holds) between them."""
    width = max((len(c.full_id) for c in cases), default=0)
    notes = notes or {}
    if cases:  # one print: rich's cost is per call, and suites have thousands of cases
        console.print(shown("\n".join(f"{case.full_id:<{width}}  {' '.join(filter(None, [notes.get(case.full_id), case.description]))}".rstrip()
                                      for case in cases)))


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


_CASES_NAMED = 10  # cases the interruption's line names; report.json's ``unfinished`` lists every run


def print_interrupted(console: Console, left: Sequence[tuple[str, str, str, int]], folder: Path, finished: int,
                      again: str | None = None) -> None:
    """Say which runs did not finish (naming the first ``_CASES_NAMED`` of their cases) and how to run just those:
    ``again``, the command line that resumes from ``folder``, else ``tooltrial run`` with the same arguments."""
    named = list(dict.fromkeys(case for case, _, _, _ in left))
    more = f" and {len(named) - _CASES_NAMED} more" if len(named) > _CASES_NAMED else ""
    cases = ", ".join(named[:_CASES_NAMED]) + more
    console.print(shown(f"interrupted: {plural(len(left), 'run')} did not finish (cases: {cases})"))
    if finished:
        console.print(shown(f"to run just those: {again or f'tooltrial run <the same arguments> --resume {folder}'}"))
    else:
        console.print(Text("no run finished: run the same command again"))
