"""The report document and the figures it carries, validated against schemas/report.schema.json."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from rich.console import Console

from runner.checks.base import CheckResult
from runner.output.report import TRACE_RESULT_LIMIT, report_document
from runner.output.store import SCHEMA_VERSION
from runner.providers.base import Usage
from runner.run.record import ERROR, FAIL, PASS, RunRecord
from runner.run.requests import Tokens
from runner.run.trajectory import Step
from runner.scoring.aggregate import aggregate, figures
from runner.scoring.gates import evaluate
from runner.scoring.metrics import FAILURE_CAUSES
from runner.terminal.console import make_console
from runner.terminal.tables import print_summary

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "schemas" / "report.schema.json").read_text())


def _record(case: str, status: str, **fields: Any) -> RunRecord:
    return RunRecord(case=case, provider=fields.pop("provider", "scripted"), prompt="default", status=status, **fields)


RECORDS = [
    _record("fs/a", PASS, accuracy=1, outcome=1.0, process=1.0, duration=0.5, tokens=Tokens(10, 5, 15), cost=0.01,
            steps=[Step(0, "c1", "read_file", {"path": "a"}, "x" * 50_000, False, 0.1)],
            checks=[CheckResult("response_contains", True, ""),
                    CheckResult("judge", True, "", score=0.9, reasoning="ok", usage=Usage(40, 8, 48, None))]),
    _record("fs/b", FAIL, accuracy=0, outcome=0.0, process=0.5, duration=0.25, failure="wrong_tool", redundant=1,
            steps=[Step(0, "c1", "grep", {"pattern": "x"}, "Error: bad", True, 0.1)] * 2, errors=2),
    _record("calc/c", ERROR, duration=0.25, failure="run_error", errors=1, cause="setup command failed", error_kind="setup"),
    _record("fs/a", PASS, provider="other", accuracy=1, outcome=1.0, process=1.0, tokens=Tokens(1, 1, 2)),
]


def test_figures_total_and_average_over_defined_values_and_unknown_tokens() -> None:
    total = figures(RECORDS[:3])
    assert (total.runs, total.passed, total.failed, total.errored, total.infra_errors) == (3, 1, 1, 1, 1)
    assert total.pass_rate == 0.5  # of the 2 scored runs: the setup error is not scored
    assert (total.accuracy_mean, total.outcome_mean, total.process_mean) == (0.5, 0.5, 0.75)
    assert (total.calls_total, total.redundant_total, total.errors_total, total.tokens.total_tokens, total.cost_total) == (3, 1, 3, 15, 0.01)
    assert (total.calls_mean, total.errors_mean, total.tokens_mean) == (1.5, 1.0, 15.0)  # per scored run; tokens: the one that reported
    assert (total.judge_tokens.total_tokens, total.judge_cost_total) == (48, None)  # the judge reported tokens, not cost
    assert (total.duration_total, total.duration_mean) == (1.0, 0.375)
    assert total.failures == {"wrong_tool": 1, "run_error": 1}
    nothing = figures(RECORDS[2:3])
    assert (nothing.accuracy_mean, nothing.outcome_mean, nothing.process_mean, nothing.tokens.total_tokens, nothing.cost_total) == (None,) * 5
    assert (nothing.judge_tokens.total_tokens, nothing.judge_cost_total, nothing.tokens_mean) == (None, None, None)
    empty = figures([])
    assert (empty.runs, empty.pass_rate, empty.calls_mean, empty.duration_mean) == (0, None, None, None)
    assert (nothing.runs, nothing.infra_errors, nothing.pass_rate, nothing.interval, nothing.errors_total) == (1, 1, None, (0.0, 1.0), 1)


def test_arms_and_groups_keep_the_order_they_first_ran() -> None:
    arms = aggregate(RECORDS).arms
    assert [arm.label for arm in arms] == ["scripted · default", "other · default"]
    assert list(arms[0].groups) == ["fs", "calc"]
    assert arms[0].groups["fs"].runs == 2 and arms[1].figures.runs == 1


def test_report_validates_against_its_schema_and_caps_trace_results() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    model = aggregate(RECORDS)
    document = report_document(model, evaluate(model.cells, {}), RECORDS, 1, {"run_id": "20250314T092653Z-3fa2c1"})
    report = json.loads(json.dumps(document))
    assert list(Draft202012Validator(SCHEMA).iter_errors(report)) == []
    assert report["schema_version"] == SCHEMA_VERSION == 2
    first = report["runs"][0]
    assert "steps" not in first and first["names"] == ["read_file"] and first["calls"] == 1
    assert len(first["trace"][0]["result"]) < TRACE_RESULT_LIMIT + 100
    judged = first["checks"][1]
    assert judged["usage"] == {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48, "cost": None,
                               "reasoning_tokens": None, "cached_tokens": None, "cache_write_tokens": None}
    assert first["tokens"]["total"] == 15  # the judge's tokens are its own, not the agent's
    assert (first["judge_tokens"], first["judge_cost"]) == ({"prompt": 40, "completion": 8, "total": 48, "reasoning": None, "cached": None, "cache_write": None, "unreported": 0}, None)
    assert report["runs"][1]["judge_tokens"] == {"prompt": None, "completion": None, "total": None, "reasoning": None, "cached": None, "cache_write": None, "unreported": 0}
    scripted = report["arms"][0]
    judged = (scripted["judge_tokens_total"], scripted["groups"]["fs"]["judge_tokens_total"],
              scripted["groups"]["calc"]["judge_tokens_total"])
    assert judged == (48, 48, None)
    assert report["overall"]["runs"] == 4 and report["arms"][1]["provider"] == "other"


def test_schema_failure_causes_are_the_taxonomy() -> None:
    assert SCHEMA["$defs"]["failureCause"]["enum"] == list(FAILURE_CAUSES)


def test_tables_print_one_per_arm_then_failure_causes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # output that is no terminal is as wide as its tables
    stream = io.StringIO()
    print_summary(make_console(stream), aggregate(RECORDS))
    lines = [line.split() for line in stream.getvalue().splitlines() if not line.startswith("─")]
    assert ["scripted", "·", "default"] in lines and ["other", "·", "default"] in lines
    assert lines[0] == ["tokens:", "11", "prompt", "+", "6", "completion", "=", "17", "total,", "cost", "$0.0100;", "judges:", "48", "tokens"]
    header = ["accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens"]
    assert ["group", "passed", "infra", *header, "judge", "tokens", "time"] in lines  # a judge, a run not scored
    assert ["group", "passed", *header, "time"] in lines  # the other arm had neither
    assert ["fs", "1/2", "50%", "0", "0.50", "0.50", "0.75", "3", "1", "2", "15", "48", "0.8s"] in lines
    assert ["calc", "0/0", "-", "1", "-", "-", "-", "0", "0", "1", "-", "-", "0.2s"] in lines  # its one run not scored
    assert ["all", "1/2", "50%", "1", "0.50", "0.50", "0.75", "3", "1", "3", "15", "48", "1.0s"] in lines
    assert lines[-2:] == [["run_error", "1"], ["wrong_tool", "1"]]


def test_tables_fit_an_80_column_terminal_without_cutting_a_value() -> None:
    console = Console(width=80, record=True)
    print_summary(console, aggregate(RECORDS))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    lines = [line.split() for line in text.splitlines()]
    header = ["group", "passed", "infra", "acc", "outc", "proc", "calls", "redun", "errs", "tokens", "tok", "time"]
    assert lines[lines.index(header) - 1] == ["judge"]  # a header too wide folds onto the line above
    assert ["fs", "1/2", "50%", "0", "0.50", "0.50", "0.75", "3", "1", "2", "15", "48", "0.8s"] in lines
    assert ["all", "1/2", "50%", "1", "0.50", "0.50", "0.75", "3", "1", "3", "15", "48", "1.0s"] in lines
    assert "1/2 50%" in text  # a pass count and its rate stay on one line
