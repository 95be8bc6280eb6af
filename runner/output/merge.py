"""``tooltrial merge``: results folders joined into one, as if one invocation had run every run.

The inputs are the shards of one suite (``run --shard K/N``, each report recording its ``shard``) or
whole results folders. Shards must be all N of one suite: the same shard count and plan digest
(runner.suite.shard.shard_summary), none missing. A run (case, provider, prompt, run number) found in
two folders is kept once when both records are the same, else is an error unless ``prefer`` says which
folder wins. The runs are written to a new results folder in plan order (by arm, then case, then run
number, as the suite's shards list them; for whole folders, in the order first seen), through the one
writer, and report.json is made afresh from the one aggregation (runner.scoring.aggregate), with each
case's gate threshold as the folders' reports recorded it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import UserError
from runner.output.load import Results, read_results
from runner.output.report import report_document
from runner.output.store import ResultsWriter
from runner.run.record import RunRecord
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate, exit_code
from runner.scoring.inputs import case_changes, input_changes
from runner.scoring.summary import summarize

PREFER = ("first", "last")  # on a run two folders hold differently: the folder given first, or last, wins
_NAMED = 3  # at most this many names in one message


@dataclass(frozen=True)
class Merged:
    """What ``merge_results`` wrote: the new folder, its records in plan order, its report document, and
    how many runs more than one folder held (kept once)."""

    path: Path
    records: list[RunRecord]
    document: dict[str, Any]
    overlapping: int


def merge_results(folders: Sequence[Path], root: Path, prefer: str | None = None) -> Merged:
    """Join the results ``folders`` into a new folder ``root/<run-id>/`` (runs and report.json).

    ``prefer`` (``first``, ``last`` or None) settles a run that two folders hold with different records.
    Raises UserError, before anything is written, for a folder without report.json (a run that did not
    finish), shards mixed with whole folders, shards of different suites or shard counts, missing
    shards, shards that hold fewer runs than their suite plans, runs held differently without
    ``prefer``, and runs of one case in one arm that ran on different inputs (runner.scoring.inputs).
    """
    parts = [read_results(folder) for folder in folders]
    for part in parts:
        if part.report is None:
            raise UserError(f"{part.path} has no report.json: its run did not finish",
                            hint=f"finish it first: the same 'tooltrial run' command with --resume {part.path}")
    suite = _suite(parts)
    records, overlapping = _join(parts, prefer)
    unfinished = _unfinished(parts, records)
    if suite is not None:
        arms, cases = {a: i for i, a in enumerate(suite["arms"])}, {c: i for i, c in enumerate(suite["cases"])}
        records.sort(key=lambda r: (arms.get(r.arm, len(arms)), cases.get(r.case, len(cases)), r.run))
        if len(records) + len(unfinished) != suite["planned"]:
            raise UserError(f"the shards hold {len(records)} runs and {len(unfinished)} unfinished of the "
                            f"{suite['planned']} their suite plans", hint="a run file was removed from a shard's "
                            "runs/ folder: restore it, or run that shard again")
    model = aggregate([summarize(r) for r in records])
    gates = evaluate(model.cells, _thresholds(parts))
    writer = ResultsWriter(root)
    for number, record in enumerate(records, start=1):
        writer.write_run(record, number)
    times = [(p.report or {}).get(key) for p in parts for key in ("started", "finished")]
    started = min(filter(None, times[0::2]), default=None)
    finished = max(filter(None, times[1::2]), default=None)
    meta = {"run_id": writer.run_id, "results": str(writer.path), "started": started, "finished": finished,
            "merged": {"folders": [str(f) for f in folders], "shards": None if suite is None else suite["count"]}}
    document = report_document(model, gates, records, exit_code(gates), meta, unfinished)
    writer.write_report(document)
    return Merged(writer.path, records, document, overlapping)


def _suite(parts: Sequence[Results]) -> dict[str, Any] | None:
    """The ``shard`` record the parts share (None when none is a shard). Raises UserError when some are
    shards and some not, when their counts or plans differ, or when a shard is missing."""
    records = [(part.report or {}).get("shard") for part in parts]
    shards = [(part, shard) for part, shard in zip(parts, records) if shard is not None]
    if len(shards) == len(parts):
        first, ours = shards[0]
        for part, shard in shards[1:]:
            _same_suite(first, ours, part, shard)
        given = {shard["index"]: part for part, shard in shards}
        count = ours["count"]
        missing = [f"shard {k}/{count}" for k in range(1, count + 1) if k not in given]
        if missing:
            said = ", ".join(f"{k}/{count} ({given[k].path})" for k in sorted(given))
            raise UserError(f"{_names(missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} missing: given {said}",
                            hint="add the results folder of each missing shard ('tooltrial run ... --shard K/N')")
        return ours
    if shards:
        whole = next(part for part, shard in zip(parts, records) if shard is None)
        raise UserError(f"{whole.path} was not run with --shard, but {shards[0][0].path} was",
                        hint="merge the shards of one suite, or whole results folders, not both")
    return None


def _same_suite(first: Results, ours: dict[str, Any], part: Results, theirs: dict[str, Any]) -> None:
    """Raise UserError when ``part``'s shard record is not of the same suite and count as ``first``'s."""
    here, there = f"{first.path} (shard {ours['index']}/{ours['count']})", f"{part.path} (shard {theirs['index']}/{theirs['count']})"
    if theirs["count"] != ours["count"]:
        raise UserError(f"{here} and {there} split the suite into different numbers of shards",
                        hint="merge shards that were run with the same N in --shard K/N")
    if theirs["plan"] == ours["plan"]:
        return
    cases, arms = (set(ours["cases"]), set(theirs["cases"])), (set(ours["arms"]), set(theirs["arms"]))
    whys = [f"cases only in {where}: {_names(sorted(only))}" for where, only in
            ((first.path, cases[0] - cases[1]), (part.path, cases[1] - cases[0])) if only]
    whys += [f"arms only in {where}: {_names(sorted(only))}" for where, only in
             ((first.path, arms[0] - arms[1]), (part.path, arms[1] - arms[0])) if only]
    if not whys:
        whys = ["the same cases and arms, with a different number of runs of some case (--runs, a case's runs)"]
    raise UserError(f"{here} and {there} are shards of different suites: {'; '.join(whys)}",
                    hint="merge the shards of one command (the same cases, -p, -P and --runs), each with its --shard K/N")


def _join(parts: Sequence[Results], prefer: str | None) -> tuple[list[RunRecord], int]:
    """Every run of ``parts`` once, in the order first seen, and how many were held by more than one
    folder. Raises UserError naming the runs held differently when ``prefer`` is None."""
    kept: dict[tuple[str, str, str, int, str | None], tuple[RunRecord, Path]] = {}
    differ: list[str] = []
    overlapping = 0
    for part in parts:
        for record in part.records:
            key = (record.case, record.provider, record.key_prompt, record.run,
                   record.tool_defs)  # the run's key (runner.suite.engine.run_key): its arm, fault arm included
            if key not in kept:
                kept[key] = (record, part.path)
                continue
            overlapping += 1
            earlier, where = kept[key]
            if earlier.to_dict() == record.to_dict() or prefer == "first":
                continue
            if prefer == "last":
                kept[key] = (record, part.path)
            else:
                differ.append(f"{record.case} ({record.arm}, run {record.run}) in {where} and {part.path}")
    _same_inputs(list(kept.values()))
    if differ:
        more = f" (and {len(differ) - 1} more)" if len(differ) > 1 else ""
        raise UserError(f"two folders hold run {differ[0]} with different records{more}",
                        hint="give each run's folder once, or say which wins: --prefer first (the folder given "
                             "first) or --prefer last")
    return [record for record, _ in kept.values()], overlapping


def _same_inputs(kept: Sequence[tuple[RunRecord, Path]]) -> None:
    """Raise UserError naming the first case whose runs, from two folders, ran on different inputs: its own (in any
    arm), or its arm's (runner.scoring.inputs)."""
    cells: dict[tuple[str, str], tuple[RunRecord, Path]] = {}
    cases: dict[str, tuple[RunRecord, Path]] = {}
    for record, where in kept:
        if record.provenance is None:
            continue
        earlier, there = cells.setdefault((record.case, record.arm), (record, where))
        found = [c.change for c in input_changes(record.case, record.arm, [summarize(earlier)], [summarize(record)], same_arm=True)]
        if not found:
            earlier, there = cases.setdefault(record.case, (record, where))
            found = case_changes(record.case, earlier.provenance, record.provenance,  # type: ignore[arg-type]
                                 tools=earlier.tool_defs == record.tool_defs)  # -T arms show other tools by design
        if found:
            raise UserError(f"{there} and {where} hold runs of {record.case} [{record.arm}] made from different "
                            f"inputs: {'; '.join(found)}",
                            hint="merge results of the same cases, prompts and settings; compare the two with "
                                 "'tooltrial report A B'")


def _unfinished(parts: Sequence[Results], records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """The runs the parts' reports list as unfinished that no part holds, once each."""
    done = {(r.case, r.provider, r.key_prompt, r.run, r.tool_defs) for r in records}
    left: dict[tuple[str, str, str, int, str | None], dict[str, Any]] = {}
    for part in parts:
        for run in (part.report or {}).get("unfinished") or []:
            key = (run["case"], run["provider"], run["prompt"], run["run"], run.get("tool_defs"))
            if key not in done:
                left.setdefault(key, run)
    return list(left.values())


def _thresholds(parts: Sequence[Results]) -> dict[str, float | None]:
    """Each case's gate threshold as the parts' reports recorded it (``cells[].gate.threshold``)."""
    return {cell["case"]: cell["gate"]["threshold"] for part in parts
            for cell in (part.report or {}).get("cells", []) if cell.get("gate")}


def _names(names: Sequence[str]) -> str:
    """At most _NAMED of ``names``, with how many more."""
    more = f" (and {len(names) - _NAMED} more)" if len(names) > _NAMED else ""
    return ", ".join(names[:_NAMED]) + more
