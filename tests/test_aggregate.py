"""The one aggregation, computed by hand: the same figures in the model, report.json, the tables and JUnit;
every level adding up to the one above it; and a results folder written at schema_version 1 still read
by ``tooltrial report``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runner.output.finish import Conclusion, conclude
from runner.output.junit import write_junit
from runner.output.report import figures_dict, report_document
from runner.output.scan import saved_runs
from runner.output.store import REPORT_FILE, RUNS_DIR, ResultsWriter
from runner.run.record import ERROR, FAIL, PASS, RunRecord
from runner.run.requests import Tokens
from runner.run.trajectory import Step
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate
from runner.scoring.summary import summarize
from tests.helpers import ROOT, cli_output
from tests.records import record

SCHEMA = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
LEGACY = Path(__file__).resolve().parent / "legacy" / "results-v1.json"

# (case, prompt) -> per run: (status, tool calls, (prompt, completion) tokens or None, seconds).
# Arm "a" ends one run of h/y with the provider unreachable: an infrastructure error, no tokens.
MATRIX = {
    ("g/x", "a"): [(PASS, 2, (100, 20), 1.0), (PASS, 2, (100, 20), 1.5), (FAIL, 4, (200, 40), 2.5)],
    ("h/y", "a"): [(PASS, 1, (50, 10), 0.5), (FAIL, 3, (50, 10), 1.0), (ERROR, 0, None, 0.5)],
    ("g/x", "b"): [(PASS, 2, (80, 20), 1.0)] * 3,
    ("h/y", "b"): [(FAIL, 3, (60, 20), 2.0), (FAIL, 3, (60, 20), 2.0), (PASS, 1, (40, 10), 1.0)],
}
A, B = "scripted · a", "scripted · b"


def _records() -> list[RunRecord]:
    out = []
    for (case, prompt), runs in MATRIX.items():
        for index, (status, calls, tokens, seconds) in enumerate(runs):
            steps = [Step(0, f"c{i}", "read_file", {"path": "a.txt"}, "a", False, 0.0) for i in range(calls)]
            used = Tokens(tokens[0], tokens[1], sum(tokens)) if tokens else Tokens()
            failure = {PASS: None, FAIL: "wrong_tool", ERROR: "run_error"}[status]
            out.append(record(case, status, index, prompt, steps=steps, tokens=used, duration=seconds, failure=failure))
    return out


# By hand from MATRIX. Arm a: 3 of 6 passed, 2 failed, 1 errored by infrastructure; calls 2+2+4+1+3+0;
# tokens 120+120+240+60+60 over the 5 runs that reported them; 7 seconds. Arm b: 4 of 6, calls 2*3+3+3+1,
# tokens 100*3+80+80+50, 8 seconds.
ARM_A = {"runs": 6, "passed": 3, "failed": 2, "errored": 1, "infra_errors": 1, "calls_total": 12,
         "redundant_total": 0, "errors_total": 0, "prompt_tokens_total": 500, "completion_tokens_total": 100,
         "tokens_total": 600, "tokens_mean": 120.0, "tokens_per_pass": 200.0, "cost_total": None,
         "judge_tokens_total": None, "duration_total": 7.0, "failures": {"wrong_tool": 2, "run_error": 1}}
ARM_B = {"runs": 6, "passed": 4, "failed": 2, "errored": 0, "infra_errors": 0, "calls_total": 13,
         "redundant_total": 0, "errors_total": 0, "prompt_tokens_total": 400, "completion_tokens_total": 110,
         "tokens_total": 510, "tokens_mean": 85.0, "tokens_per_pass": 127.5, "cost_total": None,
         "judge_tokens_total": None, "duration_total": 8.0, "failures": {"wrong_tool": 2}}
OVERALL = {"runs": 12, "passed": 7, "failed": 4, "errored": 1, "infra_errors": 1, "calls_total": 25,
           "tokens_total": 1110, "prompt_tokens_total": 900, "completion_tokens_total": 210, "duration_total": 15.0,
           "failures": {"wrong_tool": 4, "run_error": 1}}
# Means over the scored runs (arm a's infrastructure error is not scored): arm a 12/5 calls and 6.5/5 s per
# run, pass rate 3/5 (Wilson 0.2307-0.8824); arm b 13/6, 8/6, 4/6 (0.3-0.9032).
MEANS = {A: (2.4, 1.3, 0.6, (0.2307, 0.8824)), B: (13 / 6, 8 / 6, 4 / 6, (0.3, 0.9032))}
# Cells: passes of 3, infrastructure errors, tool calls, seconds; the gate at --min-pass-rate 0.5: a/h-y's
# 1 of 3 would reach it had its infrastructure error passed, b/h-y's would not.
CELLS = {("g/x", A): (2, 0, 8, 5.0, None), ("h/y", A): (1, 1, 4, 2.0, "infrastructure"),
         ("g/x", B): (3, 0, 6, 3.0, None), ("h/y", B): (1, 0, 7, 5.0, "agent")}


def _picked(document: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    return {key: document[key] for key in wanted}


def test_a_hand_computed_matrix_reads_the_same_in_the_model_the_report_the_tables_and_junit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _records()
    model = aggregate(records)
    assert model.labels == [A, B]
    for arm, expected in ((model.arm(A), ARM_A), (model.arm(B), ARM_B)):
        assert _picked(figures_dict(arm.figures), expected) == expected
        calls, seconds, rate, interval = MEANS[arm.label]
        f = arm.figures
        assert (f.calls_mean, f.duration_mean, f.pass_rate) == (pytest.approx(calls), pytest.approx(seconds), rate)
        assert f.interval == pytest.approx(interval, abs=1e-4)
    assert _picked(figures_dict(model.overall), OVERALL) == OVERALL
    assert model.arm(A).groups["h"].infra_errors == 1 and model.arm(B).groups["h"].calls_total == 7
    assert [(c.case, c.arm, c.figures.passed, c.figures.infra_errors, c.figures.calls_total, c.figures.duration_total)
            for c in model.cells] == [(case, arm, *figures[:4]) for (case, arm), figures in CELLS.items()]
    # a's h/y has 2 scored runs, so a's pass^k goes to k = 2: (1/3 for g/x + 0 for h/y) / 2
    assert (model.arm(A).pass_hat_k, model.arm(B).pass_hat_k[3], model.arm(B).pass_at_k[1]) == (
        {1: pytest.approx((2 / 3 + 1 / 2) / 2), 2: pytest.approx(1 / 6)}, 0.5, pytest.approx(2 / 3))
    paired = model.paired  # a's infrastructure error leaves h/y run 3 unpaired: 5 pairs, g/x #3 up, h/y #1 down
    assert paired is not None
    assert (paired.pairs, paired.a_passes, paired.b_passes, paired.pass_to_fail, paired.fail_to_pass) == (5, 3, 3, 1, 1)

    writer = ResultsWriter(tmp_path / "results")
    for one in records:
        writer.write_run(one)
    junit = tmp_path / "junit.xml"
    runs = saved_runs([summarize(one) for one in records], writer.path)
    ending = conclude(runs, {}, writer, "2025-03-14T09:26:53Z", Conclusion(min_pass_rate=0.5))
    assert ending.code == 1 and ending.failed_writes == []  # b/h-y's gate is the agent's
    write_junit(junit, ending)
    report = json.loads((writer.path / REPORT_FILE).read_text())
    assert list(Draft202012Validator(SCHEMA).iter_errors(report)) == []
    assert report["schema_version"] == 2 and report["kind"] == "tooltrial.report" and report["exit_code"] == 1
    assert [arm["arm"] for arm in report["arms"]] == [A, B]
    for arm, expected in zip(report["arms"], (ARM_A, ARM_B)):
        assert _picked(arm, expected) == expected
        calls, seconds, rate, interval = MEANS[arm["arm"]]
        assert (arm["calls_mean"], arm["duration_mean"], arm["pass_rate"]) == (pytest.approx(calls), pytest.approx(seconds), round(rate, 6))
        assert arm["interval"] == pytest.approx(list(interval), abs=1e-4)
    assert _picked(report["overall"], OVERALL) == OVERALL
    assert report["arms"][0]["groups"]["h"]["infra_errors"] == 1
    assert [(c["case"], c["arm"], c["passed"], c["infra_errors"], c["calls_total"], c["duration_total"], c["gate"]["broken_by"])
            for c in report["cells"]] == [(case, arm, *figures) for (case, arm), figures in CELLS.items()]
    assert (report["paired"]["pairs"], report["paired"]["pass_to_fail"], report["paired"]["fail_to_pass"]) == (5, 1, 1)

    root = ET.fromstring(junit.read_bytes())  # a testcase per cell, its time the cell's seconds
    suites = [(s.get("name"), s.get("tests"), s.get("failures"), s.get("errors"), s.get("time")) for s in root]
    assert suites == [(A, "2", "0", "1", "7.000"), (B, "2", "1", "0", "8.000")]
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("time")) == ("4", "1", "1", "15.000")
    assert [case.get("time") for case in root.iter("testcase")] == ["5.000", "2.000", "3.000", "5.000"]
    assert root.find("testsuite/testcase[@name='y [scripted · a]']/error").get("message") == (
        "1/3 runs passed (needs 50%): model unreachable")

    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = cli_output(["report", str(writer.path)])
    assert code == 0
    rows = [line.split() for line in out.splitlines()]
    assert ["tokens:", "900", "prompt", "+", "210", "completion", "=", "1,110", "total"] in rows
    #        group  passed (of the scored)  infra  accuracy outcome process calls redundant errors tokens time
    arm_a = [["g", "2/3", "67%", "0", "-", "-", "-", "8", "0", "0", "480", "5.0s"],
             ["h", "1/2", "50%", "1", "-", "-", "-", "4", "0", "0", "120", "2.0s"],
             ["all", "3/5", "60%", "1", "-", "-", "-", "12", "0", "0", "600", "7.0s"]]
    arm_b = [["g", "3/3", "100%", "-", "-", "-", "6", "0", "0", "300", "3.0s"],
             ["h", "1/3", "33%", "-", "-", "-", "7", "0", "0", "210", "5.0s"],
             ["all", "4/6", "67%", "-", "-", "-", "13", "0", "0", "510", "8.0s"]]
    start_a, start_b = rows.index(["scripted", "·", "a"]), rows.index(["scripted", "·", "b"])
    assert rows[start_a + 3:start_a + 6] == arm_a and rows[start_b + 3:start_b + 6] == arm_b
    assert ["wrong_tool", "4"] in rows and ["run_error", "1"] in rows
    assert rows[start_a + 1] == ["group", "passed", "infra", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"]
    assert "infra" not in rows[start_b + 1]  # only an arm with runs not scored has the column
    assert ["h/y", "3", "1", "50%", "(9%–91%)", "1.00", "0.00", "-", "-", "flaky"] in rows  # pass@2, pass^2 of 2 scored
    comparison = rows[rows.index(["Comparison"]):]
    for row in (["infra", "errors", "1", "0"], ["pass", "rate", "(95%", "CI)", "60%", "(23%–88%)", "67%", "(30%–90%)"],
                ["pass^2", "0.17", "0.50"], ["calls", "/", "run", "2.4", "2.2"], ["tokens", "/", "run", "120", "85"],
                ["time", "/", "run", "1.30s", "1.33s"], ["tokens", "/", "pass", "200", "128"]):
        assert row in comparison
    assert "gate failed: h/y [scripted · b]: 1/3 passed, needs 50% (agent)" in out.splitlines()
    assert "gate failed: h/y [scripted · a]: 1/3 passed, needs 50% (infrastructure)" in out.splitlines()

    code, out, _ = cli_output(["report", str(writer.path), "--output", "json"])
    shown = json.loads(out)
    assert code == 0 and (shown["overall"], shown["arms"], shown["cells"]) == (report["overall"], report["arms"], report["cells"])


def test_a_version_1_results_folder_is_still_read_and_resumed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    legacy = json.loads(LEGACY.read_text())
    folder = tmp_path / "results" / legacy["folder"]
    (folder / RUNS_DIR).mkdir(parents=True)
    for name, document in legacy["runs"].items():
        (folder / RUNS_DIR / name).write_text(json.dumps(document))
    (folder / REPORT_FILE).write_text(json.dumps(legacy["report"]))
    assert {d["schema_version"] for d in [legacy["report"], *legacy["runs"].values()]} == {1}
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, err = cli_output(["report", str(folder)])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:7] == ["PASS v1/ok #1", "PASS v1/ok #2", "FAIL v1/bad #1", "  out.txt does not exist",
                         "FAIL v1/bad #2", "  out.txt does not exist", "2/4 passed"]
    assert ["v1", "2/4", "50%", "-", "0.50", "-", "2", "0", "0", "-"] in [line.split()[:-1] for line in lines]
    assert lines[-1] == "gate failed: v1/bad [scripted · default]: 0/2 passed, needs 50% (agent)"  # its v1 gate
    code, out, _ = cli_output(["report", str(folder), "--output", "json"])
    document = json.loads(out)
    assert list(Draft202012Validator(SCHEMA).iter_errors(document)) == []
    assert (document["schema_version"], document["overall"]["passed"], document["overall"]["calls_total"]) == (2, 2, 2)
    assert [c["gate"]["threshold"] for c in document["cells"]] == [0.5, 0.5]

    (folder / RUNS_DIR / "0004-v1-bad-scripted-default-r2.json").unlink()  # --resume runs just what is missing
    (tmp_path / "v1.yml").write_text(legacy["cases"])
    argv = ["run", str(tmp_path / "v1.yml"), "--runs", "2", "--min-pass-rate", "0.5", "--resume", str(folder),
            "--results", str(tmp_path / "again")]
    code, out, _ = cli_output(argv)
    assert code == 1 and out.splitlines()[:4] == [
        "resuming: 3 of 4 runs are done already", "FAIL v1/bad #2", "  out.txt does not exist", "2/4 passed"]
    assert out.splitlines()[-1] == lines[-1]
    (resumed,) = (tmp_path / "again").glob(f"*/{REPORT_FILE}")
    runs = [json.loads(path.read_text()) for path in sorted(resumed.parent.glob("runs/*.json"))]
    assert [(run["case"], run["status"], run["schema_version"]) for run in runs] == [
        ("v1/ok", "pass", 2), ("v1/ok", "pass", 2), ("v1/bad", "fail", 2), ("v1/bad", "fail", 2)]  # the new folder is version 2
    again = json.loads(resumed.read_text())
    assert (again["schema_version"], again["overall"]["runs"], again["overall"]["passed"]) == (2, 4, 2)


_run = st.tuples(st.sampled_from([PASS, FAIL, ERROR]), st.integers(0, 4),
                 st.none() | st.tuples(st.integers(0, 500), st.integers(0, 500)), st.integers(0, 40))


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.tuples(st.sampled_from(["g/x", "g/z", "h/y"]), st.sampled_from(["a", "b", "c"])),
                       st.lists(_run, min_size=1, max_size=4), min_size=1, max_size=6))
def test_every_level_adds_up_and_the_report_fits_its_schema(matrix: dict[tuple[str, str], list[tuple]]) -> None:
    records = []
    for (case, prompt), runs in matrix.items():
        for index, (status, calls, tokens, tenths) in enumerate(runs):
            steps = [Step(0, f"c{i}", "bash", {"command": "ls"}, "", False, 0.0) for i in range(calls)]
            used = Tokens(tokens[0], tokens[1], sum(tokens)) if tokens else Tokens()
            records.append(record(case, status, index, prompt, steps=steps, tokens=used, duration=tenths / 10))
    model = aggregate(records)
    for level, parts in [(model.overall, [a.figures for a in model.arms]),
                         *[(a.figures, list(a.groups.values())) for a in model.arms],
                         *[(a.figures, [c.figures for c in model.cells if c.arm == a.label]) for a in model.arms]]:
        for name in ("runs", "passed", "failed", "errored", "infra_errors", "calls_total", "errors_total"):
            assert getattr(level, name) == sum(getattr(p, name) for p in parts), name
        known = [p.tokens.total_tokens for p in parts if p.tokens.total_tokens is not None]
        assert level.tokens.total_tokens == (sum(known) if known else None)
        assert level.duration_total == pytest.approx(sum(p.duration_total for p in parts))
        assert level.passed + level.failed + level.errored == level.runs
    document = report_document(model, evaluate(model.cells, {}), records, 0, {"run_id": "20250314T092653Z-3fa2c1"})
    assert list(Draft202012Validator(SCHEMA).iter_errors(json.loads(json.dumps(document)))) == []
