"""``tooltrial run``'s matrix, live: Ctrl-C, the progress bar, each run saved as it ends, ``--resume``.

Every finished run is written to the results folder the moment it ends (before
its lines are printed, which may wait for plan order), numbered by its place in
the plan, so a second Ctrl-C, which exits at once, loses none and the files sort
in plan order for any ``-j``. ``--resume`` takes the runs an earlier results folder
already holds for this plan, copies them into the new folder and runs the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.console import Console
from rich.text import Text

from runner.cases import Case
from runner.engine import Arm, Interrupted, RunKey, RunOptions, plan_keys, run_key, run_matrix
from runner.interrupt import CtrlC
from runner.progress import SuiteProgress
from runner.record import RunRecord
from runner.recording import Recorder
from runner.render import RunPrinter
from runner.results import ResultsWriter


def run_live(
    cases: Sequence[Case],
    arms: Sequence[Arm],
    options: RunOptions,
    repeats: int,
    printer: RunPrinter,
    writer: ResultsWriter,
    earlier: Sequence[RunRecord] = (),
    recorder: Recorder | None = None,
) -> tuple[list[RunRecord], list[RunKey]]:
    """Run the matrix under the Ctrl-C handler; ``(records in plan order, keys of the runs left)``.

    Each run is saved to ``writer`` and ``recorder`` (``--record``) as it ends.
    ``earlier`` are the records of the folder given to ``--resume``: those this plan
    has are saved likewise and not run again. On a terminal each run's lines
    appear as it ends, under a progress bar; elsewhere in plan order, so the output
    is the same for any ``-j``.
    """
    keys = plan_keys(cases, arms, repeats)
    number = {key: place for place, key in enumerate(keys, start=1)}
    reused = [record for record in earlier if run_key(record) in number]

    def save(record: RunRecord) -> None:
        writer.write_run(record, number[run_key(record)])
        if recorder is not None:
            recorder.record(record)

    for record in reused:
        save(record)
    if earlier:
        printer.console.print(Text(f"resuming: {len(reused)} of {len(keys)} runs are done already"))
    ordered = not printer.console.is_terminal
    with CtrlC(options.cancel, options.sandbox.kill_all), SuiteProgress(printer.console, len(keys) - len(reused)) as bar:

        def on_record(record: RunRecord) -> None:
            try:
                printer.record(record)
                bar.advance(record)
            except BrokenPipeError:  # the reader went away (``| head``): stop as on Ctrl-C, printing nothing more
                options.cancel.set()

        try:
            return run_matrix(cases, arms, options, repeats, on_record, ordered, save, reused), []
        except Interrupted as e:
            return e.records, e.left


def print_interrupted(console: Console, left: Sequence[RunKey], folder: Path, finished: int) -> None:
    """Say which runs did not finish and how to run just those."""
    cases = ", ".join(dict.fromkeys(case for case, _, _, _ in left))
    console.print(Text(f"interrupted: {len(left)} runs did not finish (cases: {cases})"))
    if finished:
        console.print(Text(f"to run just those: tooltrial run <the same arguments> --resume {folder}"))
    else:
        console.print(Text("no run finished: run the same command again"))
