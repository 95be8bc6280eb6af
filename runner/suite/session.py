"""``tooltrial run``'s matrix, live: Ctrl-C, the progress bar, each run saved as it ends, ``--resume``.

Every finished run is written to the results folder the moment it ends (on the
saving thread, runner.suite.saving; before its lines are printed, which may wait for
plan order), numbered by its place in the plan, so a second Ctrl-C, which exits at
once once the runs handed to that thread are saved, loses none and the files sort
in plan order for any ``-j``. A results folder that refuses a run (disk full)
stops the suite as Ctrl-C does, with that run unfinished. ``--resume`` takes the
runs an earlier results folder already holds for this plan, copies them into the
new folder and runs the rest; with ``--retry-errors`` it runs again, in their places, those that ended
in an error not of the agent's making, each new record keeping the earlier attempts.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from runner.output.replay import Recorder
from runner.output.spool import ItemSpool
from runner.output.store import ResultsWriter
from runner.run.events import Event, Listener, RunRef
from runner.run.options import Arm
from runner.run.record import EarlierAttempt, RunRecord
from runner.scoring.gates import infrastructure_error
from runner.scoring.summary import RunSummary, summarize
from runner.spec.case import Case
from runner.suite.engine import Interrupted, RunKey, plan_keys, run_key, run_matrix
from runner.suite.interrupt import CtrlC
from runner.suite.options import SuiteOptions
from runner.suite.rounds import Stopping, run_rounds
from runner.suite.saving import drain
from runner.terminal.console import shown
from runner.terminal.lines import RunPrinter
from runner.terminal.progress import SuiteProgress
from runner.text import plural

Piece = Callable[[RunRecord, dict[str, Any]], str]  # a streamed output's piece of one run, from the record and its dict
_DRAIN_SECONDS = 5.0  # the longest the second Ctrl-C waits for finished runs to be saved


@dataclass(frozen=True)
class LiveRun:
    """What ``run_live`` did.

    Attributes:
        records: the summary (runner.scoring.summary) of each run finished and saved, in plan order;
            the whole records are in the results folder, and only there.
        left: the key (runner.suite.engine.run_key) of each planned run not finished or not saved, in plan order.
        spool: each saved run's pieces of the streamed outputs, its report item among them (runner.output.spool,
            keyed ``(output name, run key)``), made as it was saved.
        refused: why the results folder refused a run (``cannot write to the results folder DIR: No
            space left on device``), None when it took every one; the suite stopped there.
        warnings: lines about what else could not be saved (a run ``--record`` could not write).
        sequential: with ``--until-decided``, report.json's ``sequential`` (runner.suite.rounds); else None.
    """

    records: list[RunSummary]
    left: list[RunKey]
    spool: ItemSpool
    refused: str | None = None
    warnings: list[str] = field(default_factory=list)
    sequential: dict[str, Any] | None = None


class _Saver:
    """Saves each finished run to the results folder (its streamed pieces to ``spool``), then to ``--record``, as
    ``run_matrix``'s ``on_finish``.

    A run the results folder refuses (disk full, folder removed or made read-only) is kept in
    ``refused`` and stops the suite as Ctrl-C does: no run starts after it. It is not finished:
    ``--resume`` runs it again. A run of ``earlier`` (``--retry-errors``: run key -> the attempts its new record
    keeps, oldest first) is given them before it is saved.
    """

    def __init__(self, writer: ResultsWriter, recorder: Recorder | None, number: dict[RunKey, int],
                 cancel: threading.Event, pieces: Mapping[str, Piece],
                 earlier: Mapping[RunKey, list[EarlierAttempt]]) -> None:
        self.writer, self.recorder, self.number, self.cancel, self.pieces = writer, recorder, number, cancel, pieces
        self.earlier = earlier
        self.spool = ItemSpool()
        self.refused: set[RunKey] = set()
        self.reason: str | None = None
        self.warnings: list[str] = []

    def __call__(self, record: RunRecord) -> None:
        key = run_key(record)
        if key in self.earlier:
            record.earlier = list(self.earlier[key])
        data = record.to_dict()  # once, for the run file and each streamed piece
        # each piece made before the write: a record one fails on becomes its internal error
        made = {name: make(record, data) for name, make in self.pieces.items()}
        try:
            self.writer.write_run(record, self.number[key], data)
        except OSError as e:
            self.refused.add(key)
            self.reason = self.reason or f"cannot write to the results folder {self.writer.path}: {e.strerror or e}"
            self.cancel.set()
            return
        for name, piece in made.items():
            self.spool.add((name, key), piece)
        if self.recorder is not None:
            try:
                self.recorder.record(record)
            except Exception as e:  # noqa: BLE001 (the run is saved; only its recording is lost, and said so)
                self.warnings.append(f"--record left out {record.case} run {record.run}: {type(e).__name__}: {e}")


class _Guarded:
    """A Listener whose closed output (``| head``) stops the suite as Ctrl-C does, rather than
    ending the run it was telling of in an internal error."""

    def __init__(self, listener: Listener, cancel: threading.Event) -> None:
        self.listener, self.cancel = listener, cancel

    def __call__(self, run: RunRef, event: Event) -> None:
        try:
            self.listener(run, event)
        except BrokenPipeError:
            self.cancel.set()


def run_live(
    cases: Sequence[Case],
    arms: Sequence[Arm],
    options: SuiteOptions,
    repeats: int,
    printer: RunPrinter,
    writer: ResultsWriter,
    pieces: Mapping[str, Piece],
    earlier: Sequence[RunRecord] = (),
    recorder: Recorder | None = None,
    retry_errors: bool = False,
    until: Stopping | None = None,
) -> LiveRun:
    """Run the matrix under the Ctrl-C handler.

    Each run is saved to ``writer`` and ``recorder`` (``--record``) as it ends, and the piece of each
    streamed output in ``pieces`` (output name -> the function that makes it from the record and its dict:
    runner.output.formats.streamed) made then and spooled.
    ``earlier`` are the records of the folder given to ``--resume``: those this plan
    has are saved likewise and not run again, but with ``retry_errors`` those that ended in an error not of the
    agent's making (runner.scoring.gates.is_infrastructure_error: infrastructure, case data or internal), which
    run again, each new record keeping the earlier attempts (RunRecord.earlier). On a terminal each run's lines
    appear as it ends, under a progress bar; elsewhere in plan order, so the output
    is the same for any ``-j``. A run that could not be saved is not shown. Only each run's summary
    stays in memory once it is saved and shown. ``options.run.listener``
    (``--live``) is told what each run does as it happens; a closed output stops the suite. With ``until``
    (``--until-decided``) the runs go in rounds until each comparison is decided (runner.suite.rounds), each
    reused run saved as its round comes.
    """
    keys = plan_keys(cases, arms, repeats, options.shard)
    run = options.run
    if run.listener is not None:
        run = dataclasses.replace(run, listener=_Guarded(run.listener, run.cancel))
        options = dataclasses.replace(options, run=run)
    number = {key: place for place, key in enumerate(keys, start=1)}
    planned = [record for record in earlier if run_key(record) in number]
    again = {run_key(r): [*r.earlier, EarlierAttempt.of(r)] for r in planned
             if retry_errors and infrastructure_error(r.status, r.error_kind)}
    reused = [record for record in planned if run_key(record) not in again]
    save = _Saver(writer, recorder, number, run.cancel, pieces, again)
    for record in reused if until is None else ():
        save(record)
    if earlier:
        other = "" if planned else (f": none of the {plural(len(earlier), 'run')} that folder holds is of this plan "
                                    "(other cases, providers, prompts or --runs?)")
        retrying = (f"; retrying {plural(len(again), 'run')} that ended in an error not of the agent's making"
                    if retry_errors and planned else "")
        printer.console.print(Text(f"resuming: {len(reused)} of {len(keys)} runs are done already{retrying}{other}"))
    ordered = not printer.console.is_terminal
    def second_press() -> None:  # the process ends at once: the runs that finished are saved first
        run.sandbox.kill_all()
        drain(_DRAIN_SECONDS)

    with CtrlC(run.cancel, second_press), SuiteProgress(printer.console, len(keys) - len(reused)) as bar:

        def on_record(record: RunRecord) -> None:
            if run_key(record) in save.refused:
                return
            try:
                printer.record(record)
                bar.advance(record)
            except BrokenPipeError:  # the reader went away (``| head``): stop as on Ctrl-C, printing nothing more
                run.cancel.set()
            except Exception as e:  # noqa: BLE001 (the run is saved: say that it could not be shown, and go on)
                printer.console.print(shown(f"ERROR {record.case}: cannot show this run: {type(e).__name__}: {e}"))

        def play(active: Sequence[Arm], only: int | None = None) -> list[RunSummary]:
            if until is None:
                return run_matrix(cases, active, options, repeats, on_record, ordered, save, reused, summarize)
            mine = set(plan_keys(cases, active, repeats, options.shard, only))
            done = [record for record in reused if run_key(record) in mine]
            for record in done:
                save(record)
            return run_matrix(cases, active, options, repeats, on_record, ordered, save, done, summarize, only)

        section = None
        if until is not None:
            rounds = run_rounds(play, cases, arms, until)
            records = sorted(rounds.records, key=lambda r: number[run_key(r)])  # plan order, as without rounds
            left, section = rounds.left, rounds.section
        else:
            try:
                records, left = play(arms), []
            except Interrupted as e:
                records, left = e.records, e.left
    unsaved = set(left) | save.refused
    return LiveRun([r for r in records if run_key(r) not in save.refused], [k for k in keys if k in unsaved],
                   save.spool, save.reason, save.warnings, section)
