"""``tooltrial run`` with repeats and arms: comparison, gates and exit codes, results folder, report, JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from jsonschema import Draft202012Validator

from tests.helpers import ROOT, run_cli, run_output

GOOD = """\
- id: hello
  turns: [Write hello to out.txt]
  expect:
    files: {out.txt: {equals: "hello\\n"}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: "hello\\n"}}]
    - content: Wrote out.txt.
- id: answer
  turns: [What is 6 times 7?]
  expect: {response_contains: "42"}
  script: [{content: "42"}]
"""

WRONG = GOOD.replace('response_contains: "42"', 'response_contains: "43"')

GATED = """\
- id: sometimes
  runs: 4
  min_pass_rate: 0
  turns: [anything]
  expect: {response_contains: never}
  script: [{content: nope}]
"""

DOWN = """\
- id: no-setup
  setup: [exit 7]
  turns: [anything]
  script: [{content: hi}]
"""



def _schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((ROOT / "schemas" / name).read_text()))


def test_two_prompts_with_repeats(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(GOOD)
    results, junit, report = tmp_path / "results", tmp_path / "out.xml", tmp_path / "report.json"
    done = run_cli(
        "run", str(tmp_path / "good.yml"), "--runs", "3", "-P", "prompts/default.j2", "-P", "prompts/terse.j2",
        "--results", str(results), "--junit", str(junit), "--report", str(report),
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "PASS good/hello #1 [scripted · default]"
    assert "12/12 passed" in lines
    assert "Runs per case: scripted · terse" in lines and "Comparison" in lines
    assert any(line.startswith("pass^3 ") for line in lines)
    verdict = lines.index("scripted · terse vs scripted · default: same result on all 6 paired runs: no difference")
    assert lines[verdict + 1:] == [  # the differences with their intervals (tests/test_comparing_stats.py)
        ("  pass rate: scripted · terse - scripted · default = +0.00 (-0.39 to +0.39), exact McNemar p = 1; "
         "no pair disagreed: the power cannot be estimated"),
        "  outcome mean: scripted · terse - scripted · default = +0.00 (+0.00 to +0.00), paired bootstrap",
    ]
    (folder,) = results.iterdir()
    assert run_output(done).strip() == f"results: {folder}"
    run_files = sorted((folder / "runs").iterdir())
    assert len(run_files) == 12 and run_files[0].name == "0001-good-hello-scripted-default-r1.json"
    for path in run_files:
        _schema("run.schema.json").validate(json.loads(path.read_text()))
    document = json.loads((folder / "report.json").read_text())
    _schema("report.schema.json").validate(document)
    assert json.loads(report.read_text()) == document
    assert [arm["arm"] for arm in document["arms"]] == ["scripted · default", "scripted · terse"]
    assert [document["overall"][k] for k in ("passed", "failed", "errored")] == [12, 0, 0]
    assert document["run_id"] == folder.name and document["results"] == str(folder) and document["exit_code"] == 0
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert [(s.get("name"), s.get("tests"), s.get("failures")) for s in suites] == [
        ("scripted · default", "2", "0"), ("scripted · terse", "2", "0"),
    ]


def test_case_runs_and_min_pass_rate_hold_the_gate(tmp_path: Path) -> None:
    (tmp_path / "gated.yml").write_text(GATED)
    done = run_cli("run", str(tmp_path / "gated.yml"), "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stdout  # 0/4 passed, but the case asks for 0%
    assert "0/4 passed" in done.stdout.splitlines()


def test_suite_min_pass_rate_fails_the_run(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(WRONG)
    done = run_cli("run", str(tmp_path / "good.yml"), "--min-pass-rate", "0.5", "--runs", "2", "--results", str(tmp_path / "r"))
    assert done.returncode == 1
    assert "gate failed: good/answer [scripted · default]: 0/2 passed, needs 50% (agent)" in done.stdout.splitlines()


def test_infrastructure_errors_alone_exit_6(tmp_path: Path) -> None:
    (tmp_path / "down.yml").write_text(DOWN)
    (tmp_path / "good.yml").write_text(GOOD)
    only_down = run_cli("run", str(tmp_path / "down.yml"), "--results", str(tmp_path / "r"))
    assert only_down.returncode == 6
    assert only_down.stdout.splitlines()[0] == "ERROR down/no-setup: setup command failed (exit 7): exit 7"
    (tmp_path / "bad.yml").write_text(WRONG)
    with_failure = run_cli("run", str(tmp_path / "down.yml"), str(tmp_path / "bad.yml"), "--results", str(tmp_path / "r"))
    assert with_failure.returncode == 1


def test_json_output_is_the_report_with_every_run(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(GOOD)
    done = run_cli("run", str(tmp_path / "good.yml"), "--output", "json", "--results", str(tmp_path / "r"))
    document = json.loads(done.stdout)
    _schema("report.schema.json").validate(document)
    assert [r["case"] for r in document["runs"]] == ["good/hello", "good/answer"]
    assert run_output(done).splitlines()[:3] == ["PASS good/hello", "PASS good/answer", "2/2 passed"]
    assert "results:" not in done.stderr  # the path is in the JSON


def test_bad_min_pass_rate_is_a_usage_error() -> None:
    done = run_cli("run", "--min-pass-rate", "1.5")
    assert done.returncode == 4 and "must be between 0 and 1" in done.stderr


def test_results_dir_from_the_project_config(tmp_path: Path) -> None:
    (tmp_path / "tooltrial.yml").write_text("results_dir: saved\n")
    done = run_cli("run", "cases/fs.yml", "-c", "fs/read-file-lines", "--config", str(tmp_path / "tooltrial.yml"))
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "saved").iterdir()
    assert (folder / "report.json").is_file()
    assert f"results: {folder}" in done.stderr
