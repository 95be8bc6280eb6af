"""The report document and its summaries, validated against schemas/report.schema.json."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from rich.console import Console

from runner.checks.base import CheckResult
from runner.output.report import SCHEMA_VERSION, TRACE_RESULT_LIMIT, build_report
from runner.providers.base import Usage
from runner.run.agent import Step
from runner.run.record import ERROR, FAIL, PASS, RunRecord, Tokens
from runner.scoring.metrics import FAILURE_CAUSES
from runner.scoring.summary import Summary, summarize
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


def test_summary_totals_means_over_defined_values_and_unknown_tokens() -> None:
    total = Summary.of(RECORDS[:3])
    assert (total.runs, total.passed, total.failed, total.errored) == (3, 1, 1, 1)
    assert total.pass_rate == pytest.approx(1 / 3)
    assert (total.accuracy, total.outcome, total.process) == (0.5, 0.5, 0.75)
    assert (total.calls, total.redundant, total.errors, total.tokens, total.cost) == (3, 1, 3, 15, 0.01)
    assert (total.judge_tokens, total.judge_cost) == (48, None)  # the judge reported tokens, not cost
    assert total.duration == 1.0
    assert total.failures == {"wrong_tool": 1, "run_error": 1}
    nothing = Summary.of(RECORDS[2:3])
    assert (nothing.accuracy, nothing.outcome, nothing.process, nothing.tokens, nothing.cost) == (None,) * 5
    assert (nothing.judge_tokens, nothing.judge_cost) == (None, None)
    assert Summary.of([]).pass_rate == 0.0


def test_arms_and_groups_keep_the_order_they_first_ran() -> None:
    arms = summarize(RECORDS)
    assert [arm.label for arm in arms] == ["scripted · default", "other · default"]
    assert list(arms[0].groups) == ["fs", "calc"]
    assert arms[0].groups["fs"].runs == 2 and arms[1].total.runs == 1


def test_report_validates_against_its_schema_and_caps_trace_results() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    report = json.loads(json.dumps(build_report(RECORDS)))
    for part, definition in (("runs", {"type": "array", "items": {"$ref": "#/$defs/run"}}), ("summary", {"$ref": "#/$defs/summary"})):
        validator = Draft202012Validator({"$defs": SCHEMA["$defs"], **definition})
        assert list(validator.iter_errors(report[part])) == []
    assert report["schema_version"] == SCHEMA_VERSION
    first = report["runs"][0]
    assert "steps" not in first and first["names"] == ["read_file"] and first["calls"] == 1
    assert len(first["trace"][0]["result"]) < TRACE_RESULT_LIMIT + 100
    judged = first["checks"][1]
    assert judged["usage"] == {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48, "cost": None}
    assert first["tokens"]["total"] == 15  # the judge's tokens are its own, not the agent's
    assert (first["judge_tokens"], first["judge_cost"]) == ({"prompt": 40, "completion": 8, "total": 48}, None)
    assert report["runs"][1]["judge_tokens"] == {"prompt": None, "completion": None, "total": None}
    scripted = report["summary"]["arms"][0]
    assert (scripted["judge_tokens"], scripted["groups"]["fs"]["judge_tokens"], scripted["groups"]["calc"]["judge_tokens"]) == (48, 48, None)
    assert report["summary"]["runs"] == 4 and report["summary"]["arms"][1]["provider"] == "other"


def test_schema_failure_causes_are_the_taxonomy() -> None:
    assert SCHEMA["$defs"]["failureCause"]["enum"] == list(FAILURE_CAUSES)


def test_tables_print_one_per_arm_then_failure_causes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # output that is no terminal is as wide as its tables
    stream = io.StringIO()
    print_summary(make_console(stream), RECORDS)
    lines = [line.split() for line in stream.getvalue().splitlines() if not line.startswith("─")]
    assert ["scripted", "·", "default"] in lines and ["other", "·", "default"] in lines
    assert lines[0] == "tokens: 11 prompt + 6 completion = 17 total, cost $0.0100; judges: 48 tokens".split()
    header = ["group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens"]
    assert header + ["judge", "tokens", "time"] in lines  # the scripted arm had a judge
    assert header + ["time"] in lines  # the other arm had none
    assert ["fs", "1/2", "50%", "0.50", "0.50", "0.75", "3", "1", "2", "15", "48", "0.8s"] in lines
    assert ["calc", "0/1", "0%", "-", "-", "-", "0", "0", "1", "-", "-", "0.2s"] in lines
    assert ["all", "1/3", "33%", "0.50", "0.50", "0.75", "3", "1", "3", "15", "48", "1.0s"] in lines
    assert lines[-2:] == [["run_error", "1"], ["wrong_tool", "1"]]


def test_tables_fit_an_80_column_terminal_without_cutting_a_value() -> None:
    console = Console(width=80, record=True)
    print_summary(console, RECORDS)
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    lines = [line.split() for line in text.splitlines()]
    assert ["group", "passed", "acc", "outc", "proc", "calls", "redund", "errs", "tokens", "judge", "tok", "time"] in lines
    assert ["fs", "1/2", "50%", "0.50", "0.50", "0.75", "3", "1", "2", "15", "48", "0.8s"] in lines
    assert ["all", "1/3", "33%", "0.50", "0.50", "0.75", "3", "1", "3", "15", "48", "1.0s"] in lines
    assert "1/3 33%" in text  # a pass count and its rate stay on one line
