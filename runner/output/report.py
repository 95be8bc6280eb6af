"""The report of a suite run: every run with its metrics, and summaries per arm and group.

``build_report(records)`` makes the runs and summaries of the report document
(runner.output.document adds the statistics, the one place the whole document is
made); ``schemas/report.schema.json`` describes it (bump ``SCHEMA_VERSION`` on
any incompatible change). Summaries are dataclasses (``Summary``, ``ArmSummary``) so the terminal tables and the
JSON read the same numbers.
"""

from __future__ import annotations

from typing import Any, Sequence

from runner import __version__
from runner.output.store import SCHEMA_VERSION
from runner.run.record import RunRecord
from runner.scoring.summary import Summary, summarize
from runner.text import cap_text

TRACE_RESULT_LIMIT = 2000  # characters of each tool result kept in the report (head and tail)


def run_dict(record: RunRecord) -> dict[str, Any]:
    """One run as a JSON-ready dict: the record's fields, ``names``/``calls``, and ``trace``
    (each tool call with its result cut to TRACE_RESULT_LIMIT characters) in place of ``steps``;
    ``script`` (what ``--record`` writes) is left out, ``trace`` and ``model_requests`` tell it."""
    data = record.to_dict()
    del data["steps"], data["script"]
    trace = [
        {"turn": s.turn, "name": s.name, "arguments": s.arguments, "result": cap_text(s.result, TRACE_RESULT_LIMIT),
         "is_error": s.is_error, "duration": s.duration}
        for s in record.steps
    ]
    return {**data, "names": record.names, "calls": record.calls, "trace": trace}


def build_report(records: Sequence[RunRecord]) -> dict[str, Any]:
    """The whole report: ``{schema_version, tooltrial, runs: [...], summary: {..., arms: [...]}}``.

    ``summary`` is the Summary of every run plus ``arms``: each arm's Summary with
    ``provider``, ``prompt`` and ``groups`` ({group: Summary}).
    """
    arms = [
        {"provider": arm.provider, "prompt": arm.prompt, **arm.total.to_dict(),
         "groups": {name: summary.to_dict() for name, summary in arm.groups.items()}}
        for arm in summarize(records)
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "tooltrial": __version__,
        "runs": [run_dict(r) for r in records],
        "summary": {**Summary.of(records).to_dict(), "arms": arms},
    }
