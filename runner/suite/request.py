"""One invocation of the matrix, typed: what ``tooltrial run`` asks for once its names are resolved and its
mistakes refused (``SuiteRequest``), and the one entry point that runs it (``run_suite``): the results folder
made, the runs of ``--resume`` taken, the matrix live (runner.suite.session), then report.json and every
output written and the ending printed (runner.output.finish).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import UserError, silence_output
from runner.output.finish import Conclusion, View, conclude, finish, utc_now
from runner.output.formats import streamed
from runner.output.load import resumed_records
from runner.output.replay import Recorder
from runner.output.report import cache_totals
from runner.output.scan import saved_runs
from runner.output.store import ResultsWriter
from runner.run.options import Arm
from runner.run.provenance import provenance
from runner.run.record import RunRecord
from runner.scoring.inputs import input_changes
from runner.scoring.summary import summarize
from runner.spec.case import Case
from runner.suite.options import SuiteOptions
from runner.suite.rounds import Stopping
from runner.suite.session import LiveRun, run_live
from runner.terminal.lines import RunPrinter
from runner.text import plural


@dataclass(frozen=True)
class SuiteRequest:
    """What to run, with which arms, how, and where to write it: everything ``run_suite`` needs, resolved.

    Attributes:
        cases: the selected cases, each with its agent (``--agent``) applied.
        arms: every provider with every prompt (runner.suite.options.make_arms), in plan order.
        repeats: runs of each case in each arm (``--runs``); a case's own ``runs`` wins.
        options: what every run shares and the matrix's own settings (runs at once, shard, executor);
            its response cache, when open, is closed once the runs are done.
        results: the folder each invocation's ``<run-id>/`` folder is made in (``--results``).
        outputs: format name -> its target, each output asked for (runner.output.formats), in table order.
        printer: prints each run's lines as it ends, then the pass count and the tables (on stderr with
            ``as_json``).
        as_json: the report on stdout (``--output json``) instead of the results folder's path.
        min_pass_rate: the suite's gate, a fraction 0 to 1 of each case's runs (None: every run must pass);
            a case's own ``min_pass_rate`` wins.
        shard: what report.json records of the shard (runner.suite.shard.shard_summary); None: not sharded.
        models: each provider's label -> the model string it sends, for the outputs that say so.
        resume: the results folder whose runs of this plan are reused (``--resume``); None: run them all.
        retry_errors: run again those of ``resume``'s runs that ended in an error not of the agent's making
            (``--retry-errors``; runner.suite.session.run_live), rather than reuse them.
        record: the folder each run is written to as a replayable case (``--record``); None: none.
        again: the results folder -> the command line that runs what this invocation leaves unfinished.
        until: ``--until-decided``: run in rounds until each comparison of arms is decided, ``repeats`` the cap
            (runner.suite.rounds); None: every planned run.
    """

    cases: Sequence[Case]
    arms: Sequence[Arm]
    repeats: int
    options: SuiteOptions
    results: Path
    outputs: Mapping[str, Any]
    printer: RunPrinter
    again: Callable[[Path], str]
    as_json: bool = False
    min_pass_rate: float | None = None
    shard: Mapping[str, Any] | None = None
    models: Mapping[str, str] = field(default_factory=dict)
    resume: Path | None = None
    retry_errors: bool = False
    record: Path | None = None
    until: Stopping | None = None


def run_suite(request: SuiteRequest) -> int:
    """Run ``request``'s matrix live, saving each run in a new folder under ``request.results``, then write
    report.json and each output and print the ending (runner.output.finish.finish); return the exit code:
    the gates' (runner.scoring.gates.exit_code), 2 when interrupted or a result could not be written.

    Raises UserError (exit 4) for a ``resume`` folder that cannot be read or holds runs of this plan made
    from other inputs (``_same_inputs``), a results folder that cannot be
    made, or ``record`` cases whose fixtures clash (runner.output.replay.Recorder). A closed output (``| head``) cuts the printing short, never a result: every output
    is written before anything is printed.
    """
    earlier = resumed_records(request.resume) if request.resume else []
    if request.resume:
        _same_inputs(earlier, request.cases, request.arms, request.options.run.sandbox.mode, request.resume)
    writer, started = ResultsWriter(request.results), utc_now()
    providers, prompts = len({a.provider.name for a in request.arms}), len({a.prompt.name for a in request.arms})
    tool_defs = len({a.tool_defs for a in request.arms})
    recorder = (Recorder(request.record, request.cases, providers, prompts, request.repeats, tool_defs)
                if request.record else None)
    done = run_live(request.cases, request.arms, request.options, request.repeats, request.printer, writer,
                    streamed(request.outputs), earlier, recorder, request.retry_errors, request.until)
    del earlier  # the report needs only the runs' summaries and files
    cache = request.options.run.cache
    if cache is not None:
        cache.close()
    conclusion = Conclusion(request.min_pass_rate, done.left, request.shard, request.models, done.sequential)
    thresholds = {c.full_id: c.min_pass_rate for c in request.cases}
    ending = conclude(saved_runs(done.records, writer.path, done.spool), thresholds, writer, started, conclusion)
    notes = _notes(done, recorder, cache.folder if cache is not None else None)
    view = View(request.printer, request.as_json, where=True, notes=notes,
                errors=[done.refused] if done.refused else [], again=request.again(writer.path))
    try:  # every output is written before anything is printed: a closed output (| head) only cuts the printing short
        return finish(ending, request.outputs, view)
    except BrokenPipeError:
        silence_output()
        return ending.code
    finally:
        done.spool.close()


def _notes(done: LiveRun, recorder: Recorder | None, cache: Path | None) -> list[str]:
    """The lines printed after the tables: what could not be saved, the response cache's (``cache``, the
    ``--cache`` folder) hits and misses over the runs that had one, where ``--record`` wrote and how to replay it."""
    notes = list(done.warnings)
    used = cache_totals(done.records)
    if used is not None:
        saved = f" ({used.total_tokens:,} tokens not spent again)" if used.total_tokens else ""
        where = f"response cache {cache}" if cache is not None else "response cache (of the runs --resume reused)"
        notes.append(f"{where}: {used.hits} hits{saved}, {used.misses} misses")
    if recorder is not None:
        left_out = f" ({recorder.left_out} that the provider failed left out)" if recorder.left_out else ""
        them = "it" if recorder.recorded == 1 else "them"
        notes.append(f"recorded {plural(recorder.recorded, 'run')} in {recorder.cases_dir}{left_out}; "
                     f"replay {them} offline with: tooltrial run {recorder.cases_dir} -p scripted")
    return notes


def _same_inputs(earlier: Sequence[RunRecord], cases: Sequence[Case], arms: Sequence[Arm], sandbox: str,
                 folder: Path) -> None:
    """Raise UserError naming the first case (in an arm) of the plan whose runs in ``earlier`` were made from other
    inputs than it would run on now (runner.scoring.inputs); the tools offered are not compared (a run knows them
    once its toolbox is made)."""
    case_of, arm_of = {c.full_id: c for c in cases}, {a.label: a for a in arms}
    seen: set[tuple[str, str]] = set()
    for record in earlier:
        case, arm = case_of.get(record.case), arm_of.get(record.arm)
        if case is None or arm is None or record.provenance is None or (record.case, record.arm) in seen:
            continue
        seen.add((record.case, record.arm))
        now = provenance(case, arm.prompt.source if case.system is None else case.system, [],
                         arm.provider.cache_identity, arm.provider.name, sandbox,
                         None if arm.tools is None else arm.tools.fingerprint,
                         None if arm.faults is None else arm.faults.digest)
        now = dataclasses.replace(now, tools=record.provenance.tools)
        summary = summarize(record)
        found = input_changes(record.case, record.arm, [summary], [dataclasses.replace(summary, provenance=now)], True)
        if found:
            raise UserError(f"--resume {folder}: its runs of {record.case} [{record.arm}] were made from other "
                            f"inputs: {'; '.join(c.change for c in found)}",
                            hint="run the suite afresh (without --resume), or put back what changed")
