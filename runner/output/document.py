"""JSON documents of a comparison (``report.json``, ``--report``, ``--output json``) and of a regression.

Shapes are pinned by ``schemas/report.schema.json``. Fractions are in [0, 1],
times in seconds, cost in USD; ``pass_at_k`` / ``pass_hat_k`` map k (as a
string, JSON keys being strings) to the estimate; None is JSON null.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from runner import __version__
from runner.errors import ExitCode
from runner.output.report import build_report
from runner.output.store import SCHEMA_VERSION
from runner.run.record import ERROR, FAIL, PASS, RunRecord
from runner.scoring.aggregate import ArmStats, Cell, Comparison, Metrics, Paired
from runner.scoring.gates import Gate
from runner.scoring.regression import Regression

REPORT_KIND = "tooltrial.report"
REGRESSION_KIND = "tooltrial.regression"


def report_document(
    comparison: Comparison,
    gates: Sequence[Gate],
    records: Sequence[RunRecord],
    exit_code: int,
    meta: dict[str, Any],
    unfinished: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The report of one invocation: runner.output.report's document (summary, runs) with the statistics.

    ``meta`` adds ``run_id``, ``results`` (the folder), ``started`` and ``finished`` (ISO 8601
    UTC). ``unfinished`` lists the runs an interruption left undone (``unfinished_list``); with
    any, they are in the report and its exit code is 2 whatever ``exit_code`` says.
    """
    gate_of = {(g.case, g.arm): g for g in gates}
    extra = {"unfinished": list(unfinished)} if unfinished else {}
    return {
        **build_report(records),
        "schema_version": SCHEMA_VERSION,
        "kind": REPORT_KIND,
        "tooltrial": __version__,
        **meta,
        "exit_code": int(ExitCode.INTERRUPTED if unfinished else exit_code),
        "arms": comparison.arms,
        "totals": {status: sum(r.status == status for r in records) for status in (PASS, FAIL, ERROR)},
        "cells": [_cell(c, gate_of.get((c.case, c.arm))) for c in comparison.cells],
        "arm_stats": [_arm(a) for a in comparison.arm_stats],
        "paired": paired_dict(comparison.paired),
        **extra,
    }


def unfinished_list(left: Sequence[tuple[str, str, str, int]]) -> list[dict[str, Any]]:
    """The runs an interruption left undone, ``(case, provider, prompt, run index)`` each, as the
    report's ``unfinished`` entries ``{"case", "provider", "prompt", "run"}``."""
    return [{"case": case, "provider": provider, "prompt": prompt, "run": run} for case, provider, prompt, run in left]


def regression_document(regression: Regression, before: str, after: str) -> dict[str, Any]:
    """The regression view of two results folders (paths ``before`` and ``after``)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": REGRESSION_KIND,
        "before": before,
        "after": after,
        "arms": [{"before": _arm(old), "after": _arm(new)} for old, new in regression.arms],
        "pass_to_fail": [dataclasses.asdict(c) for c in regression.pass_to_fail],
        "fail_to_pass": [dataclasses.asdict(c) for c in regression.fail_to_pass],
        "only_before": regression.only_before,
        "only_after": regression.only_after,
        "paired": paired_dict(regression.paired),
    }


def _metrics(m: Metrics) -> dict[str, Any]:
    data = dataclasses.asdict(m)
    data["interval"] = list(m.interval)
    return data


def _ks(values: dict[int, float]) -> dict[str, float]:
    return {str(k): v for k, v in values.items()}


def _cell(cell: Cell, gate: Gate | None) -> dict[str, Any]:
    return {
        "case": cell.case,
        "arm": cell.arm,
        **_metrics(cell.metrics),
        "pass_at_k": _ks(cell.pass_at_k),
        "pass_hat_k": _ks(cell.pass_hat_k),
        "flaky": cell.flaky,
        "gate": None if gate is None else {"threshold": gate.threshold, "held": gate.held, "broken_by": gate.broken_by},
    }


def _arm(arm: ArmStats) -> dict[str, Any]:
    return {"arm": arm.arm, **_metrics(arm.metrics), "pass_at_k": _ks(arm.pass_at_k), "pass_hat_k": _ks(arm.pass_hat_k)}


def paired_dict(paired: Paired | None) -> dict[str, Any] | None:
    """The paired analysis with its ``significant`` flag and ``verdict`` line, or None."""
    if paired is None:
        return None
    return {**dataclasses.asdict(paired), "significant": paired.significant, "verdict": paired.verdict}
