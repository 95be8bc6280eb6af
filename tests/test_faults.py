"""Fault injection: faults applied where tool results are made, recorded per step, scored per run and arm, and the
robustness table of each case against its clean twin, all through the CLI on the bundled robustness suite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.kinds import FailureCause
from runner.run.faulted import FaultUse
from runner.run.record import RunRecord
from runner.run.trajectory import Step
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.scoring.pairs import comparisons
from runner.scoring.robustness import fill_faults, recoveries, robustness_rows
from runner.spec.faults import faults_of
from runner.spec.fingerprint import digest
from runner.tools.base import ToolContext, ToolResult
from runner.tools.faults import Injector, draw
from tests.fault_cases import SUITE, naive_suite
from tests.helpers import GOOD, ROOT, run_cli
from tests.mcp_http import http_server  # noqa: F401 (the fixture)


def _runs(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Each arm's run files of the one results folder under ``folder``, by arm label, in file order."""
    (results,) = folder.iterdir()
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((results / "runs").iterdir()):
        record = json.loads(path.read_text())
        label = " · ".join([record["provider"], record["prompt"], *(
            [f"faults {record['faults']['arm']}"] if record["faults"] and record["faults"]["arm"] else [])])
        by_arm.setdefault(label, []).append(record)
    return by_arm


def _report(folder: Path) -> dict[str, Any]:
    """report.json of the one results folder under ``folder``, it and each run file held to their schemas."""
    (results,) = folder.iterdir()
    for path in (results / "runs").iterdir():
        _schema("run.schema.json").validate(json.loads(path.read_text()))
    document = json.loads((results / "report.json").read_text())
    _schema("report.schema.json").validate(document)
    return document


def _schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((ROOT / "schemas" / name).read_text()))


def test_the_robustness_suite_passes_offline_each_run_recording_the_fault_it_got(tmp_path: Path) -> None:
    done = run_cli("run", str(SUITE), "-p", "scripted", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert "6/6 passed" in done.stdout
    runs = _runs(tmp_path / "r")["scripted · default"]
    got = {r["case"]: ([s["fault"] for s in r["steps"]], r["faults"]) for r in runs}
    use = {"arm": None, "seed": 0, "received": 1, "recovered": True, "calls_to_recover": 1}
    assert got == {
        "robustness/read-error-retry": (["error", None], {**use, "retries": 1}),
        "robustness/grep-timeout-fallback": (["timeout", None], {**use, "retries": 0}),
        "robustness/search-truncated": (["truncated", None], {**use, "retries": 1}),
        "robustness/read-empty": (["empty", None], {**use, "retries": 0}),
        "robustness/shell-stale-output": (["garbage", None], {**use, "retries": 1}),
        "robustness/shell-error-retry": (["error", None], {**use, "retries": 1}),
    }
    first = {r["case"]: r["steps"][0]["result"] for r in runs}
    assert first["robustness/read-error-retry"] == "Error: EIO: input/output error reading data/items.csv"
    assert first["robustness/grep-timeout-fallback"] == "Error: grep timed out after 0.05 s and was cut"
    assert first["robustness/search-truncated"] == "stockroom/__init__.py:4:from s"  # cut at 30 characters
    assert first["robustness/read-empty"] == ""
    assert first["robustness/shell-stale-output"] == "make: Nothing to be done for 'report'."
    timed_out = next(r for r in runs if r["case"] == "robustness/grep-timeout-fallback")["steps"][0]
    assert timed_out["duration"] >= 0.05
    document = _report(tmp_path / "r")
    assert document["robustness"] == {
        "recovery": [{"arm": "scripted · default", "faulted": 6, "recovered": 6, "not_handled": 0,
                      "retries": pytest.approx(4 / 6), "calls_to_recover": 1.0, "recovery": 1.0}],
        "table": []}


def test_the_naive_agent_fails_every_case_with_fault_not_handled_and_the_robustness_table_shows_it(
        tmp_path: Path) -> None:
    done = run_cli("run", str(naive_suite(tmp_path)), "-p", "scripted", "--faults", "case",
                   "--results", str(tmp_path / "r"))
    assert done.returncode == 1, done.stderr
    runs = _runs(tmp_path / "r")
    faulty = runs["scripted · default · faults case"]
    assert [(r["status"], r["failure"]) for r in faulty] == [("fail", "fault_not_handled")] * 6
    assert [r["faults"]["recovered"] for r in faulty] == [False] * 6
    assert [r["faults"]["calls_to_recover"] for r in faulty] == [None] * 6
    clean = runs["scripted · default · faults off"]
    assert [r["faults"]["received"] for r in clean] == [0] * 6
    assert all(s["fault"] is None for r in clean for s in r["steps"])
    assert [r["failure"] for r in clean] == ["good_process_bad_outcome"] * 6  # no fault: a wrong answer of its own
    document = _report(tmp_path / "r")
    assert document["robustness"]["recovery"] == [
        {"arm": "scripted · default · faults case", "faulted": 6, "recovered": 0, "not_handled": 6,
         "retries": 0.0, "calls_to_recover": None, "recovery": 0.0}]
    table = document["robustness"]["table"]
    assert [(row["case"], row["faults"], row["clean_passed"], row["clean_runs"], row["passed"], row["runs"])
            for row in table][:1] == [("robustness/read-error-retry", "case", 0, 1, 0, 1)]
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    start = lines.index("Faults")
    assert lines[start:start + 13] == [
        "Faults",
        "arm faulted runs recovered fault_not_handled retries / run calls to recover",
        "─" * len(done.stdout.splitlines()[start + 2]),
        "scripted · default · faults case 6 0/6 0% 6 0.0 -",
        "",
        "Robustness (pass rate with faults vs the clean twin, faults off)",
        "case arm faults clean faulty difference",
        "─" * len(done.stdout.splitlines()[start + 7]),
        *(f"robustness/{case} scripted · default case 0/1 0/1 +0 pts" for case in (
            "read-error-retry", "grep-timeout-fallback", "search-truncated", "read-empty", "shell-stale-output"))]
    assert document["comparisons"][0]["a"] == "scripted · default · faults off"


def test_a_profile_is_a_second_arm_beside_the_clean_twin_with_the_paired_statistics(tmp_path: Path) -> None:
    suite = tmp_path / "g.yml"
    suite.write_text(GOOD.split("- id: count-lines")[0])  # a write the profile's fault stops
    profile = tmp_path / "broken-writes.yml"
    profile.write_text("seed: 3\nfaults:\n  - {tool: write_file, kind: error}\n")
    done = run_cli("run", str(suite), "-p", "scripted", "--faults", str(profile), "--runs", "3",
                   "--results", str(tmp_path / "r"), "--summary-md", str(tmp_path / "summary.md"))
    assert done.returncode == 1, done.stderr
    runs = _runs(tmp_path / "r")
    assert sorted(runs) == ["scripted · default · faults broken-writes", "scripted · default · faults off"]
    faulty = runs["scripted · default · faults broken-writes"]
    assert [r["steps"][0]["result"] for r in faulty] == ["Error: write_file: temporarily unavailable"] * 3
    assert [r["failure"] for r in faulty] == ["fault_not_handled"] * 3
    assert [r["faults"]["seed"] for r in faulty] == [3] * 3
    assert [r["status"] for r in runs["scripted · default · faults off"]] == ["pass"] * 3
    assert faulty[0]["provenance"]["faults"] is not None and runs["scripted · default · faults off"][0][
        "provenance"]["faults"] is None
    document = _report(tmp_path / "r")
    assert [(r["clean_passed"], r["clean_runs"], r["passed"], r["runs"], r["difference"])
            for r in document["robustness"]["table"]] == [(3, 3, 0, 3, -1.0)]
    paired = document["comparisons"][0]
    assert (paired["a"], paired["b"]) == ("scripted · default · faults off", "scripted · default · faults broken-writes")
    assert "-100 pts" in done.stdout and "exact McNemar" in done.stdout
    summary = (tmp_path / "summary.md").read_text()
    assert ("| scripted · default · faults broken\\-writes | 3 | 0 \\(0%\\) | 3 | 0.0 | — |\n" in summary)
    assert "| g\\/write\\-hello | scripted · default | broken\\-writes | 3/3 | 0/3 | \\-100 pts |\n" in summary


PROBABLE = """\
- id: flaky-reads
  turns: [Read a.txt five times.]
  files: {a.txt: "alpha\\n"}
  faults:
    - {tool: read_file, kind: error, probability: 0.5}
  script:
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - content: done
"""


def test_a_seeded_probabilistic_fault_replays_the_same_faults_on_the_same_run_number(tmp_path: Path) -> None:
    (tmp_path / "g.yml").write_text(PROBABLE)
    seen = []
    for name in ("one", "two"):
        done = run_cli("run", "g.yml", "--runs", "3", "--results", name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        seen.append({r["run"]: [s["fault"] for s in r["steps"]] for r in _runs(tmp_path / name)["scripted · default"]})
    expected = {run: ["error" if draw(0, f"g/flaky-reads#{run}", "read_file", n, 0) < 0.5 else None
                      for n in range(1, 6)] for run in (1, 2, 3)}
    assert seen[0] == seen[1] == expected
    assert len({tuple(faults) for faults in expected.values()}) > 1  # the runs differ from one another


def _record(steps: list[Step], status: str, failure: FailureCause | None) -> RunRecord:
    record = RunRecord("g/x", "scripted", "default", status=status, steps=steps, failure=failure)  # type: ignore[arg-type]
    record.faults = FaultUse(None)
    return record


def _step(name: str, fault: str | None = None, error: bool = False) -> Step:
    return Step(0, "c", name, {}, "x", error, 0.0, fault=fault)


def test_run_metrics_on_a_hand_computed_example() -> None:
    # grep faulted twice, then read_file errors (no fault), then answers: 2 faults; one retry of grep after its
    # fault (the second grep; read_file was never faulted); the first clean answer is the 3rd call after the fault.
    passed = _record([_step("grep", "error", True), _step("grep", "timeout", True), _step("read_file", error=True),
                      _step("read_file"), _step("grep")], "pass", None)
    fill_faults(passed)
    assert passed.faults == FaultUse(None, 0, received=2, recovered=True, retries=2, calls_to_recover=3)
    gave_up = _record([_step("bash", "empty")], "fail", FailureCause.GOOD_PROCESS_BAD_OUTCOME)
    fill_faults(gave_up)
    assert gave_up.failure == FailureCause.FAULT_NOT_HANDLED
    assert gave_up.faults == FaultUse(None, 0, received=1, recovered=False, retries=0, calls_to_recover=None)
    unrelated = _record([_step("bash", "error", True), _step("bash")], "fail", FailureCause.GOOD_PROCESS_BAD_OUTCOME)
    fill_faults(unrelated)
    assert unrelated.failure == FailureCause.GOOD_PROCESS_BAD_OUTCOME  # it got a clean answer after the fault
    (arm,) = recoveries([passed, gave_up, unrelated])
    assert (arm.faulted, arm.recovered, arm.not_handled) == (3, 1, 1)
    assert arm.retries == pytest.approx((2 + 0 + 1) / 3) and arm.calls_to_recover == pytest.approx((3 + 1) / 2)
    assert arm.recovery == pytest.approx(1 / 3)


def test_the_robustness_table_pairs_each_case_with_its_clean_twin() -> None:
    runs = []
    for arm, statuses in (("off", ["pass", "pass", "fail"]), ("flaky", ["pass", "fail", "fail"])):
        for status in statuses:
            record = _record([], status, None)
            record.faults = FaultUse(arm)
            runs.append(record)
    (row,) = robustness_rows(runs)
    assert (row.case, row.base, row.faults, row.clean_passed, row.clean_runs, row.passed, row.runs) == (
        "g/x", "scripted · default", "flaky", 2, 3, 1, 3)
    assert row.difference == pytest.approx(1 / 3 - 2 / 3)


def _injector(tmp_path: Path, *faults: dict[str, Any]) -> Injector:
    context = ToolContext(tmp_path, Sandbox(), scrubbed_env(tmp_path), 5.0)
    return Injector(faults_of(faults), 0, "g/x#1", context)


@pytest.mark.parametrize(("fault", "real", "got"), [
    ({"kind": "garbage"}, '{"items": ["a", "b"]}', '{"result": "{\\"items\\": [\\"a\\", \\"b\\"]}'),
    ({"kind": "garbage", "form": "wrong_types"}, '{"n": 3, "ok": true, "name": "ab", "tags": [1]}',
     '{"n": "3", "ok": "yes", "name": 2, "tags": 1}'),
    ({"kind": "garbage", "form": "wrong_types"}, "plain text", '{"result": 10}'),
    ({"kind": "truncated", "at": 4}, "abcdefgh", "abcd"),
    ({"kind": "empty"}, "abcdefgh", ""),
    ({"kind": "slow", "seconds": 0.01}, "abc", "abc"),
    ({"kind": "error"}, "abc", "Error: t: temporarily unavailable"),
])
def test_each_kind_of_fault_makes_its_result(tmp_path: Path, fault: dict[str, Any], real: str, got: str) -> None:
    injector = _injector(tmp_path, {"tool": "t", **fault})
    result = injector.apply("t", {}, lambda: ToolResult(real))
    assert (result.content, result.fault) == (got, fault["kind"])


def test_a_stale_result_is_the_tools_previous_one_and_faults_fit_by_call_number_and_arguments(tmp_path: Path) -> None:
    injector = _injector(tmp_path, {"tool": "t", "kind": "garbage", "form": "stale", "call": [2, 4]},
                         {"tool": "*", "kind": "empty", "when": {"path": "b"}})
    results = [injector.apply("t", {"path": p}, lambda p=p: ToolResult(f"real {p}")) for p in ("a", "a", "b", "a")]
    assert [(r.content, r.fault) for r in results] == [
        ("real a", None), ("real a", "garbage"), ("", "empty"), ("real b", "garbage")]


@pytest.mark.parametrize(("profile", "message"), [
    ("faults:\n  - {tool: grep, kind: explode}\n", "broken.yml:2:"),
    ("faults:\n  - {tool: grep, kind: error, probabilty: 0.5}\n", "probability"),
    ("seed: -1\nfaults: []\n", "broken.yml:1:"),
])
def test_a_bad_profile_is_refused_at_its_file_line_and_column(tmp_path: Path, profile: str, message: str) -> None:
    (tmp_path / "broken.yml").write_text(profile)
    done = run_cli("run", str(SUITE), "--faults", "broken.yml", "--results", "r", cwd=tmp_path)
    assert done.returncode == 4 and message in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "r").exists()


def test_a_missing_profile_and_a_value_given_twice_are_refused(tmp_path: Path) -> None:
    done = run_cli("run", str(SUITE), "--faults", "nope.yml", cwd=tmp_path)
    assert done.returncode == 4 and "cannot read the fault profile" in done.stderr and "nope.yml" in done.stderr
    done = run_cli("run", str(SUITE), "--faults", "off", "--faults", "off", cwd=tmp_path)
    assert done.returncode == 4 and "--faults off is given twice" in done.stderr


def test_a_case_fault_of_an_unknown_kind_is_an_error_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "g.yml").write_text(PROBABLE.replace("kind: error", "kind: eror"))
    done = run_cli("validate", "g.yml", cwd=tmp_path)
    assert done.returncode == 4 and "g.yml:5:" in done.stderr and "eror" in done.stderr, done.stderr


MOCKED = """\
- id: weather
  turns: [Weather in Paris?]
  mocks:
    - {name: get_weather, responses: [{result: sunny}]}
  faults:
    - {tool: get_weather, kind: error, message: upstream 503, call: 1}
  script:
    - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
    - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
    - content: sunny
  expect:
    response_contains: [sunny]
"""


def test_a_mock_tools_result_gets_its_fault_too(tmp_path: Path) -> None:
    (tmp_path / "g.yml").write_text(MOCKED)
    done = run_cli("run", "g.yml", "--results", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (record,) = _runs(tmp_path / "r")["scripted · default"]
    assert [(s["result"], s["fault"]) for s in record["steps"]] == [("Error: upstream 503", "error"), ("sunny", None)]


@pytest.mark.parametrize(("fault", "code", "message"), [
    ("{tool: raed_file, kind: error}", 4,
     "error: g.yml:5:14: faults[0].tool: unknown tool 'raed_file' (did you mean 'read_file'?)\n"),
    ("{tool: read_file, kind: error, when: {pth: a.txt}}", 4,
     ("error: g.yml:5:45: faults[0].when: read_file has no parameter 'pth' (its schema allows no other), so no call "
      "can match (did you mean 'path'?)\n")),
    ("{tool: bash, kind: error}", 0,
     ("warning: g.yml:5:14: faults[0].tool: tool 'bash' is denied by the case, so its fault never fires "
      "(remove the fault, or offer the tool)\n")),
])
def test_a_fault_names_a_tool_the_case_can_call_and_its_parameters(tmp_path: Path, fault: str, code: int,
                                                                   message: str) -> None:
    text = PROBABLE.replace("{tool: read_file, kind: error, probability: 0.5}", fault).replace(
        "  script:", "  deny: [bash]\n  script:")
    (tmp_path / "g.yml").write_text(text)
    done = run_cli("validate", "g.yml", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (code, message)


def test_fault_arms_resume_and_merge_as_arms_of_their_own(tmp_path: Path) -> None:
    (tmp_path / "g.yml").write_text(PROBABLE)
    for shard in ("1/2", "2/2"):
        done = run_cli("run", "g.yml", "--faults", "case", "--runs", "5", "--shard", shard,  # runs 1-4, then 5
                       "--results", f"s{shard[0]}", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    (first,) = (tmp_path / "s1").iterdir()
    done = run_cli("run", "g.yml", "--faults", "case", "--runs", "5", "--shard", "1/2", "--resume", str(first),
                   "--results", "again", cwd=tmp_path)
    assert done.returncode == 0 and "resuming: 8 of 8 runs are done already" in done.stdout, done.stdout
    (second,) = (tmp_path / "s2").iterdir()
    done = run_cli("merge", str(first), str(second), "-o", "merged", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (merged,) = (tmp_path / "merged").glob("**/report.json")
    document = json.loads(merged.read_text())
    assert sorted((r["run"], r["faults"]["arm"]) for r in document["runs"]) == [
        (run, arm) for run in range(1, 6) for arm in ("case", "off")]
    assert [(r["clean_runs"], r["runs"]) for r in document["robustness"]["table"]] == [(5, 5)]


def test_an_edited_fault_profile_is_a_changed_input_of_its_arm(tmp_path: Path) -> None:
    (tmp_path / "g.yml").write_text(GOOD.split("- id: count-lines")[0])
    profile = tmp_path / "flaky.yml"
    folders = []
    for message in ("disk full", "disk on fire"):
        profile.write_text(f"faults:\n  - {{tool: write_file, kind: error, message: {message}}}\n")
        done = run_cli("run", "g.yml", "--faults", "flaky.yml", "--results", message.replace(" ", "-"), cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        folders.append(next((tmp_path / message.replace(" ", "-")).iterdir()))
    document = json.loads(run_cli("report", *map(str, folders), "--output", "json").stdout)
    assert document["changed"] == [{"name": "scripted · default · faults flaky", "change": "fault profile flaky changed"}]
    assert document["left_out"] == ["g/write-hello [scripted · default · faults flaky]"]
    _schema("report.schema.json").validate(document)
    report = _report(tmp_path / "disk-full")
    arms = {arm["arm"]: arm["provenance"] for arm in report["arms"]}
    assert "faults" not in arms["scripted · default · faults off"]
    assert arms["scripted · default · faults flaky"]["faults"] == digest(
        {"faults": [{"tool": "write_file", "kind": "error", "message": "disk full"}]})  # what the file holds


def test_the_live_view_names_each_calls_fault(tmp_path: Path) -> None:
    done = run_cli("run", str(SUITE), "-c", "robustness/read-empty", "--live", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert '  -> read_file {"path":"data/items.csv"}: ok, ' in done.stdout
    line = next(line for line in done.stdout.splitlines() if "-> read_file" in line)
    assert line.endswith("s [fault empty]")
    assert next(line for line in done.stdout.splitlines() if "-> bash" in line).endswith("s")


def test_record_refuses_fault_arms_before_any_run(tmp_path: Path) -> None:
    done = run_cli("run", str(SUITE), "--faults", "case", "--record", "rec", "--results", "r", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (4, (
        "error: --record cannot record fault arms: a recorded case replays its own faults, not a profile's "
        "(record without --faults (each case's own faults are recorded with it))\n"))
    assert not (tmp_path / "r").exists() and not (tmp_path / "rec").exists()


@pytest.mark.slow  # the MCP test server, which imports the SDK
def test_an_mcp_tools_result_gets_its_fault_too(tmp_path: Path, http_server: Any) -> None:  # noqa: F811
    (tmp_path / "remote.yml").write_text(f"""\
- id: sum
  turns: [Add 40 and 2.]
  mcp: [{{name: remote, url: "{http_server}"}}]
  tools: ["remote__*"]
  faults:
    - {{tool: remote__add, kind: garbage, form: wrong_types, call: 1}}
  expect:
    response_contains: ["42"]
  script:
    - tool_calls: [{{name: remote__add, arguments: {{a: 40, b: 2}}}}]
    - tool_calls: [{{name: remote__add, arguments: {{a: 40, b: 2}}}}]
    - content: "42"
""")
    done = run_cli("run", "remote.yml", "--results", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (record,) = _runs(tmp_path / "r")["scripted · default"]
    assert [(s["result"], s["fault"]) for s in record["steps"]] == [('"42"', "garbage"), ("42", None)]  # 42, a string
    assert record["faults"]["calls_to_recover"] == 1


def test_an_output_file_that_is_the_fault_profile_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.yml").write_text("faults: []\n")
    done = run_cli("run", str(SUITE), "--faults", "p.yml", "--report", "p.yml", "--results", "r", cwd=tmp_path)
    assert done.returncode == 4 and "error: --report p.yml is an input of this run" in done.stderr, done.stderr
    assert (tmp_path / "p.yml").read_text() == "faults: []\n"


def test_with_more_arms_each_fault_arm_is_compared_with_the_clean_twin_of_its_provider() -> None:
    runs = []
    for provider in ("a", "b"):
        for arm in ("off", "case"):
            record = _record([], "pass", None)
            record.provider, record.faults = provider, FaultUse(arm)
            runs.append(record)
    assert [(p.factor.title if p.factor else None, p.a, p.b) for p in comparisons(runs)] == [
        ("provider b vs a, prompt default, faults off", "a · default · faults off", "b · default · faults off"),
        ("provider b vs a, prompt default, faults case", "a · default · faults case", "b · default · faults case"),
        ("faults case vs off, prompt default, provider a", "a · default · faults off", "a · default · faults case"),
        ("faults case vs off, prompt default, provider b", "b · default · faults off", "b · default · faults case")]
