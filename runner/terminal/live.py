"""The live view of ``run --live``: each model request and tool call printed as it happens.

With one run at a time (``-j 1``, or a single run) a run's events are indented under a line that
names it; with several at once their lines interleave, so each starts with its run's label
(``[fix/fix-failing-test #2]``, the arm too when several run). Everything shown is escaped onto one line:
arguments, results and names are the model's or a tool's.
"""

from __future__ import annotations

import json

from rich.console import Console

from runner.run.events import CallDone, Event, RequestDone, RunRef, RunStarted
from runner.terminal.console import shown
from runner.text import printable

ARGUMENTS_WIDTH = 80  # characters of a call's arguments shown
RESULT_WIDTH = 80  # characters of an error result's first line shown


class LiveView:
    """A runner.run.events Listener that prints on ``console``; ``labelled`` starts every line with
    its run's label (for runs that go at once), else a run's lines are indented under its name.
    A run's label is its case, ``#N`` (the run number) with ``label_runs`` (cases that repeat), and its arm
    with ``label_arms`` (several arms)."""

    def __init__(self, console: Console, labelled: bool, label_runs: bool = False, label_arms: bool = False) -> None:
        self.console = console
        self.labelled = labelled
        self.label_runs = label_runs
        self.label_arms = label_arms

    def __call__(self, run: RunRef, event: Event) -> None:
        name = run.case + (f" #{run.run}" if self.label_runs else "") + (f" · {run.arm}" if self.label_arms else "")
        if isinstance(event, RunStarted):
            text = f"[{name}] started" if self.labelled else f"▶ {name}"
        else:
            text = f"[{name}] {describe(event)}" if self.labelled else f"  {describe(event)}"
        self.console.print(shown(text, style="dim"))


def describe(event: RequestDone | CallDone) -> str:
    """One event on one line: ``model request 2 (turn 1): tool_calls, 1 call, 812+64 tokens, 1.20s``,
    or ``-> bash {"command":"make"}: ok, 0.31s`` / ``-> bash {...}: error: <first line>, 0.02s``, then
    `` [fault KIND]`` for a call that got an injected fault."""
    if isinstance(event, RequestDone):
        tokens = ("tokens not reported" if event.prompt_tokens is None and event.completion_tokens is None
                  else f"{_count(event.prompt_tokens)}+{_count(event.completion_tokens)} tokens")
        calls = f"{event.calls} call" + ("" if event.calls == 1 else "s")
        return (f"model request {event.index + 1} (turn {event.turn + 1}): {event.finish_reason or 'no finish reason'}, "
                f"{calls}, {tokens}, {event.latency:.2f}s")
    arguments = "(arguments did not parse)" if event.arguments is None else _clip(
        json.dumps(event.arguments, ensure_ascii=False, separators=(",", ":"), default=str), ARGUMENTS_WIDTH)
    if event.status not in ("executed", "recovered"):
        how = f"{event.status}: {_first_line(event.result)}"
    elif event.is_error:
        how = f"error: {_first_line(event.result)}"
    else:
        how = "ok"
    recovered = " (written as text)" if event.status == "recovered" else ""
    fault = f" [fault {event.fault}]" if event.fault else ""
    return f"-> {_one_line(event.name)}{recovered} {_one_line(arguments)}: {how}, {event.duration:.2f}s{fault}"


def _count(tokens: int | None) -> str:
    return "?" if tokens is None else str(tokens)


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return _one_line(_clip(lines[0] if lines else "", RESULT_WIDTH))


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _one_line(text: str) -> str:
    """``text`` escaped (runner.text.printable) with its line breaks and tabs written as ``\\n`` and ``\\t``."""
    return printable(text).replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")
