"""Runs ended by an error not of the agent's making are not scored: their outcome, process and accuracy are
null in the run file, no mean or pass rate counts them, and every table and report.json counts them apart.

Through the CLI in this process: a provider whose port refuses connections, a judge that cannot be
reached, a setup command that fails; and, against them, a turn limit, which is the agent's doing and
stays scored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runner.run.record import ERROR, FAIL, PASS
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import is_infrastructure_error
from tests.helpers import ROOT, config, run_cli
from tests.records import record

UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing listens on the discard port
SCHEMA = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
FIGURE_LEVELS = ("overall", "arm", "group", "cell")

# Three cases, each with outcome checks, a trace to be accurate to and process components: scored on
# main as outcome 0.22 / accuracy 0.00 though the model was never reached.
CASES = """\
- id: one
  turns: [Write hello into out.txt]
  expect:
    files: {out.txt: {exists: true}}
    response_contains: done
    trace: {expected: [write_file], must_include: [write_file]}
- id: two
  turns: [List the folder]
  expect:
    response_not_contains: error
    response_contains: [a, b]
    trace: {expected: [list_dir], minimal_calls: 1}
- id: three
  turns: [Say hi]
  expect:
    verify: "true"
    response_contains: hi
    trace: {expected: [], avoid: [bash]}
"""


def judge_config(tmp_path: Path, base: str) -> Path:
    """A tooltrial.yml with the judge alias ``local-judge`` at ``base``, retries fast."""
    return config(tmp_path, extra=f"""\
  local-judge:
    model: openai/gpt-4o-mini
    api_base: {base}
    timeout: 10
    retries: {{attempts: 2, backoff: 0.05, max_backoff: 0.1}}
""")


def _levels(report: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every figures object of report.json, named by its level."""
    arm = report["arms"][0]
    return [("overall", report["overall"]), ("arm", arm), *(("group", g) for g in arm["groups"].values()),
            *(("cell", c) for c in report["cells"])]


def _run(tmp_path: Path, *argv: str) -> tuple[int, str, dict[str, Any], list[dict[str, Any]]]:
    """``tooltrial run ARGV --results tmp/r --report tmp/report.json``: (exit code, what it printed: stdout then
    stderr, report.json, the run files)."""
    done = run_cli("run", *argv, "--results", str(tmp_path / "r"), "--report", str(tmp_path / "report.json"),
                   cwd=tmp_path, env={"TOOLTRIAL_TEST_LOCAL_KEY": "sk-test"})
    report = json.loads((tmp_path / "report.json").read_text())
    assert list(Draft202012Validator(SCHEMA).iter_errors(report)) == []
    runs = [json.loads(p.read_text()) for p in sorted((tmp_path / "r").glob("*/runs/*.json"))]
    return done.returncode, done.stdout + done.stderr, report, runs


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


@pytest.mark.usefixtures("litellm_loaded")
def test_a_provider_that_refuses_connections_scores_nothing_and_is_counted_apart(tmp_path: Path) -> None:
    (tmp_path / "down.yml").write_text(CASES, encoding="utf-8")
    code, err, report, runs = _run(tmp_path, "down.yml", "-p", "local-openai", "--runs", "2",
                                   "--config", str(config(tmp_path)))  # local-openai: port 9, nothing listens
    assert code == 6  # infrastructure broke the runs
    assert len(runs) == 6
    assert {(r["status"], r["error_kind"], r["outcome"], r["process"], r["accuracy"]) for r in runs} == {
        ("error", "connection", None, None, None)}
    assert {r["requests"] for r in runs} <= {0, 3}  # 3 tries each, none once 3 runs in a row could not connect
    for level, figures in _levels(report):
        runs_here = 6 if level in ("overall", "arm", "group") else 2
        assert (figures["runs"], figures["passed"], figures["infra_errors"], figures["blames"]) == (
            runs_here, 0, runs_here, {"infrastructure": runs_here}), level
        assert (figures["pass_rate"], figures["interval"], figures["accuracy_mean"], figures["outcome_mean"],
                figures["process_mean"], figures["calls_mean"], figures["errors_mean"]) == (
            None, [0.0, 1.0], None, None, None, None, None), level
        assert figures["errors_total"] == runs_here  # totals still count every run: one run error each
    assert [(c["pass_at_k"], c["pass_hat_k"], c["flaky"], c["gate"]["broken_by"]) for c in report["cells"]] == [
        ({}, {}, False, "infrastructure")] * 3
    rows = _rows(err)
    header = rows.index(["group", "passed", "infra", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"])
    assert rows[header + 2][:-1] == ["down", "0/0", "-", "6", "-", "-", "-", "0", "0", "6", "-"]
    assert ["0/6", "passed"] in rows
    assert ("note: 6 of 6 runs not scored, ended by errors not of the agent's making: infrastructure 6"
            in err.splitlines())
    per_case = rows.index(["case", "runs", "infra", "pass", "rate", "(95%", "CI)", "pass@k", "pass^k", "outcome", "process", "flaky"])
    assert rows[per_case + 2:per_case + 5] == [[f"down/{i}", "2", "2", "-", "-", "-", "-", "-"]
                                               for i in ("one", "two", "three")]
    (folder,) = (tmp_path / "r").iterdir()  # the regression view of the folder against itself counts them too
    compared = _rows(run_cli("report", str(folder), str(folder)).stdout)
    assert [row for row in compared if row[:2] in (["infra", "errors"], ["pass", "rate"]) or row[0:1] == ["outcome"]] == [
        ["infra", "errors", "6", "6"], ["pass", "rate", "-", "-", "-"], ["outcome", "-", "-", "-"]]


@pytest.mark.usefixtures("litellm_loaded")
def test_a_judge_error_is_not_scored_though_its_other_checks_ran(tmp_path: Path) -> None:
    (tmp_path / "judged.yml").write_text("""\
- id: polite
  turns: [Greet the user]
  expect:
    response_contains: Hello
    judge: {rubric: The reply greets the user politely., threshold: 0.7}
    trace: {expected: [list_dir], must_include: [list_dir]}
  script:
    - tool_calls: [{name: list_dir, arguments: {}}]
    - content: Hello there, nice to meet you.
""", encoding="utf-8")
    code, err, report, (run,) = _run(tmp_path, "judged.yml", "--judge", "local-judge",
                                     "--config", str(judge_config(tmp_path, UNREACHABLE)))
    assert code == 6
    assert (run["status"], run["error_kind"], run["outcome"], run["process"], run["accuracy"]) == (
        "error", "judge_error", None, None, None)
    assert [(c["check"], c["passed"]) for c in run["checks"]][:1] == [("response_contains", True)]  # it ran, and passed
    assert (len(run["steps"]), run["requests"]) == (1, 2)  # what the agent did is still recorded
    for level, figures in _levels(report):
        assert (figures["infra_errors"], figures["blames"], figures["pass_rate"], figures["outcome_mean"],
                figures["process_mean"], figures["accuracy_mean"], figures["calls_total"]) == (
            1, {"infrastructure": 1}, None, None, None, None, 1), level
    rows = _rows(err)
    header = rows.index(["group", "passed", "infra", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"])
    assert rows[header + 2][:-1] == ["judged", "0/0", "-", "1", "-", "-", "-", "1", "0", "1", "-"]


def test_a_setup_error_and_a_turn_limit_beside_passing_runs(tmp_path: Path) -> None:
    """A setup failure (infrastructure) is left out of the scores like a provider error; a turn limit
    is the agent's doing: scored, and counted in the pass rate."""
    (tmp_path / "mixed.yml").write_text("""\
- id: good
  turns: [Say ok]
  expect: {response_contains: ok, trace: {expected: []}}
  script: [{content: ok}]
- id: broken-setup
  setup: [exit 3]
  turns: [Say ok]
  expect: {response_contains: ok, trace: {expected: []}}
  script: [{content: ok}]
- id: loops
  turns: [Say ok]
  expect: {response_contains: ok, max_turns: 1, trace: {expected: [list_dir]}}
  script:
    - tool_calls: [{name: list_dir, arguments: {}}]
    - content: ok
""", encoding="utf-8")
    code, err, report, runs = _run(tmp_path, "mixed.yml", "-p", "scripted")
    by_case = {r["case"]: r for r in runs}
    assert (by_case["mixed/good"]["outcome"], by_case["mixed/good"]["accuracy"]) == (1.0, 1)
    setup = by_case["mixed/broken-setup"]
    assert (setup["error_kind"], setup["outcome"], setup["process"], setup["accuracy"]) == ("setup", None, None, None)
    loops = by_case["mixed/loops"]
    assert (loops["error_kind"], loops["outcome"], loops["accuracy"]) == ("turn_limit", 0.0, 1)  # the agent's: scored
    overall = report["overall"]
    assert (overall["runs"], overall["passed"], overall["infra_errors"], overall["blames"]) == (
        3, 1, 1, {"infrastructure": 1, "agent": 1})
    assert (overall["pass_rate"], overall["outcome_mean"], overall["accuracy_mean"]) == (0.5, 0.5, 1.0)
    assert code == 1  # the turn limit broke its gate: the agent's doing comes before the infrastructure's
    rows = _rows(err)
    header = rows.index(["group", "passed", "infra", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"])
    assert rows[header + 2][:7] == ["mixed", "1/2", "50%", "1", "1.00", "0.50", "-"]
    assert "note: 1 of 3 runs not scored, ended by errors not of the agent's making: infrastructure 1" in err


def test_a_suite_with_every_run_scored_prints_no_infra_column_nor_note(tmp_path: Path) -> None:
    (tmp_path / "fine.yml").write_text("- id: ok\n  turns: [Say ok]\n  expect: {response_contains: ok}\n"
                                       "  script: [{content: ok}]\n", encoding="utf-8")
    code, err, report, _ = _run(tmp_path, "fine.yml", "-p", "scripted", "--runs", "2")
    assert (code, report["overall"]["pass_rate"], report["overall"]["infra_errors"]) == (0, 1.0, 0)
    assert ["group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"] in _rows(err)
    assert ["case", "runs", "pass", "rate", "(95%", "CI)", "pass@k", "pass^k", "outcome", "process", "flaky"] in _rows(err)
    assert "not scored" not in err


_KINDS = st.sampled_from([None, "provider_error", "judge_error", "setup", "internal", "workspace", "turn_limit", "timeout"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["g/x", "g/y", "h/z"]), st.sampled_from([PASS, FAIL, ERROR]), _KINDS,
                          st.none() | st.floats(0, 1), st.integers(0, 5)), min_size=1, max_size=12))
def test_every_mean_and_rate_is_over_the_scored_runs_only(runs: list[tuple]) -> None:
    """Whatever an unscored record holds (an older results folder's scores), no figure at any level reads it."""
    records = [record(case, status, index, error_kind=(kind or "provider_error") if status == ERROR else None,
                      outcome=outcome, process=outcome, steps=[], errors=errors)
               for index, (case, status, kind, outcome, errors) in enumerate(runs)]
    model = aggregate(records)
    levels = [(model.overall, records), *((a.figures, records) for a in model.arms),
              *((c.figures, [r for r in records if r.case == c.case]) for c in model.cells)]
    for figures, mine in levels:
        scored = [r for r in mine if not is_infrastructure_error(r)]
        known = [r.outcome for r in scored if r.outcome is not None]
        assert figures.infra_errors == len(mine) - len(scored) == figures.runs - figures.scored
        assert figures.pass_rate == (sum(r.status == PASS for r in mine) / len(scored) if scored else None)
        assert figures.outcome_mean == (pytest.approx(sum(known) / len(known)) if known else None)
        assert figures.errors_mean == (pytest.approx(sum(r.errors for r in scored) / len(scored)) if scored else None)
        assert figures.errors_total == sum(r.errors for r in mine)
    for cell in model.cells:
        assert sorted(cell.pass_at_k) == list(range(1, cell.figures.scored + 1))
