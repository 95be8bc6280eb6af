"""The one JSON document of a suite run (``report.json``, ``--report``, ``--output json``), and of a regression.

Shapes are pinned by ``schemas/report.schema.json`` (bump ``SCHEMA_VERSION`` on any incompatible
change). Every figure comes from the one aggregation (runner.scoring.aggregate), under the name
it has there: ``overall``, each of ``arms`` (with its case ``groups``) and each of ``cells`` hold
the same ``Figures`` fields. Fractions are in [0, 1], rounded to RATE_DIGITS decimals (a Wilson bound
of 1e-17 is written 0.0), times in seconds, cost in USD;
``pass_at_k`` / ``pass_hat_k`` map k (as a string, JSON keys being strings) to the estimate;
None is JSON null.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from runner import __version__
from runner.errors import ExitCode
from runner.output.store import SCHEMA_VERSION, to_json, write_replace
from runner.run.record import CacheUse, RunRecord
from runner.scoring.aggregate import Aggregate, Arm, Cell, Figures
from runner.scoring.difference import Difference
from runner.scoring.gates import Gate
from runner.scoring.inputs import arm_provenances
from runner.scoring.judging import judges_dict
from runner.scoring.paired import Paired
from runner.scoring.robustness import robustness_dict
from runner.scoring.summary import RunSummary, retried_count, summarize
from runner.sums import known_sum
from runner.text import cap_text

if TYPE_CHECKING:
    from runner.output.finish import Ending

REPORT_KIND = "tooltrial.report"
TRACE_RESULT_LIMIT = 2000  # characters of each tool result kept in the report (head and tail)
RATE_DIGITS = 6  # decimals of every fraction the report writes
_RATES = ("pass_rate", "accuracy_mean", "outcome_mean", "outcome_std", "process_mean", "process_std")
# The report's keys of a Figures' token counts (runner.run.requests.Tokens), in the order it writes them.
_TOKEN_KEYS = {
    "tokens": {"prompt_tokens": "prompt_tokens_total", "completion_tokens": "completion_tokens_total",
               "total_tokens": "tokens_total", "reasoning_tokens": "reasoning_tokens_total",
               "cached_tokens": "cached_tokens_total", "unreported": "unreported_requests"},
    "judge_tokens": {"total_tokens": "judge_tokens_total"},
}


def report_document(
    model: Aggregate,
    gates: Sequence[Gate],
    records: Sequence[RunRecord],
    exit_code: int,
    meta: dict[str, Any],
    unfinished: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The report of one invocation: ``{schema_version, kind, tooltrial, **meta, exit_code,
    [unfinished], overall, arms, cells, paired, comparisons, [retried], [cache], [robustness], runs}``; ``robustness``
    (runner.scoring.robustness.robustness_dict) only with faults or a clean twin; ``retried`` (how many
    runs ``run --retry-errors`` ran again, ``retried_count``) only when some were, ``cache`` (``cache_totals``)
    only when some run used a response cache. ``paired`` is the paired analysis of
    exactly two arms (else None), ``comparisons`` every paired analysis (runner.scoring.pairs), each
    as ``paired_dict`` writes it: with two arms, ``[paired]``.

    ``model`` is the aggregation of ``records`` and ``gates`` their gates. ``meta`` adds ``run_id``,
    ``results`` (the folder), ``started`` and ``finished`` (ISO 8601 UTC). ``unfinished`` lists the
    runs an interruption left undone (``unfinished_list``); with any, they are in the report and its
    exit code is 2 whatever ``exit_code`` says. ``report_head`` and ``report_text`` make the same
    document without holding every run.
    """
    head = report_head(model, gates, [summarize(r) for r in records], exit_code, meta, unfinished)
    return {**head, "cells": list(head["cells"]), "runs": [run_dict(r) for r in records]}


def report_head(
    model: Aggregate,
    gates: Sequence[Gate],
    runs: Sequence[RunSummary],
    exit_code: int,
    meta: dict[str, Any],
    unfinished: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """``report_document`` but ``runs``, from the runs' records or their summaries (runner.scoring.summary)."""
    gate_of = {(g.case, g.arm): g for g in gates}
    extra = {"unfinished": list(unfinished)} if unfinished else {}
    provenances = arm_provenances(runs)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": REPORT_KIND,
        "tooltrial": __version__,
        **meta,
        "exit_code": int(ExitCode.INTERRUPTED if unfinished else exit_code),
        **extra,
        "overall": figures_dict(model.overall),
        "arms": [{**arm_dict(a), "provenance": provenances.get(a.label)} for a in model.arms],
        "cells": CellDicts(model.cells, gate_of),
        "paired": paired_dict(model.paired),
        "comparisons": [paired_dict(p) for p in model.comparisons],
        **({"retried": retried} if (retried := retried_count(runs)) else {}),
        **({"cache": used.to_dict()} if (used := cache_totals(runs)) else {}),
        **({"judges": judged} if (judged := judges_dict(runs)) else {}),
        **({"robustness": robustness_dict(model.recoveries, model.robustness)}
           if model.recoveries or model.robustness else {}),
    }


def report_text(head: dict[str, Any], items: Iterable[str]) -> Iterator[str]:
    """The text ``to_json`` makes of the report document ``{**head, "runs": [run_dict(r) for r in
    records]}`` (``head`` from ``report_head``), piece by piece, given each run's item as ``run_item``
    made it from its record (or as runner.output.spool kept it): the same characters, with no run's
    dict in memory here, and each item of a list (``cells``, ``arms``...) encoded on its own, so no
    encoding of the whole document is ever held. JSON text holds no line break inside a string, so a
    value encoded alone is the document's once each of its lines is indented to its depth."""
    for place, (key, value) in enumerate(head.items()):
        yield ("{\n  " if place == 0 else ",\n  ") + to_json(key)[:-1] + ": "
        if isinstance(value, (list, CellDicts)):
            yield from _pieces(_streamed(item, 2, _OPENED.get(key, 0)) for item in value)
        else:
            yield _nested(value, "\n  ")
    yield (",\n  " if head else "{\n  ") + '"runs": '
    yield from _pieces([item] for item in items)
    yield "\n}\n"


def write_report(path: Path, ending: Ending) -> None:
    """``--report``: the report's text as report.json holds it (runner.output.finish.Ending.text), copied to
    ``path``. Raises OSError when it cannot be written."""
    write_replace(path, ending.text())


def run_item(record: RunRecord, data: dict[str, Any] | None = None) -> str:
    """The text of ``run_dict(record, data)`` as an item of the report's ``runs`` (indented to its depth)."""
    return _nested(run_dict(record, data), "\n    ")


def _pieces(items: Iterable[Iterable[str]]) -> Iterator[str]:
    """A list one level down the document, as ``to_json`` indents it, from its items' texts (``run_item``), each in pieces."""
    first = True
    for item in items:
        yield "[\n    " if first else ",\n    "
        yield from item
        first = False
    yield "[]" if first else "\n  ]"


# The head's lists whose items are written a key at a time, so many dicts down (arm, its provenance, its cases): an
# arm's provenance holds every case's fingerprints (11 MB of text at 10,000), held four times over when encoded whole.
_OPENED = {"arms": 3}


def _streamed(value: Any, depth: int, levels: int) -> Iterator[str]:
    """``_nested(value, ...)`` at ``depth`` (its indent in two-space steps) piece by piece: a non-empty dict
    ``levels`` deep or less a key at a time, anything else encoded whole: the same characters."""
    if levels == 0 or not isinstance(value, dict) or not value:
        yield _nested(value, "\n" + "  " * depth)
        return
    inner = "\n" + "  " * (depth + 1)
    for place, (key, item) in enumerate(value.items()):
        yield ("{" if place == 0 else ",") + inner + to_json(key if isinstance(key, str) else str(key))[:-1] + ": "
        yield from _streamed(item, depth + 1, levels - 1)
    yield "\n" + "  " * depth + "}"


def _nested(value: Any, indent: str) -> str:
    return to_json(value)[:-1].replace("\n", indent)


def cache_totals(records: Sequence[RunSummary]) -> CacheUse | None:
    """The response cache's use summed over the runs that had one (runner.run.record.CacheUse: hits,
    misses, and the tokens and USD the hits' replies first cost); None when none had one."""
    used = [r.cache for r in records if r.cache is not None]
    if not used:
        return None
    return CacheUse(sum(u.hits for u in used), sum(u.misses for u in used), known_sum(u.total_tokens for u in used),
                    known_sum(u.cost for u in used))


def run_dict(record: RunRecord, data: dict[str, Any] | None = None) -> dict[str, Any]:
    """One run as a JSON-ready dict: the record's fields, ``names``/``calls``, and ``trace``
    (each tool call with its result cut to TRACE_RESULT_LIMIT characters) in place of ``steps``;
    ``script`` (what ``--record`` writes) is left out, ``trace`` and ``model_requests`` tell it; so is
    ``provenance``, kept once per arm (``arm_provenances``), and the conversation as sent (``messages``,
    ``message_cuts``, ``tools``) and the files' contents (``files``), kept by the run file. A trace entry names the
    model request its call came from (``request``), the call's full ``call_id`` and the ``fault`` its result got;
    ``commands`` keep TRACE_RESULT_LIMIT characters of each stream. ``data`` is ``record.to_dict()`` where
    the caller has made it already (the run file is written from it too); it is not changed."""
    data = {key: value for key, value in (record.to_dict() if data is None else data).items()
            if key not in ("steps", "script", "provenance", "messages", "message_cuts", "tools", "files")}
    trace = [
        {"turn": s.turn, "request": s.request, "call_id": s.call_id, "status": s.status, "name": s.name,
         "arguments": s.arguments, "result": cap_text(s.result, TRACE_RESULT_LIMIT), "is_error": s.is_error,
         "duration": s.duration, "started": s.started, "fault": s.fault}
        for s in record.steps
    ]
    commands = [{**c, "stdout": cap_text(c["stdout"], TRACE_RESULT_LIMIT), "stderr": cap_text(c["stderr"], TRACE_RESULT_LIMIT)}
                for c in data["commands"]]
    return {**data, "commands": commands, "names": record.names, "calls": record.calls, "trace": trace}


def unfinished_list(left: Sequence[tuple[str, str, str, int, str | None]]) -> list[dict[str, Any]]:
    """The runs an interruption left undone, ``(case, provider, prompt slot, run index, tool definitions)`` each
    (runner.suite.engine.run_key), as the report's ``unfinished`` entries ``{"case", "provider", "prompt", "run"}``,
    with ``tool_defs`` in a ``-T`` arm's; a fault arm's ``prompt`` is the prompt slot (``default · faults flaky``)."""
    return [{"case": case, "provider": provider, "prompt": prompt, "run": run,
             **({"tool_defs": tool_defs} if tool_defs is not None else {})}
            for case, provider, prompt, run, tool_defs in left]


def figures_dict(figures: Figures) -> dict[str, Any]:
    """The Figures as JSON-ready fields, ``interval`` as ``[low, high]``; fractions as ``rate`` writes them; its
    token counts as the totals of ``_TOKEN_KEYS`` in their place."""
    data: dict[str, Any] = {}
    for name, value in dataclasses.asdict(figures).items():
        keys = _TOKEN_KEYS.get(name)
        data.update({key: value[count] for count, key in keys.items()} if keys else {name: value})
    return {**data, **{name: rate(data[name]) for name in _RATES}, "interval": [rate(v) for v in figures.interval]}


def rate(value: float | None) -> float | None:
    """A fraction as the report writes it: clamped to [0, 1] and rounded to RATE_DIGITS decimals; None stays None."""
    return None if value is None else round(min(1.0, max(0.0, value)), RATE_DIGITS)


def arm_dict(arm: Arm) -> dict[str, Any]:
    """One arm: ``{arm (its label), provider, prompt, tool_defs, **figures, pass_at_k, pass_hat_k, groups: {group:
    figures}}``, and ``injection`` (runner.scoring.injection) when a case of it has injections."""
    return {
        "arm": arm.label, "provider": arm.provider, "prompt": arm.prompt, "tool_defs": arm.tool_defs,
        **figures_dict(arm.figures),
        "pass_at_k": _ks(arm.pass_at_k), "pass_hat_k": _ks(arm.pass_hat_k),
        "groups": {name: figures_dict(f) for name, f in arm.groups.items()},
        **({"injection": arm.injection.as_dict(rate)} if arm.injection is not None else {}),
    }


@overload
def paired_dict(paired: Paired) -> dict[str, Any]: ...
@overload
def paired_dict(paired: None) -> None: ...
def paired_dict(paired: Paired | None) -> dict[str, Any] | None:
    """The paired analysis with its ``significant`` flag and ``verdict`` line, or None; ``factor`` is
    ``{name, a, b, fixed}`` (runner.scoring.paired.Factor) or None."""
    if paired is None:
        return None
    difference, detectable = paired.difference, paired.detectable
    return {**dataclasses.asdict(paired), "p_value": rate(paired.p_value), "significant": paired.significant,
            "verdict": paired.verdict, "difference": None if difference is None else _difference(difference),
            "means": {name: _difference(d) for name, d in paired.means.items()},
            "discordance": rate(paired.discordance), "detectable": rate(detectable), "estimates": paired.estimates}


def _difference(difference: Difference) -> dict[str, Any]:
    """``{estimate, low, high, pairs, method}``, the three figures rounded as ``rate`` rounds."""
    return {**dataclasses.asdict(difference),
            **{name: round(getattr(difference, name), RATE_DIGITS) for name in ("estimate", "low", "high")}}


def _ks(values: dict[int, float]) -> dict[str, float | None]:
    return {str(k): rate(v) for k, v in values.items()}


class CellDicts(Sequence[dict[str, Any]]):
    """The report's ``cells`` (``cell_dict`` of each of ``cells``, with its gate from ``gate_of``), each dict
    made when it is read, so a large suite never holds them all at once. runner.output.store.to_json
    writes it as the list it stands for."""

    def __init__(self, cells: Sequence[Cell], gate_of: dict[tuple[str, str], Gate]) -> None:
        self._cells, self._gate_of = cells, gate_of

    def __len__(self) -> int:
        return len(self._cells)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        cell = self._cells[index]
        return cell_dict(cell, self._gate_of.get((cell.case, cell.arm)))


def cell_dict(cell: Cell, gate: Gate | None) -> dict[str, Any]:
    """One of the report's ``cells``: ``{case, arm, **figures, pass_at_k, pass_hat_k, flaky, gate}``."""
    return {
        "case": cell.case,
        "arm": cell.arm,
        **figures_dict(cell.figures),
        "pass_at_k": _ks(cell.pass_at_k),
        "pass_hat_k": _ks(cell.pass_hat_k),
        "flaky": cell.flaky,
        "gate": None if gate is None else {"threshold": gate.threshold, "held": gate.held, "broken_by": gate.broken_by},
    }
