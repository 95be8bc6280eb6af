"""Concurrent runs: the bounded pool, isolated workspaces, -j independent output, Ctrl-C."""

from __future__ import annotations

import json
import re
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from runner.providers.registry import resolve_provider
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import PASS
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions
from runner.suite.pool import InOrder, run_pool
from tests.helpers import BAD_RUN, GOOD, ROOT, make_case, run_cli, start_run
from tests.sandboxes import BWRAP, make_sandbox, none_left, processes_with

ARM = Arm(resolve_provider("scripted"), load_prompt(None))

SLOW = """\
- id: quick
  turns: [go]
  script: [{content: done}]
""" + "".join(
    f"""- id: slow-{n}
  turns: [go]
  script:
    - tool_calls: [{{name: bash, arguments: {{command: sleep 0.4}}}}]
    - content: done
"""
    for n in range(1, 5)
)


def test_pool_emits_in_plan_order_or_as_jobs_finish() -> None:
    def work(index: int) -> int:
        time.sleep(0.05 * (3 - index))  # the last job finishes first
        return index * 10

    finished: list[tuple[int, int]] = []
    in_order = InOrder(lambda i, r: planned.append(i))
    planned: list[int] = []

    def both(index: int, result: int) -> None:
        finished.append((index, result))
        in_order(index, result)

    assert run_pool(work, 4, 4, threading.Event(), both) == {0, 1, 2, 3}
    assert (finished, planned) == ([(3, 30), (2, 20), (1, 10), (0, 0)], [0, 1, 2, 3])


def test_in_order_holds_results_back_until_the_gap_closes_and_flushes_the_rest() -> None:
    seen: list[int] = []
    in_order = InOrder(lambda i, r: seen.append(i))
    for index in (1, 3, 0):
        in_order(index, None)
    assert seen == [0, 1]
    in_order.flush()
    assert seen == [0, 1, 3]


def test_pool_stop_leaves_the_rest_unstarted() -> None:
    stop = threading.Event()

    def work(index: int) -> int:
        if index == 2:
            stop.set()
        return index

    assert run_pool(work, 10, 1, stop) == {0, 1, 2}


def test_pool_error_stops_scheduling_and_propagates() -> None:
    stop = threading.Event()
    bug = RuntimeError("bug")
    started: list[int] = []
    finished: list[int] = []
    reported: list[tuple[int, int]] = []

    def work(index: int) -> int:
        started.append(index)
        if index == 1:
            raise bug
        stop.wait(10)  # job 0 runs on until the error stopped the pool: nothing else may finish first
        finished.append(index)
        return index

    with pytest.raises(RuntimeError) as caught:
        run_pool(work, 50, 2, stop, on_result=lambda index, result: reported.append((index, result)))
    assert caught.value is bug
    assert stop.is_set()
    assert sorted(started) == [0, 1]  # no job started after the error
    assert finished == [0]  # the running job was waited for
    assert reported == []  # and its result not passed on: the error came first


def test_concurrent_runs_of_one_case_each_get_their_own_workspace() -> None:
    case = make_case(
        script=[
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo $$ >> shared.txt; sleep 0.2"}}]},
            {"content": "done"},
        ],
        expect={"verify": 'test "$(wc -l < shared.txt)" -eq 1'},
    )
    options = SuiteOptions(RunOptions(make_sandbox("bwrap" if BWRAP else "none"), keep=True), jobs=8)
    started = time.monotonic()
    records = run_matrix([case], [ARM], options, repeats=8)
    elapsed = time.monotonic() - started
    try:
        assert [r.status for r in records] == [PASS] * 8
        assert [r.run for r in records] == list(range(1, 9))
        workspaces = {r.workspace for r in records}
        assert len(workspaces) == 8
        assert all(len(Path(w, "shared.txt").read_text().splitlines()) == 1 for w in workspaces)
        assert elapsed < 8 * 0.2  # they overlapped
    finally:
        for record in records:
            shutil.rmtree(record.workspace or "", ignore_errors=True)


def test_output_with_8_jobs_equals_output_with_1(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(GOOD)
    (tmp_path / "bad.yml").write_text(BAD_RUN)
    paths = [str(ROOT / "cases" / "fs.yml"), str(tmp_path)]
    results = ("--results", str(tmp_path / "results"))
    one = run_cli("run", *paths, "--runs", "2", "-j", "1", *results)
    eight = run_cli("run", *paths, "--runs", "2", "-j", "8", *results)
    assert one.returncode == eight.returncode == 1
    assert _timeless(one.stdout) == _timeless(eight.stdout)
    assert one.stdout.startswith("PASS fs/read-file-lines #1\nPASS fs/read-file-lines #2\n")
    assert "\n14/20 passed\n" in one.stdout


def _timeless(output: str) -> str:
    """``output`` with the summary table's times (``1.3s``) and the padding and rules sized by them dropped."""
    return re.sub(r"─+", "─", re.sub(r" +", " ", re.sub(r"\b\d+(?:\.\d+)?s\b", "", output)))


def test_ctrl_c_stops_runs_keeps_what_finished_and_resume_runs_the_rest(tmp_path: Path) -> None:
    proc = start_run(tmp_path, SLOW, "-j", "1")
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 2
    lines = out.splitlines()
    (folder,) = (tmp_path / "results").iterdir()
    assert (first, lines[0]) == ("PASS slow/quick\n", "1/1 passed (4 runs not finished: interrupted)")
    assert lines[-2:] == [
        "interrupted: 4 runs did not finish (cases: slow/slow-1, slow/slow-2, slow/slow-3, slow/slow-4)",
        f"to run just those: tooltrial run {tmp_path}/slow.yml --results {tmp_path}/results -j 1 --resume {folder}",
    ]
    assert "Ctrl-C again to quit now" in err
    assert [p.name for p in (folder / "runs").iterdir()] == ["0001-slow-quick-scripted-default-r1.json"]
    report = json.loads((folder / "report.json").read_text())
    assert report["exit_code"] == 2  # a CI job reading the report must not take it for a pass
    assert report["unfinished"] == [
        {"case": f"slow/slow-{n}", "provider": "scripted", "prompt": "default", "run": 1} for n in range(1, 5)
    ]
    shown = run_cli("report", str(folder))
    assert shown.returncode == 0, shown.stderr
    assert "\ninterrupted: 4 runs did not finish (cases: slow/slow-1, slow/slow-2, slow/slow-3, slow/slow-4)\n" in shown.stdout
    assert "1/1 passed (4 runs not finished: interrupted)" in shown.stdout.splitlines()
    shown_json = json.loads(run_cli("report", str(folder), "--output", "json").stdout)
    assert (shown_json["exit_code"], shown_json["unfinished"]) == (2, report["unfinished"])
    assert (shown_json["overall"], shown_json["arms"]) == (report["overall"], report["arms"])
    schema = Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text()))
    schema.validate(report)
    schema.validate(shown_json)

    resumed = run_cli("run", str(tmp_path / "slow.yml"), "--results", str(tmp_path / "results"), "--resume", str(folder))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[:6] == [
        "resuming: 1 of 5 runs are done already",
        *[f"PASS slow/slow-{n}" for n in range(1, 5)],
        "5/5 passed",
    ]
    (combined,) = [f for f in (tmp_path / "results").iterdir() if f != folder]
    report = json.loads((combined / "report.json").read_text())
    assert [r["case"] for r in report["runs"]] == ["slow/quick", *[f"slow/slow-{n}" for n in range(1, 5)]]
    assert report["exit_code"] == 0 and "unfinished" not in report


def test_a_second_ctrl_c_quits_at_once_kills_running_commands_and_keeps_finished_runs(tmp_path: Path) -> None:
    token = "sleep 4242.3"
    # in setup: the first Ctrl-C stops a tool call's command, not a setup command
    suite = (f"- id: stuck\n  setup: ['{token}']\n  turns: [go]\n  script: [{{content: done}}]\n"
             "- id: quick\n  turns: [go]\n  script: [{content: done}]\n")
    proc = start_run(tmp_path, suite, "-j", "2")
    deadline = time.monotonic() + 10
    runs = tmp_path / "results"
    while not (processes_with(token) and list(runs.glob("*/runs/*quick*"))) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=5)
    assert proc.returncode == 2
    assert "interrupted again: quitting now" in err
    assert none_left(token)
    assert out == ""  # quick's line waited for stuck's, in plan order, but its run is on disk:
    assert [p.name for p in runs.glob("*/runs/*.json")] == ["0002-slow-quick-scripted-default-r1.json"]


def test_a_folder_interrupted_before_any_run_finished_resumes_by_running_them_all(tmp_path: Path) -> None:
    token = "sleep 1.8765"
    suite = "".join(f"- id: {name}\n  turns: [go]\n  script:\n    - tool_calls: [{{name: bash, arguments: {{command: "
                    f"{token}}}}}]\n    - content: done\n" for name in ("a", "b"))
    proc = start_run(tmp_path, suite, "--runs", "2", "-j", "1", "--sandbox", "none")
    deadline = time.monotonic() + 10
    while not processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 2
    assert out.splitlines()[:3] == ["0/0 passed (4 runs not finished: interrupted)",
                                    "interrupted: 4 runs did not finish (cases: slow/a, slow/b)",
                                    "no run finished: run the same command again"]
    (folder,) = (tmp_path / "results").iterdir()
    assert not list((folder / "runs").iterdir())
    assert len(json.loads((folder / "report.json").read_text())["unfinished"]) == 4
    resumed = run_cli("run", str(tmp_path / "slow.yml"), "--runs", "2", "-j", "4", "--sandbox", "none",
                      "--results", str(tmp_path / "results"), "--resume", str(folder))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.splitlines()[:5] == ["PASS slow/a #1", "PASS slow/a #2", "PASS slow/b #1", "PASS slow/b #2",
                                               "4/4 passed"]
