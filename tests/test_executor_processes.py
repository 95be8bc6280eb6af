"""The process executor (``run --workers N``): the same records as threads, Ctrl-C, a worker killed mid-run."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from runner.suite.executors import AUTO_MIN_RUNS, worker_count
from tests.executors import comparable
from tests.helpers import GOOD, SAMPLE_CASES, SAMPLE_GROUPS, bundled_suite, run_cli, start_run, tooltrial
from tests.sandboxes import none_left, processes_with


def _folder(results: Path) -> Path:
    (folder,) = results.iterdir()
    return folder


def _runs(folder: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((folder / "runs").iterdir())}


@pytest.mark.slow
def test_four_bundled_groups_on_two_worker_processes_record_what_threads_record(tmp_path: Path) -> None:
    cases = str(bundled_suite(tmp_path, SAMPLE_GROUPS))
    for workers in ("1", "2"):
        done = run_cli("run", cases, "-p", "scripted", "-j", "4", "--workers", workers,
                       "--results", str(tmp_path / workers))
        assert done.returncode == 0, done.stderr
    threads, processes = _folder(tmp_path / "1"), _folder(tmp_path / "2")
    on_threads, on_processes = _runs(threads), _runs(processes)
    assert list(on_threads) == list(on_processes) and len(on_threads) == SAMPLE_CASES
    for name, record in on_threads.items():
        assert comparable(on_processes[name]) == comparable(record), name
    report = {w: json.loads((f / "report.json").read_text()) for w, f in (("1", threads), ("2", processes))}
    assert report["2"].pop("results") == str(processes) and report["1"].pop("results") == str(threads)
    assert comparable(report["2"]) == comparable(report["1"])
    assert report["2"]["overall"]["passed"] == SAMPLE_CASES and report["2"]["exit_code"] == 0


SLOW = "- id: quick\n  turns: [go]\n  script: [{content: done}]\n" + "".join(
    f"- id: slow-{n}\n  turns: [go]\n  script:\n"
    f"    - tool_calls: [{{name: bash, arguments: {{command: sleep 1.{n}}}}}]\n    - content: done\n"
    for n in range(1, 5))


def _session_left(session: int, within: float = 3.0) -> list[int]:
    """The processes still in ``session`` (the tooltrial process's own, which its workers and fork server
    share) after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            if fields[0] != "Z" and int(fields[3]) == session:
                left.append(int(entry.name))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def test_ctrl_c_on_worker_processes_keeps_finished_runs_and_leaves_no_process(tmp_path: Path) -> None:
    proc = start_run(tmp_path, SLOW, "-j", "2", "--workers", "2", new_session=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=30)
    assert (proc.returncode, first) == (2, "PASS slow/quick\n"), err
    assert "Ctrl-C again to quit now" in err and "Traceback" not in err
    assert _session_left(proc.pid) == []
    folder = _folder(tmp_path / "results")
    saved = _runs(folder)
    assert "0001-slow-quick-scripted-default-r1.json" in saved
    assert all(r["status"] == "pass" for r in saved.values())
    report = json.loads((folder / "report.json").read_text())
    assert report["exit_code"] == 2
    assert sorted([r["case"] for r in report["runs"]] + [u["case"] for u in report["unfinished"]]) == [
        "slow/quick", *[f"slow/slow-{n}" for n in range(1, 5)]]
    assert len(report["runs"]) == len(saved) < 5


def test_a_second_ctrl_c_kills_the_workers_and_their_commands(tmp_path: Path) -> None:
    token = "sleep 4242.5"
    suite = (f"- id: stuck\n  setup: ['{token}']\n  turns: [go]\n  script: [{{content: done}}]\n"
             "- id: quick\n  turns: [go]\n  script: [{content: done}]\n")
    proc = start_run(tmp_path, suite, "-j", "2", "--workers", "2", new_session=True)
    deadline = time.monotonic() + 20
    while not (processes_with(token) and list((tmp_path / "results").glob("*/runs/*quick*"))):
        assert time.monotonic() < deadline, "the runs did not start"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=10)
    assert proc.returncode == 2 and "interrupted again: quitting now" in err
    assert none_left(token, within=3.0)
    assert _session_left(proc.pid) == []
    assert [p.name for p in (tmp_path / "results").glob("*/runs/*.json")] == ["0002-slow-quick-scripted-default-r1.json"]


def test_a_worker_killed_mid_run_makes_its_run_an_internal_error_and_the_suite_goes_on(tmp_path: Path) -> None:
    token = "sleep 4242.7"
    suite = (f"- id: doomed\n  turns: [go]\n  script:\n    - tool_calls: [{{name: bash, arguments: {{command: '{token}'}}}}]"
             "\n    - content: done\n" + "".join(f"- id: after-{n}\n  turns: [go]\n  script: [{{content: done}}]\n"
                                             for n in range(1, 5)))
    (tmp_path / "suite.yml").write_text(suite)
    killed: list[int] = []

    def kill_the_doomed_runs_worker() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not killed:
            workers = {p.pid for p in multiprocessing.active_children() if p.name == "tooltrial-worker"}
            for pid in processes_with(token):
                # the command itself, not a wrapper still starting it (prlimit, bwrap, bash): a kill that early
                # races the wrapper setting its death signal, which this test is not about
                with contextlib.suppress(OSError):
                    if not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0"):
                        continue
                while pid > 1 and pid not in workers:  # up from the command to the worker that started it
                    try:
                        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                    except FileNotFoundError:  # a process of the chain ended meanwhile: look again
                        break
                if pid in workers:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_doomed_runs_worker)
    killer.start()
    done = run_cli("run", str(tmp_path / "suite.yml"), "-j", "2", "--workers", "2", "--results", str(tmp_path / "r"))
    killer.join()
    assert killed, "no worker ran the doomed run"
    runs = _runs(_folder(tmp_path / "r"))
    doomed = runs["0001-suite-doomed-scripted-default-r1.json"]
    assert (doomed["status"], doomed["error_kind"]) == ("error", "internal")
    assert doomed["cause"].startswith(f"internal error: WorkerDied: worker process {killed[0]} was killed by SIGKILL "
                                      "while this run was going (out of memory?); the suite went on")
    assert [r["status"] for name, r in runs.items() if "after" in name] == ["pass"] * 4
    assert done.returncode != 0 and "ERROR suite/doomed" in done.stdout
    assert none_left(token)


def test_auto_workers_are_the_cpus_from_a_plan_large_enough_and_never_more_than_jobs_or_runs() -> None:
    assert worker_count(None, 64, AUTO_MIN_RUNS, cpus=8) == 8
    assert worker_count(None, 64, AUTO_MIN_RUNS - 1, cpus=8) == 1
    assert worker_count(None, 4, AUTO_MIN_RUNS, cpus=8) == 4
    assert worker_count(3, 64, 2, cpus=8) == 2
    assert worker_count(1, 64, 1000, cpus=8) == 1


def test_workers_start_under_a_temp_folder_too_long_for_their_socket(tmp_path: Path) -> None:
    long = tmp_path / ("t" * (100 - len(str(tmp_path))))  # a Unix socket's path holds 107 bytes
    long.mkdir()
    (tmp_path / "good.yml").write_text(GOOD)
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "TMPDIR": str(long)}
    done = tooltrial("run", str(tmp_path / "good.yml"), "--workers", "2", "-j", "2", "--results", str(tmp_path / "r"),
                     env=env)
    assert (done.returncode, done.stdout.splitlines()[:3]) == (0, ["PASS good/write-hello", "PASS good/count-lines",
                                                                   "2/2 passed"]), done.stderr


def test_workers_must_be_auto_or_a_positive_number() -> None:
    done = run_cli("run", "cases", "--workers", "0")
    assert done.returncode == 4
    assert "argument --workers: must be at least 1" in done.stderr
