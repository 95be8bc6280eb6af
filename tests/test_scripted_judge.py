"""The scripted judge (``scripted-judge:FILE``): calibration, marks and judge noise with no server at all."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from runner.spec.fingerprint import digest
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
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "judge.yml").write_text(text, encoding="utf-8")
    return "scripted-judge:judge.yml"


def _identity(text: str = RULES) -> dict[str, str]:
    """What a scripted judge whose file holds ``text`` is: its calibrations' key is this one's fingerprint."""
    return {"provider": "scripted-judge", "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


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
    assert lines[1:5] == ["  items:     3", "  accuracy:  0.667 (2 of 3 agreed)",
                          "  kappa:     0.400 (95% interval -0.368 to 1.000)",
                          ("  min_kappa: 0.6 (tooltrial's default: substantial agreement, Landis and Koch 1977): "
                          "not reached, under-calibrated")]
    assert lines[9:] == [  # items with no id are named by their number and the line they start on
        "  disagreed: item 3 (labels.yml:5): person fail, judge pass (score 0.60: It greets the user.)",
        "  no verdict: item 4 (labels.yml:6): no rule of scripted-judge:judge.yml matches the final reply",
        f"kept in {Path('c.json')}"]
    (kept,) = json.loads((tmp_path / "c.json").read_text())["calibrations"]
    assert kept["judge"] == judge and kept["kappa"] == pytest.approx(0.4)
    assert (kept["judge_identity"], kept["judge_key"]) == (_identity(), digest(_identity()))


def test_a_judge_is_calibrated_by_what_it_is_not_by_its_name(tmp_path: Path) -> None:
    strict = "- {when: Hello, score: 0.9, reasoning: Greets.}\n- {score: 0.1, reasoning: No greeting.}\n"
    lenient = "- score: 0.9\n"  # passes anything, and gives no reasoning
    labels = "rubric: The reply greets the user.\nitems:\n  - {reply: Hello!, verdict: pass}\n  - {reply: What., verdict: fail}\n"
    case = ("- id: hello\n  turns: [Greet the user]\n  expect:\n    judge: {rubric: The reply greets the user.}\n"
            "  script:\n    - content: Hello there.\n")
    store = tmp_path / "c.json"
    for folder, rules in (("strict", strict), ("copy", strict), ("lenient", lenient)):
        _rules(tmp_path / folder, rules)
        (tmp_path / folder / "labels.yml").write_text(labels, encoding="utf-8")
        (tmp_path / folder / "greet.yml").write_text(case, encoding="utf-8")
    done = run_cli("judge", "calibrate", "labels.yml", "-j", "scripted-judge:judge.yml", "--calibrations", str(store),
                   cwd=tmp_path / "strict")
    assert done.returncode == 0, run_output(done)
    assert done.stdout.splitlines()[3:5] == [
        "  kappa:     1.000 (95% interval 1.000 to 1.000)",
        "  min_kappa: 0.6 (tooltrial's default: substantial agreement, Landis and Koch 1977): reached, calibrated"]

    def run(folder: str) -> tuple[int, str]:
        done = run_cli("run", "greet.yml", "-p", "scripted", "--judge", "scripted-judge:judge.yml", "--calibrations",
                       str(store), "--require-calibrated-judges", "--results", "r", cwd=tmp_path / folder)
        return done.returncode, run_output(done)

    assert run("copy")[0] == 0  # the same rules in another folder: the same judge
    assert run("lenient") == (4, ("error: --require-calibrated-judges: 1 judged case(s) have no calibrated judge: "
                              "greet/hello (judge scripted-judge:judge.yml: uncalibrated) (calibrate each judge on the "
                              "case's rubric: tooltrial judge calibrate LABELS.yml -j JUDGE (docs/judges.md), or give "
                              "--calibrations FILE)\n"))
    # calibrated, the lenient judge's kappa is undefined (it passes everything): under the default floor
    done = run_cli("judge", "calibrate", "labels.yml", "-j", "scripted-judge:judge.yml", "--calibrations", str(store),
                   cwd=tmp_path / "lenient")
    assert done.returncode == 0, run_output(done)
    assert done.stdout.splitlines()[1:5] + done.stdout.splitlines()[9:10] == [
        "  items:     2",
        "  accuracy:  0.500 (1 of 2 agreed)",
        ("  kappa:     undefined: the judge gave pass on every item, so the agreement is all chance (kappa needs "
        "both verdicts from each)"),
        ("  min_kappa: 0.6 (tooltrial's default: substantial agreement, Landis and Koch 1977): not reached, "
        "under-calibrated"),
        "  disagreed: item 2 (labels.yml:4): person fail, judge pass (score 0.90)"]
    assert run("lenient") == (4, ("error: --require-calibrated-judges: 1 judged case(s) have no calibrated judge: "
                              "greet/hello (judge scripted-judge:judge.yml: under-calibrated) (calibrate each judge on "
                              "the case's rubric: tooltrial judge calibrate LABELS.yml -j JUDGE (docs/judges.md), or "
                              "give --calibrations FILE)\n"))
    assert [e["judge_identity"] for e in json.loads(store.read_text())["calibrations"]] == [
        _identity(strict), _identity(lenient)]


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
    ("- {when: Hi, score: 2}\n", "judge.yml:1:21: [0].score: 2 is not a number from 0 to 1"),
    ("- {when: Hi, scor: 0.5}\n", "judge.yml:1:14: [0]: unknown key 'scor' (did you mean 'score'?)"),
    ("- {when: '(', score: 0.5}\n", "judge.yml:1:10: [0].when: '(' is not a regular expression"),
    ("- {when: Hi, scores: [0.5, true]}\n", "judge.yml:1:28: [0].scores[1]: true is not a number from 0 to 1"),
    ("- {score: 0.5, scores: [0.5]}\n", "judge.yml:1:16: [0]: give score or scores, not both"),
    ("{}\n", "judge.yml:1:1: expected a list of rules"),
])
def test_bad_rules_are_told_before_anything_runs(tmp_path: Path, text: str, expected: str) -> None:
    judge = _rules(tmp_path, text)
    (tmp_path / "labels.yml").write_text("rubric: R\nitems:\n  - {reply: Hi, verdict: pass}\n", encoding="utf-8")
    done = run_cli("judge", "calibrate", "labels.yml", "-j", judge, "--calibrations", "c.json", cwd=tmp_path)
    assert done.returncode == 4 and expected in run_output(done), run_output(done)


def test_a_reply_no_rule_matches_is_a_judge_error_with_the_judges_reason(tmp_path: Path) -> None:
    judge = _rules(tmp_path)
    (tmp_path / "greet.yml").write_text(
        "- id: hello\n  turns: [Greet the user]\n  expect:\n    judge: {rubric: The reply greets the user.}\n"
        "  script:\n    - content: Nothing to say.\n", encoding="utf-8")
    done = run_cli("run", "greet.yml", "-p", "scripted", "--judge", judge, "--calibrations", "c.json",
                   "--report", "report.json", "--results", "r", cwd=tmp_path)
    check = json.loads((tmp_path / "report.json").read_text())["runs"][0]["checks"][-1]
    assert (check["error_kind"], check["message"]) == (
        "judge_error", ("judge scripted-judge:judge.yml gave no verdict: no rule of scripted-judge:judge.yml matches "
        "the final reply")), run_output(done)


def test_every_wrong_rule_is_told_at_once_each_at_its_own_key(tmp_path: Path) -> None:
    judge = _rules(tmp_path, '- when: "(("\n  score: 1.5\n- nope\n- {when: Hi}\n')
    (tmp_path / "labels.yml").write_text("rubric: R\nitems:\n  - {reply: Hi, verdict: pass}\n", encoding="utf-8")
    done = run_cli("judge", "calibrate", "labels.yml", "-j", judge, "--calibrations", "c.json", cwd=tmp_path)
    hint = " (each rule: {when?: REGEX, score: 0..1 or scores: [0..1, ...], reasoning?: TEXT}; see docs/judges.md)"
    assert (done.returncode, run_output(done)) == (4, "".join(f"error: {line}{hint}\n" for line in (
        "judge.yml:1:9: [0].when: '((' is not a regular expression: missing ) at position 2",
        "judge.yml:2:10: [0].score: 1.5 is not a number from 0 to 1",
        "judge.yml:3:3: [1]: a rule is a mapping",
        "judge.yml:4:3: [2]: give score: a number from 0 to 1, or scores: a list of them"))), run_output(done)
    assert not (tmp_path / "c.json").exists()


def test_a_negative_kappa_is_recorded_and_read_back(tmp_path: Path) -> None:
    judge = _rules(tmp_path)
    rubric = "The reply greets the user."
    (tmp_path / "c.json").write_text(json.dumps({"calibrations": [
        {"rubric": digest(rubric), "judge": judge, "judge_key": digest(_identity()), "items": 10, "agreed": 3, "accuracy": 0.3, "kappa": -0.25}]}))
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
