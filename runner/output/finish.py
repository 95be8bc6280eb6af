"""What happens once the runs are done, for every command that ends with them (``run``, ``report``, ``merge``).

``tooltrial run`` has every run file on disk already (written as each run ended); ``conclude`` writes
``report.json`` to the results folder and makes the ``Ending``; ``report`` and ``merge`` make it from a
folder on disk (runner.cli.report). Then ``finish``, the one path all of them end on, writes each output
asked for (the table of formats, runner.output.formats: ``--report``, ``--junit``, ``--html``,
``--summary-md``, ``$GITHUB_STEP_SUMMARY``, ``--otel``...), a file that cannot be written a line and the
exit code 2, and only then prints the ending: the pass count, the tables and the results folder's path
(on stderr), or on ``--output json`` the document on stdout (runner.output.store.to_json, as ASCII). A
reader that goes away (``| head``) can cut the printing short but no result. The tables, the report
(runner.output.report), every output and the gates all read the one aggregation of the runs
(runner.scoring.aggregate), as ``schemas/report.schema.json`` pins for the report.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from runner.errors import ExitCode
from runner.output.formats import by_name, load
from runner.output.report import report_head, report_text, unfinished_list
from runner.output.scan import Runs
from runner.output.store import REPORT_FILE, ResultsWriter, ascii_json, to_json
from runner.scoring.aggregate import Aggregate, aggregate
from runner.scoring.gates import Gate, evaluate, exit_code
from runner.suite.engine import RunKey
from runner.terminal.judges import print_judges
from runner.terminal.lines import RunPrinter, print_interrupted
from runner.terminal.statistics import print_sequential, print_statistics
from runner.terminal.tables import print_summary
from runner.text import printable


def utc_now() -> str:
    """The current time, ISO 8601 in UTC to the second (``2025-03-14T09:26:53Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Conclusion:
    """What ``run`` writes to its results folder's report: the suite's ``min_pass_rate`` gate (None: every
    run must pass), the runs an interruption left ``unfinished`` (case, provider, prompt, run index), for
    ``--shard`` what the report records of the shard (runner.suite.shard.shard_summary; None: not sharded),
    each arm's provider label -> the model string it sends (``models``, for the outputs that say so), and with
    ``--until-decided`` the report's ``sequential`` (runner.suite.rounds; None without)."""

    min_pass_rate: float | None = None
    unfinished: Sequence[RunKey] = ()
    shard: Mapping[str, Any] | None = None
    models: Mapping[str, str] = field(default_factory=dict)
    sequential: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Ending:
    """The finished runs, as every output and the printing read them.

    Attributes:
        runs: the finished runs, in plan order: their summaries, and their files to read the records back.
        document: the report (report.json's content) but its ``runs`` (runner.output.report.report_head).
        model, gates: the aggregation (runner.scoring.aggregate) and the gates of the runs.
        report: the file that holds the report's text as report.json has it, None when none could be written
            (or none was: ``report`` and ``merge`` make it again from the run files).
        failed_writes: one line per output that could not be written (the file and why).
        change: for ``report A B``, the regression document (runner.output.regressiondoc.regression_document) of
            ``runs``, the second folder's, against the first; None otherwise.
        models: each arm's provider label -> the model string it sends, as far as the command knows.
        gated: whether the exit code is the gates' (``run``, ``merge``) or 0 (``report``: its gates are the
            run's to apply).
    """

    runs: Runs
    document: dict[str, Any]
    model: Aggregate
    gates: Sequence[Gate]
    report: Path | None = None
    failed_writes: list[str] = field(default_factory=list)
    change: dict[str, Any] | None = None
    models: Mapping[str, str] = field(default_factory=dict)
    gated: bool = True
    _made: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def code(self) -> int:
        """The exit code: 2 when some output could not be written, else the report's ``exit_code``
        (runner.scoring.gates.exit_code, or 2 with runs unfinished) when ``gated``, else 0."""
        if self.failed_writes:
            return ExitCode.INTERRUPTED
        return int(self.document["exit_code"]) if self.gated else ExitCode.OK

    def text(self) -> Iterator[str]:
        """The JSON text of the ending (runner.output.store.to_json), piece by piece: the regression document
        for ``report A B``, else the whole report, read from ``report`` when written, else made again from
        the run files."""
        if self.change is not None:
            yield to_json(self.change)
        elif self.report is None:
            yield from report_text(self.document, self.runs.items())
        else:
            with open(self.report, encoding="utf-8") as written:
                while piece := written.read(_PIECE):
                    yield piece

    def items(self, name: str) -> Iterator[str]:
        """Each run's piece of the streamed output ``name`` (runner.output.formats), in plan order: as the
        run made it when it was saved, else made now from its record read back."""
        item = by_name(name).item
        assert item is not None, f"{name} is written whole, not a run at a time"
        return self.runs.items(name, load(item))

    def once(self, key: str, make: Callable[[], Any]) -> Any:
        """``make()``, made once for this ending: a value several outputs write alike (the Markdown summary,
        for ``--summary-md`` and ``$GITHUB_STEP_SUMMARY``)."""
        if key not in self._made:
            self._made[key] = make()
        return self._made[key]


_PIECE = 1 << 20  # characters of report.json read back at once


class NotWritten(Exception):
    """An output a writer could not write, for reasons other than a file's OSError (a collector that refused
    the traces): ``lines``, one per failure, as the ending shows them after ``error:``."""

    def __init__(self, *lines: str) -> None:
        super().__init__(*lines)
        self.lines = list(lines)


def conclude(runs: Runs, thresholds: Mapping[str, float | None], writer: ResultsWriter, started: str,
             conclusion: Conclusion) -> Ending:
    """Write ``report.json`` to the results folder, listing the ``unfinished`` runs, and return the Ending
    ``finish`` writes the outputs of; prints nothing. A report.json that cannot be written (disk full,
    folder gone) is a line in ``Ending.failed_writes``. ``thresholds`` are the cases' own
    ``min_pass_rate`` by full id (None: the suite's). Figures come from the runs' summaries; the report's
    ``runs`` are the items the runs made as they were saved (runner.output.spool)."""
    model = aggregate(runs.summaries)
    gates = evaluate(model.cells, thresholds, conclusion.min_pass_rate)
    meta: dict[str, Any] = {"run_id": writer.run_id, "results": str(writer.path), "started": started, "finished": utc_now()}
    unfinished = unfinished_list(conclusion.unfinished)
    if conclusion.shard is not None:
        meta["shard"] = dict(conclusion.shard)
    if conclusion.sequential is not None:
        meta["sequential"] = dict(conclusion.sequential)
    head = report_head(model, gates, runs.summaries, exit_code(gates), meta, unfinished)
    failed: list[str] = []
    try:
        written: Path | None = writer.write_report(report_text(head, runs.items()))
    except OSError as e:
        written = None
        failed.append(f"{cannot_write(writer.path / REPORT_FILE, e)} (the run files are there: "
                      f"'tooltrial report {writer.path}' reads them)")
    return Ending(runs, head, model, gates, written, failed, models=conclusion.models)


def cannot_write(target: object, error: OSError) -> str:
    """The line that says ``target`` could not be written, and why."""
    return f"cannot write {target}: {error.strerror or error}"


@dataclass(frozen=True)
class View:
    """How ``finish`` prints the ending.

    Attributes:
        printer: prints the pass count and the tables (on stderr for ``--output json``); None prints neither
            (``report --output json``).
        as_json: the ending's JSON on stdout (``Ending.text``) instead of the results folder's path.
        where: print ``results: FOLDER`` on stderr (``run``: where its results went).
        notes: lines for stderr after the tables (where ``--record`` wrote...).
        errors: lines printed as ``error: ...`` before the outputs' own.
        again: the command line that resumes the unfinished runs (runner.terminal.lines.print_interrupted).
        stdout: where the JSON goes (default sys.stdout).
    """

    printer: RunPrinter | None
    as_json: bool = False
    where: bool = False
    notes: Sequence[str] = ()
    errors: Sequence[str] = ()
    again: str | None = None
    stdout: TextIO | None = None


def finish(ending: Ending, outputs: Mapping[str, Any], view: View) -> int:
    """Write each output in ``outputs`` (format name -> its target, in table order: runner.output.formats),
    then print the ending as ``view`` says; return the exit code (``Ending.code``). A writer's OSError is
    the line ``cannot write TARGET: why`` in ``Ending.failed_writes`` (as is a NotWritten's lines), and the
    other outputs are still written. Raises BrokenPipeError when the output is closed (``| head``), once
    every output is written."""
    for name, target in outputs.items():
        try:
            load(by_name(name).writer)(target, ending)
        except OSError as e:
            ending.failed_writes.append(cannot_write(target, e))
        except NotWritten as e:
            ending.failed_writes.extend(e.lines)
    show_ending(ending, view)
    return ending.code


def show_ending(ending: Ending, view: View) -> None:
    """Print what follows the run lines, once every result is written: the pass count and the summary
    tables (none for ``report A B``, whose regression view its command prints), the notes, the comparison,
    the ending's JSON on stdout (``as_json``) or the results folder's path, each error and failed write as
    ``error: ...`` on stderr, and what to do about the unfinished runs. Flushes stdout at the end.

    Raises BrokenPipeError when the output is closed (``| head``).
    """
    out, document, records = view.stdout or sys.stdout, ending.document, ending.runs.summaries
    printer = view.printer if ending.change is None else None
    unfinished = document.get("unfinished") or []
    if printer is not None:
        printer.totals(records, len(unfinished))
        print_summary(printer.console, ending.model)
    for note in view.notes:
        print(printable(note), file=sys.stderr)
    if printer is not None:
        print_statistics(printer.console, ending.model, ending.gates)
        print_sequential(printer.console, document.get("sequential"))
        print_judges(printer.console, document.get("judges"))
    if view.as_json:
        for piece in ending.text():  # ASCII, so any stdout carries it, lone surrogates included; not encoded again
            print(ascii_json(piece), end="", file=out)
    elif view.where:
        print(f"results: {printable(document['results'])}", file=sys.stderr)
    for error in [*view.errors, *ending.failed_writes]:
        print(f"error: {printable(error)}", file=sys.stderr)
    if printer is not None and unfinished:
        left = [(u["case"], u["provider"], u["prompt"], u["run"]) for u in unfinished]
        print_interrupted(printer.console, left, Path(document["results"]), len(records), view.again)
    out.flush()
