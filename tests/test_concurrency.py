"""Concurrent runs: the bounded pool, isolated workspaces, -j independent output, Ctrl-C."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runner.engine import Arm, RunOptions, run_matrix
from runner.pool import run_pool
from runner.prompts import load_prompt
from runner.providers import resolve_provider
from runner.record import PASS
from tests.helpers import make_case
from tests.sandboxes import BWRAP, make_sandbox, none_left, processes_with
from tests.test_cli import BAD_RUN, GOOD, ROOT, tooltrial

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

    for ordered, expected in [(True, [0, 1, 2, 3]), (False, [3, 2, 1, 0])]:
        seen: list[int] = []
        results = run_pool(work, 4, 4, threading.Event(), lambda i, r: seen.append(i), ordered)
        assert results == {0: 0, 1: 10, 2: 20, 3: 30}
        assert seen == expected


def test_pool_stop_leaves_the_rest_unstarted() -> None:
    stop = threading.Event()

    def work(index: int) -> int:
        if index == 2:
            stop.set()
        return index

    assert run_pool(work, 10, 1, stop) == {0: 0, 1: 1, 2: 2}


def test_pool_error_stops_scheduling_and_propagates() -> None:
    stop = threading.Event()

    def work(index: int) -> int:
        if index == 1:
            raise RuntimeError("bug")
        return index

    with pytest.raises(RuntimeError, match="bug"):
        run_pool(work, 50, 2, stop)
    assert stop.is_set()


def test_concurrent_runs_of_one_case_each_get_their_own_workspace() -> None:
    case = make_case(
        script=[
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo $$ >> shared.txt; sleep 0.2"}}]},
            {"content": "done"},
        ],
        expect={"verify": 'test "$(wc -l < shared.txt)" -eq 1'},
    )
    options = RunOptions(make_sandbox("bwrap" if BWRAP else "none"), keep=True, jobs=8)
    started = time.monotonic()
    records = run_matrix([case], [ARM], options, repeats=8)
    elapsed = time.monotonic() - started
    try:
        assert [r.status for r in records] == [PASS] * 8
        assert [r.run for r in records] == list(range(8))
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
    one = tooltrial("run", *paths, "--runs", "2", "-j", "1")
    eight = tooltrial("run", *paths, "--runs", "2", "-j", "8")
    assert one.returncode == eight.returncode == 1
    assert _timeless(one.stdout) == _timeless(eight.stdout)
    assert one.stdout.startswith("PASS fs/read-file-lines #1\nPASS fs/read-file-lines #2\n")
    assert "\n14/20 passed\n" in one.stdout


def _timeless(output: str) -> str:
    """``output`` with the summary table's times (``1.3s``) and the padding around them dropped."""
    return re.sub(r" +", " ", re.sub(r"\b\d+(?:\.\d+)?s\b", "", output))


def _start(tmp_path: Path, suite: str, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "slow.yml").write_text(suite)
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "run", str(tmp_path / "slow.yml"), *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_ctrl_c_lets_running_runs_stop_reports_what_finished_and_exits_2(tmp_path: Path) -> None:
    proc = _start(tmp_path, SLOW, "-j", "1")
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 2
    lines = out.splitlines()
    assert (first, lines[0]) == ("PASS slow/quick\n", "1/1 passed")
    assert lines[-2:] == [
        "interrupted: 4 runs did not finish, of cases: slow/slow-1, slow/slow-2, slow/slow-3, slow/slow-4",
        "to run just those: add -c slow/slow-1 -c slow/slow-2 -c slow/slow-3 -c slow/slow-4",
    ]
    assert "Ctrl-C again to quit now" in err


def test_a_second_ctrl_c_quits_at_once_and_kills_running_commands(tmp_path: Path) -> None:
    token = "sleep 4242.3"
    suite = f"- id: stuck\n  turns: [go]\n  script:\n    - tool_calls: [{{name: bash, arguments: {{command: '{token}'}}}}]\n"
    proc = _start(tmp_path, suite)
    deadline = time.monotonic() + 10
    while not processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=5)
    assert proc.returncode == 2
    assert "interrupted again: quitting now" in err
    assert none_left(token)
