"""The live progress bar of a suite, on a terminal only: done/total, pass/fail/error counts, elapsed."""

from __future__ import annotations

from types import TracebackType
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from runner.run.record import ERROR, FAIL, PASS, RunRecord


class SuiteProgress:
    """A transient rich progress bar over ``total`` runs, drawn only when ``console`` is a terminal.

    Lines printed on ``console`` while it is shown appear above it. ``advance`` counts one
    finished run by its status. Elsewhere (pipes, files, CI logs) every method does nothing.
    """

    def __init__(self, console: Console, total: int) -> None:
        self.counts = {PASS: 0, FAIL: 0, ERROR: 0}
        self._progress: Progress | None = None
        if console.is_terminal:
            self._progress = Progress(
                TextColumn("[bold]running"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._task = self._progress.add_task("runs", total=total, counts=self._counts())

    def _counts(self) -> str:
        return (
            f"[green]{self.counts[PASS]} pass[/] [red]{self.counts[FAIL]} fail[/] "
            f"[yellow]{self.counts[ERROR]} error[/]"
        )

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, record: RunRecord) -> None:
        self.counts[record.status] += 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, counts=self._counts())
