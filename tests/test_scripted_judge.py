"""The scripted judge (``scripted-judge:FILE``): calibration, marks and judge noise with no server at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli, run_output

RULES = """\
- when: "Hello|Hi"
  scores: [0.6, 0.8, 1.0]
  reasoning: It greets the user.
- when: "^What"
  score: 0.2
  reasoning: Curt.
"""


def _rules(tmp_path: Path, text: str = RULES) -> str:
    (tmp_path / "judge.yml").write_text(text, encoding="utf-8")
    return "scripted-judge:judge.yml"


def test_calibrate_with_the_scripted_judge(tmp_path: Path) -> None:
    judge = _rules(tmp_path)
    (tmp_path / "labels.yml").write_text(
        "rubric: The reply greets the user.\nitems:\n"
        "  - {reply: Hello!, verdict: pass}\n  - {reply: What., verdict: fail}\n"
        "  - {reply: Hi there, verdict: fail}\n  - {reply: Nothing matches, verdict: pass}\n", encoding="utf-8")
    done = run_cli("judge", "calibrate", "labels.yml", "-j", judge, "--calibrations", "c.json", cwd=tmp_path)
    assert done.returncode == 0, run_output(done)
    lines = done.stdout.splitlines()
    # three usable: (pass, pass), (fail, fail), (fail, pass); p_o = 2/3, p_e = 1/3 * 2/3 + 2/3 * 1/3 = 4/9, kappa 0.4
    assert lines[1:4] == ["  items:     3", "  accuracy:  0.667 (2 of 3 agreed)",
                          "  kappa:     0.400 (95% interval -0.368 to 1.000)"]
    assert "  disagreed: 3: person fail, judge pass (score 0.60: It greets the user.)" in lines
    assert "  no verdict: 4: no usable verdict: no JSON object in 'no rule of scripted-judge:judge.yml matches the final reply'" in lines
    (kept,) = json.loads((tmp_path / "c.json").read_text())["calibrations"]
    assert kept["judge"] == judge and kept["kappa"] == pytest.approx(0.4)


def test_judge_repeats_with_the_scripted_judge_play_its_noise(tmp_path: Path) -> None:
    judge = _rules(tmp_path)
    (tmp_path / "greet.yml").write_text(
        "- id: hello\n  turns: [Greet the user]\n  expect:\n    judge: {rubric: The reply greets the user.}\n"
        "  script:\n    - content: Hello there.\n", encoding="utf-8")
    done = run_cli("run", "greet.yml", "-p", "scripted", "--judge", judge, "--runs", "2", "--judge-repeats", "3",
                   "--calibrations", "c.json", "--report", "report.json", "--results", "r", cwd=tmp_path)
    assert done.returncode == 0, run_output(done)
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["checks"][-1]["scores"] for r in report["runs"]] == [[0.6, 0.8, 1.0]] * 2  # each run asks afresh
    (noise,) = report["judges"]["noise"]
    assert (noise["judge_variance"], noise["run_variance"]) == (pytest.approx(0.04), 0.0)  # all the judge's own
    assert report["judges"]["uncalibrated_runs"] == 2


@pytest.mark.parametrize(("text", "expected"), [
    ("- {when: Hi, score: 2}\n", "judge.yml:1:3: [0]: give score: a number from 0 to 1, or scores: a list of them"),
    ("- {when: Hi, scor: 0.5}\n", "judge.yml:1:3: [0]: unknown key 'scor' (did you mean 'score'?)"),
    ("- {when: '(', score: 0.5}\n", "judge.yml:1:3: [0]: when: '(' is not a regular expression"),
    ("{}\n", "judge.yml:1:1: expected a list of rules"),
])
def test_bad_rules_are_told_before_anything_runs(tmp_path: Path, text: str, expected: str) -> None:
    judge = _rules(tmp_path, text)
    (tmp_path / "labels.yml").write_text("rubric: R\nitems:\n  - {reply: Hi, verdict: pass}\n", encoding="utf-8")
    done = run_cli("judge", "calibrate", "labels.yml", "-j", judge, "--calibrations", "c.json", cwd=tmp_path)
    assert done.returncode == 4 and expected in run_output(done), run_output(done)


def test_a_negative_kappa_is_recorded_and_read_back(tmp_path: Path) -> None:
    from runner.spec.fingerprint import digest
    judge = _rules(tmp_path)
    rubric = "The reply greets the user."
    (tmp_path / "c.json").write_text(json.dumps({"calibrations": [
        {"rubric": digest(rubric), "judge": judge, "items": 10, "agreed": 3, "accuracy": 0.3, "kappa": -0.25}]}))
    (tmp_path / "greet.yml").write_text(
        f"- id: hello\n  turns: [Greet the user]\n  expect:\n    judge: {{rubric: {rubric}, min_kappa: -0.5}}\n"
        "  script:\n    - content: Hello there.\n", encoding="utf-8")
    done = run_cli("run", "greet.yml", "-p", "scripted", "--judge", judge, "--calibrations", "c.json",
                   "--results", "r", cwd=tmp_path)
    assert done.returncode == 0, run_output(done)
    again = run_cli("report", str(next((tmp_path / "r").iterdir())), "--output", "json", cwd=tmp_path)
    assert again.returncode == 0, run_output(again)
    (mark,) = json.loads(again.stdout)["judges"]["calibrations"]
    assert mark == {"judge": judge, "status": "calibrated", "kappa": -0.25, "min_kappa": -0.5, "runs": 1}


def test_the_otel_run_span_carries_the_judge_calibration(tmp_path: Path) -> None:
    judge = _rules(tmp_path)
    (tmp_path / "greet.yml").write_text(
        "- id: hello\n  turns: [Greet the user]\n  expect:\n    judge: {rubric: The reply greets the user.}\n"
        "  script:\n    - content: Hello there.\n", encoding="utf-8")
    done = run_cli("run", "greet.yml", "-p", "scripted", "--judge", judge, "--calibrations", "c.json",
                   "--results", "r", "--otel", "spans.jsonl", cwd=tmp_path)
    assert done.returncode == 0, run_output(done)
    text = (tmp_path / "spans.jsonl").read_text()
    assert ('{"key":"tooltrial.judge.calibration","value":{"arrayValue":{"values":[{"stringValue":"uncalibrated"}]}}}'
            in text)
