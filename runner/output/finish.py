"""What happens once the run matrix is done: gates, the report, JUnit, the comparison tables, the exit code.

Every run file is already on disk (written as each run ended). ``conclude`` writes
the rest, printing nothing: ``report.json`` in the results folder and the
``--report``, ``--junit``, ``--html`` and ``--summary-md`` files (and the Markdown summary appended to
``$GITHUB_STEP_SUMMARY``). Only then does ``show_ending`` print the pass
count, the tables and the results folder's path (on stderr), or on ``--output
json`` the report on stdout (the path is its ``results`` key): a reader that goes
away (``| head``) can cut the printing short but no result. The tables, the report
(runner.output.report), JUnit, the HTML page and the gates all read the one aggregation of the runs
(runner.scoring.aggregate), as ``schemas/report.schema.json`` pins for the report.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TextIO

from runner.errors import ExitCode
from runner.output.report import report_head, report_text, run_dict, unfinished_list
from runner.output.html import write_html
from runner.output.junit import junit_parts
from runner.output.scan import Runs
from runner.output.markdown import summary_markdown
from runner.output.otel import OtelTarget, each_run_spans, run_spans
from runner.output.otlp import each_json_line, send
from runner.output.store import REPORT_FILE, ResultsWriter, ascii_json, write_replace
from runner.run.engine import RunKey
from runner.scoring.aggregate import Aggregate, aggregate
from runner.scoring.gates import Gate, evaluate, exit_code
from runner.terminal.lines import RunPrinter, print_interrupted
from runner.terminal.statistics import print_statistics
from runner.terminal.tables import print_summary
from runner.text import printable


def utc_now() -> str:
    """The current time, ISO 8601 in UTC to the second (``2025-03-14T09:26:53Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Conclusion:
    """Where the outputs go: ``report``, ``junit``, ``html`` and ``summary_md`` (Markdown) files (None: not
    written), ``step_summary`` a file the Markdown summary is appended to (``$GITHUB_STEP_SUMMARY``),
    ``as_json`` for ``--output json``, the suite's ``min_pass_rate`` gate (None: every run must pass),
    the runs an interruption left ``unfinished`` (case, provider, prompt, run index), the OpenTelemetry
    export (``--otel``, ``--otel-endpoint``; None: none), and for ``--shard`` what the report records of
    the shard (runner.run.shard.shard_summary; None: not sharded)."""

    report: Path | None = None
    junit: Path | None = None
    as_json: bool = False
    min_pass_rate: float | None = None
    unfinished: Sequence[RunKey] = ()
    html: Path | None = None
    summary_md: Path | None = None
    step_summary: Path | None = None
    otel: OtelTarget | None = None
    shard: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Ending:
    """What ``conclude`` made of the finished runs.

    Attributes:
        runs: the finished runs, in plan order: their summaries, and their files to read the records back.
        document: the report (report.json's content) but its ``runs`` (runner.output.report.report_head).
        model, gates: the aggregation (runner.scoring.aggregate) and the gates of the runs.
        report: the file that holds the report's text as report.json has it, None when none could be written.
        failed_writes: one line per output that could not be written (the file and why).
        code: the exit code: the report's ``exit_code`` (runner.scoring.gates.exit_code, or 2 with runs
            unfinished), or 2 when some output could not be written.
    """

    runs: Runs
    document: dict[str, Any]
    model: Aggregate
    gates: Sequence[Gate]
    report: Path | None
    failed_writes: list[str] = field(default_factory=list)

    @property
    def code(self) -> int:
        return ExitCode.INTERRUPTED if self.failed_writes else self.document["exit_code"]

    def text(self) -> Iterator[str]:
        """The report's text (runner.output.store.to_json of the whole document), piece by piece: read
        from ``report`` when written, else made again from the run files."""
        if self.report is None:
            yield from report_text(self.document, self.runs.items())
            return
        with open(self.report, encoding="utf-8") as written:
            while piece := written.read(_PIECE):
                yield piece


_PIECE = 1 << 20  # characters of report.json read back at once


def conclude(runs: Runs, thresholds: Mapping[str, float | None], writer: ResultsWriter, started: str,
             outputs: Conclusion) -> Ending:
    """Write ``report.json`` to the results folder, then the ``--report``, ``--junit``, ``--html``,
    ``--summary-md`` and ``--otel`` files, append the summary to ``step_summary``, then send the traces to
    ``--otel-endpoint``; prints nothing. The report lists the ``unfinished`` runs. A file that cannot be
    written (disk full, folder gone) or a collector that does not take the traces is a line in
    ``Ending.failed_writes``, and the others are still written. ``thresholds`` are the cases' own
    ``min_pass_rate`` by full id (None: the suite's). Figures come from the runs' summaries; each output
    that needs whole records reads them back from the run files, one at a time."""
    model = aggregate(runs.summaries)
    gates = evaluate(model.cells, thresholds, outputs.min_pass_rate)
    meta: dict[str, Any] = {"run_id": writer.run_id, "results": str(writer.path), "started": started, "finished": utc_now()}
    unfinished = unfinished_list(outputs.unfinished)
    if outputs.shard is not None:
        meta["shard"] = dict(outputs.shard)
    head = report_head(model, gates, runs.summaries, exit_code(gates), meta, unfinished)
    failed: list[str] = []
    folder_hint = f" (the run files are there: 'tooltrial report {writer.path}' reads them)"
    written: list[Path] = []
    _write(failed, writer.path / REPORT_FILE, lambda: written.append(writer.write_report(report_text(head, runs.items()))),
           folder_hint)
    ending = Ending(runs, head, model, gates, written[0] if written else None, failed)
    if outputs.report is not None:
        report = outputs.report
        _write(failed, report, lambda: write_replace(report, ending.text()))
    if outputs.junit is not None:
        junit = outputs.junit
        _write(failed, junit, lambda: write_replace(junit, junit_parts(model, gates, runs.records(), started)))
    if outputs.html is not None:
        html = outputs.html
        _write(failed, html, lambda: write_html(html, head, runs.summaries, map(run_dict, runs.records())))
    if outputs.summary_md or outputs.step_summary:
        markdown = summary_markdown(head, map(run_dict, runs.records()))
        for target, write_md in ((outputs.summary_md, write_replace), (outputs.step_summary, append_text)):
            if target is not None:
                _write(failed, target, lambda path=target, write=write_md: write(path, markdown))
    otel = outputs.otel
    if otel is not None:  # after report.json, a run at a time; held only when both the file and the collector want them
        both = otel.file is not None and otel.endpoint is not None
        traces = run_spans(runs.records(), otel) if both else None
        if otel.file is not None:
            lines = otel.file
            _write(failed, lines, lambda: write_replace(lines, each_json_line(traces or each_run_spans(runs.records(), otel))))
        if otel.endpoint is not None:
            refused = send(traces or each_run_spans(runs.records(), otel), otel.endpoint)
            failed.extend([refused] if refused else [])
    return ending


def _write(failed: list[str], path: Path, write: Callable[[], object], hint: str = "") -> None:
    """Call ``write``; when it raises OSError, add ``cannot write PATH: why`` (and ``hint``) to ``failed``."""
    try:
        write()
    except OSError as e:
        failed.append(f"cannot write {path}: {e.strerror or e}{hint}")


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, creating it: a file others write to as well, such as
    GitHub's ``$GITHUB_STEP_SUMMARY``, so not replaced. Raises OSError."""
    with open(path, "a", encoding="utf-8") as out:
        out.write(text)


def show_ending(
    ending: Ending,
    printer: RunPrinter,
    as_json: bool,
    notes: Sequence[str] = (),
    errors: Sequence[str] = (),
    stdout: TextIO | None = None,
    again: str | None = None,
) -> None:
    """Print what follows the run lines, once every result is written: the pass count and the
    summary tables, ``notes`` (lines for stderr, e.g. where ``--record`` wrote), the comparison,
    the report on stdout (``as_json``) or the results folder's path, each of ``errors`` as
    ``error: ...`` on stderr, and what to do about the unfinished runs (``again``: the command line that
    resumes them, see print_interrupted). Flushes stdout at the end.

    Raises BrokenPipeError when the output is closed (``| head``).
    """
    out = stdout or sys.stdout
    console, records, document = printer.console, ending.runs.summaries, ending.document
    printer.totals(records, len(document.get("unfinished") or []))
    print_summary(console, ending.model)
    for note in notes:
        print(printable(note), file=sys.stderr)
    print_statistics(console, ending.model, ending.gates)
    if as_json:
        for piece in ending.text():  # ASCII, so any stdout carries it; not encoded again
            print(ascii_json(piece), end="", file=out)
    else:
        print(f"results: {printable(document['results'])}", file=sys.stderr)
    for error in [*errors, *ending.failed_writes]:
        print(f"error: {printable(error)}", file=sys.stderr)
    unfinished = document.get("unfinished") or []
    if unfinished:
        left = [(u["case"], u["provider"], u["prompt"], u["run"]) for u in unfinished]
        print_interrupted(console, left, Path(document["results"]), len(records), again)
    out.flush()
