"""``tooltrial judge calibrate``: a labels file of 20 items judged over a loopback OpenAI server, the agreement's
figures checked by hand, the calibration kept, and bad labels files told at their line and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.checks.judge import judge_key
from runner.providers.registry import resolve_provider
from runner.scoring.agreement import agreement, cohen_kappa, kappa_interval, kappa_standard_error, one_sided
from runner.spec.config import load_config
from runner.spec.fingerprint import digest
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import config, run_cli, run_output
from tests.html_pages import embedded

pytestmark = pytest.mark.usefixtures("litellm_loaded")

RUBRIC = "The reply greets the user politely."
# (person, judge) for 20 items: 9 pass/pass, 2 pass/fail, 3 fail/pass, 6 fail/fail
PAIRS = [("pass", "pass")] * 9 + [("pass", "fail")] * 2 + [("fail", "pass")] * 3 + [("fail", "fail")] * 6


def test_kappa_and_its_interval_by_hand() -> None:
    # p_o = 15/20 = 0.75; margins person pass 0.55, judge pass 0.60; p_e = .55*.60 + .45*.40 = 0.51;
    # kappa = (0.75 - 0.51) / 0.49 = 24/49. Fleiss, Cohen & Everitt 1969 with 1 - k = 25/49:
    # A = .45(1 - 1.15*25/49)^2 + .30(1 - .85*25/49)^2 = 0.0768546 + 0.0962176
    # B = (25/49)^2 (.10*(.60 + .45)^2 + .15*(.40 + .55)^2) = 0.2603082 * 0.245625 = 0.0639382
    # C = (24/49 - .51*25/49)^2 = 0.0527124; var = (A + B - C) / (20 * .49^2) = 0.0383787, se = 0.1959048
    table = [[9, 2], [3, 6]]
    assert cohen_kappa(table) == pytest.approx(24 / 49, abs=1e-12)
    assert kappa_standard_error(table) == pytest.approx(0.1959068, abs=1e-6)
    low, high = kappa_interval(table)
    assert (low, high) == pytest.approx((24 / 49 - 1.959964 * 0.1959068, 24 / 49 + 1.959964 * 0.1959068), abs=1e-6)
    found = agreement(PAIRS)
    assert (found.items, found.agreed, found.accuracy) == (20, 15, 0.75)
    assert found.confusion == {"pass": {"pass": 9, "fail": 2}, "fail": {"pass": 3, "fail": 6}}


def test_kappa_is_one_for_perfect_agreement_and_undefined_for_one_verdict() -> None:
    assert cohen_kappa([[5, 0], [0, 5]]) == 1.0
    assert kappa_interval([[5, 0], [0, 5]]) == (1.0, 1.0)
    found = agreement([("pass", "pass")] * 4)
    assert (found.kappa, found.low, found.high, found.accuracy) == (None, None, None, 1.0)


def test_kappa_is_undefined_when_either_rater_gives_one_verdict_only() -> None:
    # the judge passes all 5: p_o = p_pp = 3/5 and p_e = 3/5 * 1 + 2/5 * 0 = 3/5, so (p_o - p_e) / (1 - p_e) is 0
    # whatever the person said, and the standard error is 0 (A = .6^3, B = .4 * .6^2, C = .6^2: A + B - C = 0)
    for table, raters in (([[3, 0], [2, 0]], ["judge"]), ([[3, 2], [0, 0]], ["person"]), ([[4, 0], [0, 0]],
                                                                                         ["person", "judge"])):
        assert (cohen_kappa(table), one_sided(table)) == (None, raters)
        with pytest.raises(ValueError, match="kappa is undefined: a rater gave one verdict only"):
            kappa_interval(table)
    assert one_sided([[3, 1], [2, 0]]) == []
    found = agreement([("pass", "pass")] * 3 + [("fail", "pass")] * 2)
    assert (found.kappa, found.low, found.high, found.accuracy) == (None, None, None, 0.6)


def _labels(tmp_path: Path, run_file: Path) -> Path:
    items = []
    for i, (person, _) in enumerate(PAIRS, 1):
        if i == 1:
            items.append(f"  - {{id: from-a-run, run: {run_file}, verdict: {person}}}\n")
        else:
            items.append(f"""\
  - id: item-{i}
    turns: [Greet the user]
    calls: [{{name: list_dir, arguments: {{path: .}}, result: "a.txt"}}]
    reply: "Reply number {i}"
    verdict: {person}
""")
    path = tmp_path / "labels.yml"
    path.write_text(f"rubric: {RUBRIC}\nthreshold: 0.7\nitems:\n" + "".join(items), encoding="utf-8")
    return path


def _scripted_run(tmp_path: Path) -> Path:
    cases = tmp_path / "greet.yml"
    cases.write_text("- id: hi\n  turns: [Say hi]\n  script:\n    - content: Hello from a run.\n", encoding="utf-8")
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, run_output(done)
    (run_file,) = (tmp_path / "results").glob("*/runs/*.json")
    return run_file


def test_calibrate_twenty_items_reports_and_keeps_the_agreement(tmp_path: Path) -> None:
    labels = _labels(tmp_path, _scripted_run(tmp_path))
    store = tmp_path / "calibrations.json"
    with OpenAIServer() as server:
        for _, judge in PAIRS:
            score = 0.9 if judge == "pass" else 0.2
            server.push(openai_reply(json.dumps({"score": score, "reasoning": f"graded {judge}"})))
        done = run_cli("judge", "calibrate", str(labels), "-j", "local-openai",
                       "--config", str(config(tmp_path, server.api_base)), "--calibrations", str(store))
    assert done.returncode == 0, run_output(done)
    assert len(server.chats) == 20
    first = server.chats[0].body["messages"][1]["content"]
    assert first.startswith(f"Rubric:\n{RUBRIC}\n\nTask (the user's turns):\n1. Say hi\n")
    assert first.endswith("Final reply:\nHello from a run.")
    second = server.chats[1].body["messages"][1]["content"]
    assert '1. list_dir {"path": "."} -> ok: a.txt' in second and second.endswith("Final reply:\nReply number 2")
    lines = done.stdout.splitlines()
    assert lines[1:9] == [
        "  items:     20",
        "  accuracy:  0.750 (15 of 20 agreed)",
        "  kappa:     0.490 (95% interval 0.106 to 0.874)",
        ("  min_kappa: 0.6 (tooltrial's default: substantial agreement, Landis and Koch 1977): not reached, "
        "under-calibrated"),
        "",
        "                  judge pass  judge fail",
        "  person pass              9           2",
        "  person fail              3           6",
    ]
    assert lines[9] == "  judge used: 300 tokens"  # 15 a reply; the fake model is in no cost table
    assert lines[10] == "  disagreed: item-10: person pass, judge fail (score 0.20: graded fail)"
    assert lines[-1] == f"kept in {store}"
    (kept,) = json.loads(store.read_text())["calibrations"]
    assert kept["judge"] == "local-openai" and kept["threshold"] == 0.7
    assert (kept["items"], kept["agreed"], kept["accuracy"]) == (20, 15, 0.75)
    assert kept["kappa"] == pytest.approx(24 / 49) and kept["kappa_low"] == pytest.approx(0.1058257, abs=1e-6)
    assert kept["confusion"] == {"pass": {"pass": 9, "fail": 2}, "fail": {"pass": 3, "fail": 6}}
    assert kept["rubric"] == digest(RUBRIC)
    # what the judge is: the alias's model string and the parameters that change its answers, not the alias's
    # name nor the server's address (the loopback server's port changes from one test server to the next)
    assert kept["judge_identity"] == {"model": "openai/fake", "temperature": 0.0, "max_tokens": None, "params": {}}
    assert kept["judge_key"] == digest(kept["judge_identity"]) == _key(tmp_path)


def _key(tmp_path: Path, name: str = "local-openai", extra: str = "") -> str:
    """The key calibrations of the judge ``name`` of config()'s tooltrial.yml (with ``extra``) are kept by."""
    return judge_key(resolve_provider(name, load_config(config(tmp_path, extra=extra))))


def test_a_live_judge_is_its_model_and_the_parameters_that_change_its_answers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # nothing is sent: the judge is refused before any run
    extra = ("  same-openai:\n    model: openai/fake\n    api_base: http://127.0.0.2:9/v1\n    temperature: 0\n"
             "  warm-openai:\n    model: openai/fake\n    temperature: 0.7\n"
             "  long-openai:\n    model: openai/fake\n    temperature: 0\n    max_tokens: 50\n")
    key = _key(tmp_path, "local-openai", extra)
    assert _key(tmp_path, "same-openai", extra) == key  # another alias, another server: the same model, same answers
    assert key not in {_key(tmp_path, "warm-openai", extra), _key(tmp_path, "long-openai", extra),
                       _key(tmp_path, "openai/fake", extra)}  # the model string alone: no temperature
    store = tmp_path / "calibrations.json"
    store.write_text(json.dumps({"calibrations": [{"rubric": digest(RUBRIC), "judge": "local-openai", "judge_key": key,
                                                    "items": 20, "agreed": 19, "accuracy": 0.95, "kappa": 0.9}]}))
    (tmp_path / "judged.yml").write_text(JUDGED, encoding="utf-8")
    done = run_cli("run", "judged.yml", "-p", "scripted", "--judge", "warm-openai", "--config", str(tmp_path / "tooltrial.yml"),
                   "--calibrations", str(store), "--require-calibrated-judges", cwd=tmp_path)
    assert (done.returncode, run_output(done).split(" (calibrate")[0]) == (
        4, ("error: --require-calibrated-judges: 1 judged case(s) have no calibrated judge: judged/polite "
        "(judge warm-openai: uncalibrated)"))


@pytest.mark.parametrize(("text", "expected"), [
    ("rubric: R\nitems:\n  - {reply: hi, verdict: maybe}\n", "labels.yml:3:26: items[0].verdict: 'maybe' is not one of 'pass', 'fail'"),
    ("rubric: R\nitems:\n  - {reply: hi, verdict: pass, rply: x}\n", "labels.yml:3:32: items[0]: unknown key 'rply' (did you mean 'reply'?)"),
    ("rubric: R\nitems:\n  - {run: r.json, reply: hi, verdict: pass}\n",
     "labels.yml:3:19: items[0].reply: an item with run: takes no reply: (the run file holds it)"),
    ("rubric: R\nitems:\n  - {verdict: pass}\n", "labels.yml:3:5: items[0]: an item needs run: FILE or a transcript"),
    ("rubric: R\nitems:\n  - {run: missing.json, verdict: pass}\n", "labels.yml:3:11: items[0].run: run file "),
])
def test_bad_labels_are_told_at_their_place(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "labels.yml"
    path.write_text(text, encoding="utf-8")
    done = run_cli("judge", "calibrate", str(path), "-j", "local-openai", "--config", str(config(tmp_path)),
                   "--calibrations", str(tmp_path / "c.json"), cwd=tmp_path)
    assert done.returncode == 4
    assert expected in run_output(done) and "Traceback" not in run_output(done)


JUDGED = f"""\
- id: polite
  turns: [Greet the user]
  expect:
    judge: {{rubric: {RUBRIC}, threshold: 0.5, min_kappa: 0.6}}
  script:
    - content: Hello there.
"""


def _judged_run(tmp_path: Path, server: OpenAIServer, *argv: str) -> tuple[int, str, dict[str, Any]]:
    cases = tmp_path / "judged.yml"
    cases.write_text(JUDGED, encoding="utf-8")
    report = tmp_path / "report.json"
    done = run_cli("run", str(cases), "-p", "scripted", "--judge", "local-openai", "--config",
                   str(config(tmp_path, server.api_base)), "--results", str(tmp_path / "results"),
                   "--report", str(report), *argv)
    return done.returncode, done.stdout + run_output(done), json.loads(report.read_text()) if report.exists() else {}


def test_judge_repeats_split_the_variance_and_runs_are_marked_uncalibrated(tmp_path: Path) -> None:
    store = tmp_path / "calibrations.json"
    with OpenAIServer() as server:
        for score in (0.6, 0.8, 1.0, 0.2, 0.4, 0.6):  # run 1: mean 0.8, variance 0.04; run 2: mean 0.4, variance 0.04
            server.push(openai_reply(json.dumps({"score": score, "reasoning": "ok"})))
        code, out, report = _judged_run(tmp_path, server, "--runs", "2", "-j", "1", "--judge-repeats", "3",
                                        "--calibrations", str(store), "--html", str(tmp_path / "report.html"),
                                        "--summary-md", str(tmp_path / "summary.md"), "--junit", str(tmp_path / "junit.xml"))
    assert len(server.chats) == 6 and code == 1  # run 2's mean 0.4 is below 0.5
    checks = [r["checks"][-1] for r in report["runs"]]
    assert [c["scores"] for c in checks] == [[0.6, 0.8, 1.0], [0.2, 0.4, 0.6]]
    assert [c["score"] for c in checks] == pytest.approx([0.8, 0.4])
    assert checks[0]["message"] == "judge score 0.80 (mean of 3, 0.60 to 1.00) reached 0.50: ok"
    assert checks[0]["calibration"] == {"judge": "local-openai", "status": "uncalibrated", "kappa": None, "min_kappa": 0.6}
    assert checks[0]["usage"]["total_tokens"] == 45  # three answers of 15 tokens
    judges = report["judges"]
    assert (judges["judged_runs"], judges["uncalibrated_runs"]) == (2, 2)
    assert judges["calibrations"] == [{"judge": "local-openai", "status": "uncalibrated", "kappa": None,
                                       "min_kappa": 0.6, "runs": 2}]
    (noise,) = judges["noise"]
    # judge: mean of the two runs' variances (0.04 each); run to run: variance of (0.8, 0.4) = 0.08, less 0.04/3
    assert (noise["case"], noise["runs"], noise["repeats"]) == ("judged/polite", 2, 3)
    assert noise["judge_variance"] == pytest.approx(0.04)
    assert noise["run_variance"] == pytest.approx(0.08 - 0.04 / 3)
    assert noise["total_variance"] == pytest.approx(0.04 + 0.08 - 0.04 / 3)
    assert ("judges: 2 of 2 judged runs by a judge not calibrated on its rubric (local-openai: uncalibrated, "
            "2 runs); see tooltrial judge calibrate") in out
    assert "Judge noise: the variance of judged scores, the judge's own and run to run" in out
    assert embedded(tmp_path / "report.html", "summary")["judges"] == judges  # type: ignore[index]
    summary = (tmp_path / "summary.md").read_text()
    assert ("**Judges:** 2 of 2 judged runs by a judge not calibrated on its rubric \\(local\\-openai: uncalibrated, "
            "2 runs\\)\\.") in summary
    assert "| scripted · default | judged\\/polite | 2 × 3 | 0.0400 | 0.0667 | 0.1067 |" in summary
    junit = (tmp_path / "junit.xml").read_text()
    assert ("run 1: pass (" in junit and "s); judge local-openai uncalibrated\nrun 2: fail (" in junit)
    rows = [" ".join(line.split()) for line in out.splitlines()]
    assert "arm case runs x repeats judge run to run total judge share" in rows
    assert "scripted · default judged/polite 2 x 3 0.0400 0.0667 0.1067 38%" in rows


def test_require_calibrated_judges_refuses_before_running(tmp_path: Path) -> None:
    store = tmp_path / "calibrations.json"
    store.write_text(json.dumps({"calibrations": [{"rubric": digest(RUBRIC), "judge": "local-openai", "items": 20,
                                                    "judge_key": _key(tmp_path), "agreed": 15, "accuracy": 0.75,
                                                    "kappa": 0.49}]}))
    with OpenAIServer() as server:
        code, out, report = _judged_run(tmp_path, server, "--calibrations", str(store), "--require-calibrated-judges")
    assert (code, server.chats, report) == (4, [], {})
    assert out == ("error: --require-calibrated-judges: 1 judged case(s) have no calibrated judge: judged/polite "
                   "(judge local-openai: kappa 0.49 < min_kappa 0.60, the case's) (calibrate each judge on the case's "
                   "rubric: tooltrial judge calibrate LABELS.yml -j JUDGE (docs/judges.md), or give --calibrations FILE)\n")
    with OpenAIServer() as server:
        server.push(openai_reply(json.dumps({"score": 0.9, "reasoning": "fine"})))
        code, out, report = _judged_run(tmp_path, server, "--calibrations", str(store))
    assert code == 0
    assert report["runs"][0]["checks"][-1]["calibration"] == {
        "judge": "local-openai", "status": "under-calibrated", "kappa": 0.49, "min_kappa": 0.6}
    assert "local-openai: under-calibrated (kappa 0.49 < 0.60), 1 run" in out


def test_calibrate_takes_the_rubric_threshold_and_judge_of_a_case(tmp_path: Path) -> None:
    cases = tmp_path / "cases" / "greet.yml"
    cases.parent.mkdir()
    cases.write_text(f"- id: hello\n  turns: [Greet the user]\n  expect:\n    judge: {{rubric: {RUBRIC}, threshold: 0.8, "
                     "model: local-openai, min_kappa: 0.6}\n", encoding="utf-8")
    labels = tmp_path / "labels.yml"
    labels.write_text("case: {file: cases/greet.yml, id: hello}\nitems:\n"
                      "  - {reply: Hello!, verdict: pass}\n  - {reply: Go away., verdict: fail}\n"
                      "  - {reply: Hi., verdict: pass}\n", encoding="utf-8")
    store = tmp_path / "calibrations.json"
    with OpenAIServer() as server:
        for score in (0.9, 0.1, 0.75):  # 0.75 is below the case's threshold 0.8: a fail
            server.push(openai_reply(json.dumps({"score": score, "reasoning": "r"})))
        done = run_cli("judge", "calibrate", str(labels), "--config", str(config(tmp_path, server.api_base)),
                       "--calibrations", str(store))
    assert done.returncode == 0, run_output(done)
    assert server.chats[0].body["messages"][1]["content"].startswith(f"Rubric:\n{RUBRIC}\n")
    # p_o = 2/3; person pass 2/3, judge pass 1/3; p_e = 2/9 + 2/9 = 4/9; kappa = (6/9 - 4/9) / (5/9) = 0.4;
    # A = 2 * 1/3 * (1 - 0.6)^2 = 0.10667, B = 0.36 * 1/3 * (2/3)^2 = 0.05333, C = (0.4 - 4/9 * 0.6)^2 = 0.01778,
    # se = sqrt(0.14222 / (3 * (5/9)^2)) = 0.39192; 0.4 - 1.96 * 0.39192 = -0.368 (the top held to 1)
    assert done.stdout.splitlines()[:6] == [
        f"judge local-openai on {labels} (rubric {digest(RUBRIC)[:12]}, threshold 0.8)",
        "  items:     3",
        "  accuracy:  0.667 (2 of 3 agreed)",
        "  kappa:     0.400 (95% interval -0.368 to 1.000)",
        "  min_kappa: 0.6 (the case's): not reached, under-calibrated",
        "",
    ]
    (kept,) = json.loads(store.read_text())["calibrations"]
    assert (kept["judge"], kept["threshold"], kept["kappa"]) == ("local-openai", 0.8, pytest.approx(0.4))


@pytest.mark.parametrize(("text", "expected"), [
    (f"rubric: {RUBRIC}\ncase: {{file: cases/greet.yml, id: hello}}\nitems:\n  - {{reply: hi, verdict: pass}}\n",
     "labels.yml:2:7: case: give the rubric or the case whose rubric it is, one of them"),
    ("case: {file: cases/greet.yml, id: helo}\nitems:\n  - {reply: hi, verdict: pass}\n",
     "labels.yml:1:35: case.id: cases/greet.yml has no case 'helo' (did you mean 'hello'?)"),
    ("case: {file: cases/greet.yml, id: plain}\nitems:\n  - {reply: hi, verdict: pass}\n",
     "labels.yml:1:35: case.id: case greet/plain has no expect.judge to calibrate"),
])
def test_a_labels_case_that_gives_no_rubric_is_told(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "greet.yml").write_text(
        f"- id: hello\n  turns: [Hi]\n  expect: {{judge: {{rubric: {RUBRIC}}}}}\n- id: plain\n  turns: [Hi]\n",
        encoding="utf-8")
    (tmp_path / "labels.yml").write_text(text, encoding="utf-8")
    done = run_cli("judge", "calibrate", str(tmp_path / "labels.yml"), "-j", "local-openai", cwd=tmp_path)
    assert done.returncode == 4 and expected in run_output(done), run_output(done)


def test_a_judge_with_no_usable_verdict_keeps_nothing(tmp_path: Path) -> None:
    labels = tmp_path / "labels.yml"
    labels.write_text(f"rubric: {RUBRIC}\nitems:\n  - {{reply: hi, verdict: pass}}\n", encoding="utf-8")
    store = tmp_path / "calibrations.json"
    with OpenAIServer() as server:
        server.push(openai_reply("Looks fine to me."))
        done = run_cli("judge", "calibrate", str(labels), "-j", "local-openai",
                       "--config", str(config(tmp_path, server.api_base)), "--calibrations", str(store))
    assert (done.returncode, done.stdout, store.exists()) == (4, "", False)
    assert run_output(done) == ("error: judge local-openai gave no usable verdict on any item: no JSON "
                                "object in 'Looks fine to me.' (a judge answers {\"score\": 0..1, \"reasoning\": \"...\"}; "
                                "name a model that follows instructions)\n")
