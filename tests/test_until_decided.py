"""``run --until-decided``: the sequential test's error rates by seeded simulation, and the CLI on two- and three-arm
suites (a clear winner over a loopback model server, equal scripted arms), resumed, retried, interrupted, refused misuse."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.scoring.sequential import A_BETTER, B_BETTER, UNDECIDED, WITHIN, Sequential
from tests.fake_servers import OpenAIServer, Received, Reply, error_reply, openai_reply
from tests.helpers import ROOT, config, run_cli

SEQUENCES = 2000
ALPHA = 0.05


def _simulate(a: list[float], b: list[float], rounds: int, seed: int) -> dict[str, int]:
    """How often each decision comes over SEQUENCES seeded sequences of up to ``rounds`` rounds, each round one
    paired run per case of pass chance ``a[i]`` in A and ``b[i]`` in B."""
    rng, found = random.Random(seed), dict.fromkeys((B_BETTER, A_BETTER, WITHIN, UNDECIDED), 0)
    for _ in range(SEQUENCES):
        test = Sequential(ALPHA, 0.05)
        for _ in range(rounds):
            if test.add([float(rng.random() < pb) - float(rng.random() < pa) for pa, pb in zip(a, b, strict=True)]) != UNDECIDED:
                break
        found[test.decision] += 1
    return found


def _error(rate: float) -> float:
    """Three Monte Carlo standard errors of a rate ``rate`` estimated from SEQUENCES sequences."""
    return 3 * math.sqrt(rate * (1 - rate) / SEQUENCES)


def test_equal_arms_give_a_false_winner_at_most_alpha_however_often_looked_at() -> None:
    # every case equally likely to pass in both arms, looked at after each of 20 rounds; cases unlike each other
    found = _simulate([0.2, 0.5, 0.5, 0.9], [0.2, 0.5, 0.5, 0.9], rounds=20, seed=7)
    false = (found[B_BETTER] + found[A_BETTER]) / SEQUENCES
    assert false <= ALPHA + _error(ALPHA)
    assert found == {B_BETTER: 3, A_BETTER: 10, WITHIN: 0, UNDECIDED: 1987}  # the seeded figures


def test_a_true_difference_of_the_margin_is_called_within_it_at_most_alpha_over_two() -> None:
    # B passes 5 points more often on average (one case +20, the others 0): "within ±0.05" would be false
    found = _simulate([0.5, 0.5, 0.5, 0.5], [0.7, 0.5, 0.5, 0.5], rounds=60, seed=11)
    assert found[WITHIN] / SEQUENCES <= ALPHA / 2 + _error(ALPHA / 2)
    assert found[A_BETTER] / SEQUENCES <= ALPHA / 2 + _error(ALPHA / 2)
    assert found[B_BETTER] > 0


def test_the_wealth_of_a_clear_winner_by_hand() -> None:
    test = Sequential(ALPHA, 0.05)
    assert test.add([1.0, 1.0]) == UNDECIDED  # no earlier pair: no stake
    assert test.evidence()["above_zero"] == 1.0
    # then mean 2/3, second moment 0.75 (one pseudo-pair of 0 and 1/4): GRAPA 0.889, held to 0.75
    assert test.add([1.0, 1.0]) == UNDECIDED and test.evidence()["above_zero"] == 1.75 ** 2
    assert test.add([1.0, 1.0]) == UNDECIDED and test.add([1.0, 1.0]) == UNDECIDED
    assert test.add([1.0, 1.0]) == B_BETTER and test.evidence()["above_zero"] == 1.75 ** 8 >= 2 / ALPHA
    assert test.add([-1.0]) == B_BETTER and test.pairs == 10  # decided: no more pairs are taken
    assert test.add([]) == B_BETTER


CASES = """\
- id: first
  turns: [Say hi]
  expect: {response_contains: hi}
  script: [{content: hi}]
- id: second
  turns: [Say hi again]
  expect: {response_contains: hi}
  script: [{content: hi}]
"""


def _answer(received: Received) -> Reply:
    """``hi`` to the prompt that says it is good, ``no`` to the other: arm B wins every pair."""
    system = received.body["messages"][0]["content"]
    return openai_reply("hi" if "good" in system else "no", usage=(10, 5))


def _folder(results: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    (folder,) = results.iterdir()
    runs = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    return json.loads((folder / "report.json").read_text()), runs


@pytest.mark.usefixtures("litellm_loaded")
def test_a_clear_winner_stops_early_and_the_runs_tokens_and_cost_saved_are_reported(tmp_path: Path) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    (tmp_path / "bad.j2").write_text("You are bad.")
    (tmp_path / "good.j2").write_text("You are good.")
    with OpenAIServer(responder=_answer) as server:
        config(tmp_path, openai_base=server.api_base)
        done = run_cli("run", "ab.yml", "-p", "local-openai", "-P", "bad.j2", "-P", "good.j2", "--until-decided",
                       "--runs", "20", "--results", "results", "--html", "page.html", "--summary-md", "summary.md",
                       "-j", "1", cwd=tmp_path, env={"TOOLTRIAL_TEST_LOCAL_KEY": "k"})
    assert done.returncode == 1, done.stdout + done.stderr  # arm bad fails its runs
    # the stakes 0, 0.75, 0.75, 0.75, 0.75 on two pairs a round: 1.75 ** 8 = 88 >= 40 after round 5
    systems = [r.body["messages"][0]["content"] for r in server.chats]
    assert len(systems) == 20 and systems.count("You are good.") == systems.count("You are bad.") == 10
    report, runs = _folder(tmp_path / "results")
    assert [(r["prompt"], r["case"], r["run"]) for r in runs] == [
        (prompt, f"ab/{case}", n) for prompt in ("bad", "good") for case in ("first", "second") for n in range(1, 6)]
    section = report["sequential"]
    assert section["runs"] == {"cap": 80, "spent": 20, "saved": 60}
    assert section["tokens"] == {"spent": 300, "saved": 900.0}  # 15 a run
    assert section["cost"] == {"spent": None, "saved": None}  # no price known for the fake model
    assert (section["rounds"], section["cap"], section["margin"], section["alpha"]) == (5, 20, 0.05, 0.05)
    (compared,) = section["comparisons"]
    assert (compared["a"], compared["b"], compared["decision"], compared["stopped_after"], compared["pairs"],
            compared["difference"]) == ("local-openai · bad", "local-openai · good", "b_better", 5, 10, 1.0)
    assert compared["evidence"]["above_zero"] == 1.75 ** 8
    assert compared["reason"] == ("local-openai · good vs local-openai · bad: local-openai · good better: after round 5 "
                                  "the evidence that it passes more often than local-openai · bad reached 40 "
                                  "(1/(alpha/2), alpha 0.05) (difference +1.00 over 10 pairs)")
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
    assert not list(Draft202012Validator(schema).iter_errors(report))
    assert "until decided: 5 rounds, 20 of 80 runs at the cap spent, 60 saved (75%); tokens 300 spent, about 900 saved" \
        in done.stdout
    (row,) = [line.split("  ") for line in done.stdout.splitlines() if " b better " in line]
    assert [cell.strip() for cell in row if cell.strip()] == [
        "local-openai · good vs local-openai · bad", "b better", "round 5", "10", "+1.00", "88"]
    summary = (tmp_path / "summary.md").read_text()
    assert "| local\\-openai · good vs local\\-openai · bad | b better | round 5 | 10 | +1.00 |" in summary
    assert "20 of 80 runs at the cap spent\\, 60 saved \\(75\\%\\)\\; tokens 300 spent\\, about 900 saved" in summary
    assert "until decided: 5 rounds" in (tmp_path / "page.html").read_text()
    (folder,) = (tmp_path / "results").iterdir()
    shown = run_cli("report", str(folder), "--output", "json", cwd=tmp_path)  # read back: the same section
    assert json.loads(shown.stdout)["sequential"] == section
    assert "60 saved (75%)" in run_cli("report", str(folder), cwd=tmp_path).stdout

    # resumed: every run of the decided rounds is reused, none sent again, the same decision
    with OpenAIServer(responder=_answer) as server:
        config(tmp_path, openai_base=server.api_base)
        again = run_cli("run", "ab.yml", "-p", "local-openai", "-P", "bad.j2", "-P", "good.j2", "--until-decided",
                        "--runs", "20", "--results", "again", "--resume", str(folder), cwd=tmp_path,
                        env={"TOOLTRIAL_TEST_LOCAL_KEY": "k"})
    assert again.returncode == 1 and server.chats == []
    resumed, rerun = _folder(tmp_path / "again")
    assert resumed["sequential"]["comparisons"] == section["comparisons"] and len(rerun) == 20


def test_equal_arms_never_name_a_winner(tmp_path: Path) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    (tmp_path / "a.j2").write_text("Be brief.")
    (tmp_path / "b.j2").write_text("Be terse.")
    done = run_cli("run", "ab.yml", "-P", "a.j2", "-P", "b.j2", "--until-decided", "--runs", "8", "--results", "r",
                   "--output", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    section = json.loads(done.stdout)["sequential"]
    (compared,) = section["comparisons"]
    assert (compared["decision"], compared["stopped_after"], compared["pairs"]) == ("undecided", None, 16)
    assert section["runs"] == {"cap": 32, "spent": 32, "saved": 0}
    assert section["tokens"] == section["cost"] == {"spent": None, "saved": None}  # the script reports none
    assert compared["reason"].endswith("undecided at the cap of 8 rounds: more runs might decide it "
                                       "(difference +0.00 over 16 pairs)")
    # with a wider margin the agreeing pairs decide it, after 22 of them
    wide = run_cli("run", "ab.yml", "-P", "a.j2", "-P", "b.j2", "--until-decided", "--runs", "20", "--margin", "0.2",
                   "--results", "r", "--output", "json", cwd=tmp_path)
    (compared,) = json.loads(wide.stdout)["sequential"]["comparisons"]
    assert (compared["decision"], compared["stopped_after"]) == ("within_margin", 11)


@pytest.mark.parametrize(("argv", "message"), [
    (["--margin", "0.1"], "error: --margin is for --until-decided"),
    (["--until-decided", "--margin", "0"], "error: --margin must be above 0 and below 1, got 0"),
    (["--until-decided", "--shard", "1/2", "-P", "b.j2"], "error: --until-decided decides from every case's runs"),
    (["--until-decided"], "error: --until-decided stops when a comparison of two arms is decided, and this run has one arm"),
])
def test_misuse_is_refused_before_any_run(tmp_path: Path, argv: list[str], message: str) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    (tmp_path / "a.j2").write_text("Be brief.")
    (tmp_path / "b.j2").write_text("Be terse.")
    done = run_cli("run", "ab.yml", "-P", "a.j2", *argv, "--results", "r", cwd=tmp_path)
    assert done.returncode == 4 and message in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.usefixtures("litellm_loaded")
def test_retry_errors_runs_the_errored_run_again_in_its_round(tmp_path: Path) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    (tmp_path / "bad.j2").write_text("You are bad.")
    (tmp_path / "good.j2").write_text("You are good.")
    argv = ("run", "ab.yml", "-p", "local-openai", "-P", "bad.j2", "-P", "good.j2", "--until-decided", "--runs", "20",
            "-j", "1")
    key = {"TOOLTRIAL_TEST_LOCAL_KEY": "k"}
    # the first request of the good arm is refused (401: an error not of the agent's making), the rest answered
    good: list[Received] = []

    def refuse_first_good(received: Received) -> Reply:
        if "good" in received.body["messages"][0]["content"]:
            good.append(received)
            if len(good) == 1:
                return error_reply(401, "key revoked")
        return _answer(received)

    with OpenAIServer(responder=refuse_first_good) as server:
        config(tmp_path, openai_base=server.api_base)
        first = run_cli(*argv, "--results", "first", cwd=tmp_path, env=key)
    assert first.returncode == 1, first.stdout + first.stderr
    report, runs = _folder(tmp_path / "first")
    (compared,) = report["sequential"]["comparisons"]
    errored = [(r["case"], r["prompt"], r["run"]) for r in runs if r["status"] == "error"]
    assert errored == [("ab/first", "good", 1)] and compared["pairs"] == 2 * compared["stopped_after"] - 1
    with OpenAIServer(responder=_answer) as server:
        config(tmp_path, openai_base=server.api_base)
        (folder,) = (tmp_path / "first").iterdir()
        again = run_cli(*argv, "--results", "again", "--resume", str(folder), "--retry-errors", cwd=tmp_path, env=key)
    assert [r.body["messages"][1]["content"] for r in server.chats] == ["Say hi"]  # only the errored run, again
    resumed, rerun = _folder(tmp_path / "again")
    retried = [r for r in rerun if r["attempt"] == 2]
    assert [(r["case"], r["prompt"], r["run"], r["status"]) for r in retried] == [("ab/first", "good", 1, "pass")]
    (compared,) = resumed["sequential"]["comparisons"]
    assert (compared["decision"], compared["stopped_after"], compared["pairs"]) == ("b_better", 5, 10)
    assert resumed["sequential"]["runs"] == {"cap": 80, "spent": 20, "saved": 60} and len(rerun) == 20, again.stdout


@pytest.mark.usefixtures("litellm_loaded")
def test_ctrl_c_in_a_round_leaves_the_comparison_undecided_and_the_rest_to_resume(tmp_path: Path) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    (tmp_path / "bad.j2").write_text("You are bad.")
    (tmp_path / "good.j2").write_text("You are good.")
    seen: list[Received] = []

    def press_in_round_two(received: Received) -> Reply:
        seen.append(received)
        if len(seen) == 5:  # round 2's first run: Ctrl-C while it waits for its reply
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
        return _answer(received)

    previous = signal.signal(signal.SIGINT, lambda *_: None)  # a press after tooltrial's handler is gone is lost
    try:
        with OpenAIServer(responder=press_in_round_two) as server:
            config(tmp_path, openai_base=server.api_base)
            done = run_cli("run", "ab.yml", "-p", "local-openai", "-P", "bad.j2", "-P", "good.j2", "--until-decided",
                           "--runs", "20", "-j", "1", "--results", "results", cwd=tmp_path,
                           env={"TOOLTRIAL_TEST_LOCAL_KEY": "k"})
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done.returncode == 2, done.stdout + done.stderr
    report, runs = _folder(tmp_path / "results")
    section = report["sequential"]
    (compared,) = section["comparisons"]
    assert section["rounds"] == 1 and (compared["decision"], compared["pairs"]) == ("undecided", 2)
    assert section["runs"] == {"cap": 80, "spent": len(runs), "saved": 0}  # an interruption saves nothing
    assert compared["reason"].endswith("undecided: interrupted in round 2 (difference +1.00 over 2 pairs)")
    finished = {(r["prompt"], r["case"], r["run"]) for r in runs}
    assert {(u["prompt"], u["case"], u["run"]) for u in report["unfinished"]} == {
        (p, f"ab/{c}", 2) for p in ("bad", "good") for c in ("first", "second")} - finished
    assert len(runs) + len(report["unfinished"]) == 8


@pytest.mark.usefixtures("litellm_loaded")
def test_an_arm_whose_comparisons_are_all_decided_sits_out_the_later_rounds(tmp_path: Path) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    for name, text in (("bad", "You are bad."), ("good", "You are good."), ("good2", "You are good too.")):
        (tmp_path / f"{name}.j2").write_text(text)
    with OpenAIServer(responder=_answer) as server:
        config(tmp_path, openai_base=server.api_base)
        done = run_cli("run", "ab.yml", "-p", "local-openai", "-P", "bad.j2", "-P", "good.j2", "-P", "good2.j2",
                       "--until-decided", "--runs", "20", "--margin", "0.2", "-j", "1", "--results", "results",
                       "--output", "json", cwd=tmp_path, env={"TOOLTRIAL_TEST_LOCAL_KEY": "k"})
    assert done.returncode == 1, done.stderr
    section = json.loads(done.stdout)["sequential"]
    found = [(c["title"], c["decision"], c["stopped_after"]) for c in section["comparisons"]]
    assert found == [("prompt good vs bad, provider local-openai", "b_better", 5),
                     ("prompt good2 vs bad, provider local-openai", "b_better", 5),
                     ("prompt good2 vs good, provider local-openai", "within_margin", 11)]
    # bad sits out rounds 6 to 20 (15 rounds of 2 cases), good and good2 rounds 12 to 20 (9 rounds each)
    assert section["runs"] == {"cap": 120, "spent": 5 * 2 + 11 * 2 * 2, "saved": 30 + 18 + 18}
    systems = [r.body["messages"][0]["content"] for r in server.chats]
    assert (systems.count("You are bad."), systems.count("You are good."), systems.count("You are good too.")) == (10, 22, 22)


def test_worker_processes_decide_as_threads_do(tmp_path: Path) -> None:
    (tmp_path / "ab.yml").write_text(CASES)
    (tmp_path / "a.j2").write_text("Be brief.")
    (tmp_path / "b.j2").write_text("Be terse.")
    found = []
    for workers in ("1", "2"):
        done = run_cli("run", "ab.yml", "-P", "a.j2", "-P", "b.j2", "--until-decided", "--runs", "6", "--margin", "0.5",
                       "-j", "2", "--workers", workers, "--results", f"r{workers}", "--output", "json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        found.append((report["sequential"]["comparisons"], report["sequential"]["runs"],
                       [(r["prompt"], r["case"], r["run"]) for r in report["runs"]]))
    assert found[0] == found[1]
    assert found[0][1] == {"cap": 24, "spent": 16, "saved": 8}  # within ±0.5 after round 4 of 6
