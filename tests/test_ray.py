"""``run --executor ray``: the runs as tasks on a real two-node Ray cluster on loopback (tests/raycluster.py),
against a local run of the same suite; provider keys reaching the workers and nothing on disk; a worker
killed mid-run; and the mistakes refused before anything runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import ExitCode
from runner.spec.config import load_config
from runner.suite.rayexec import forwarded_keys, key_variables, pack_folder, unpacked
from tests.executors import comparable
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import ROOT, SAMPLE_CASES, SAMPLE_GROUPS, bundled_suite, make_case, run_cli
from tests.raycluster import Cluster, short_folder, start_cluster

KEY_VARIABLE = "TT_RAY_TEST_KEY"
KEY = "sk-tooltrial-ray-test-0f9e8d7c6b5a"  # a fake key that must reach the workers and no file
FIGURES = ("overall", "arms", "cells", "paired", "exit_code")  # report.json's figures
TWO = """\
- id: quick
  turns: [Say hi.]
  expect: {response_contains: [hi]}
  script: [{content: hi}]
- id: slow
  files: {ray-test-marker: ""}
  setup: [sleep 30]
  turns: [Say hi.]
  script: [{content: hi}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A head and a worker node, one CPU each; every process of theirs gone afterwards, whatever happened."""
    given = tmp_path_factory.mktemp("r")
    base = short_folder(given)
    env = {k: v for k, v in os.environ.items() if k not in (KEY_VARIABLE, "RAY_ADDRESS")}
    started = start_cluster(base, env)
    try:
        yield started
    finally:
        started.stop()
        left = started.processes()
        if base != given:
            shutil.rmtree(base, ignore_errors=True)
        assert left == [], f"Ray processes left running: {left}"


def _results(cases: Path, results: Path, *more: str, env: dict[str, str | None] | None = None,
             cwd: Path = ROOT) -> tuple[subprocess.CompletedProcess[str], Path]:
    done = run_cli("run", str(cases), "--results", str(results), *more, env=env, cwd=cwd)
    return done, next(results.iterdir())


def _runs(folder: Path) -> dict[str, Any]:
    return {p.name: json.loads(p.read_text()) for p in sorted((folder / "runs").iterdir())}


def _placements(address: str) -> Counter[str]:
    """How many ``run_on_node`` tasks each node ran, from the task events the cluster's GCS keeps."""
    import ray
    from ray._private.state import state

    ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    try:
        nodes = {(e.task_id, e.state_updates.node_id.hex()) for e in state._get_all_task_events()
                 if e.HasField("state_updates") and e.state_updates.node_id}
        names = {e.task_id for e in state._get_all_task_events()
                 if e.HasField("task_info") and e.task_info.name == "run_on_node"}
    finally:
        ray.shutdown()
    return Counter(node for task, node in nodes if task in names)


@pytest.mark.slow
def test_four_bundled_groups_on_two_nodes_equal_a_local_run(cluster: Cluster, tmp_path: Path) -> None:
    cases = bundled_suite(tmp_path, SAMPLE_GROUPS)
    local_done, local = _results(cases, tmp_path / "local", "-j", "4")
    done, remote = _results(cases, tmp_path / "ray", "-j", "4", "--executor", "ray", "--ray-address", cluster.address)
    assert (done.returncode, local_done.returncode) == (ExitCode.OK, ExitCode.OK), done.stderr
    ours, theirs = _runs(remote), _runs(local)
    assert list(ours) == list(theirs) and len(ours) == SAMPLE_CASES
    for name in theirs:
        assert comparable(ours[name]) == comparable(theirs[name]), name
    report, expected = (json.loads((folder / "report.json").read_text()) for folder in (remote, local))
    assert comparable({k: report[k] for k in FIGURES}) == comparable({k: expected[k] for k in FIGURES})
    assert report["overall"]["passed"] == SAMPLE_CASES
    placed = _placements(cluster.address)
    assert sum(placed.values()) == SAMPLE_CASES and len(placed) == 2 and min(placed.values()) > 0, placed


@pytest.mark.slow
@pytest.mark.usefixtures("litellm_loaded")
def test_provider_keys_reach_the_workers_and_no_record_report_or_ray_log(cluster: Cluster, tmp_path: Path) -> None:
    (tmp_path / "cases.yml").write_text("- id: hello\n  turns: [Say hi.]\n  expect: {response_contains: [hi]}\n")
    echo = lambda received: openai_reply(f"hi, {received.headers.get('authorization')}", usage=(10, 5))
    with OpenAIServer(responder=echo) as server:
        (tmp_path / "tooltrial.yml").write_text(
            f"providers:\n  fake:\n    model: openai/fake\n    api_base: {server.api_base}\n"
            f"    api_key_env: {KEY_VARIABLE}\n    max_concurrency: 2\n")
        done, results = _results(tmp_path / "cases.yml", tmp_path / "results", "-p", "fake", "--runs", "2",
                                 "-j", "2", "--executor", "ray", "--ray-address", cluster.address,
                                 env={KEY_VARIABLE: KEY}, cwd=tmp_path)
        sent = [received.headers.get("authorization") for received in server.chats]
    assert done.returncode == ExitCode.OK, done.stderr
    assert sent == [f"Bearer {KEY}"] * 2  # the workers had the key: the nodes were started without it
    assert [r["status"] for r in _runs(results).values()] == ["pass", "pass"]
    leaks = [p for folder in (results, *cluster.folders) for p in folder.rglob("*")
             if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaks == [] and KEY not in done.stdout + done.stderr
    # the reply echoed the key: each task redacted it with the secrets it was sent
    assert [r["final_reply"] for r in _runs(results).values()] == [f"hi, Bearer [redacted: {KEY_VARIABLE}]"] * 2


@pytest.mark.slow
def test_a_worker_killed_mid_run_is_that_runs_infrastructure_error_and_the_suite_goes_on(cluster: Cluster,
                                                                                         tmp_path: Path) -> None:
    (tmp_path / "two.yml").write_text(TWO)
    killed: list[int] = []

    def kill_the_slow_run() -> None:  # its Ray worker, once its setup is sleeping
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            worker = _sleeping(cluster)
            if worker is not None:
                subprocess.run(["kill", "-9", str(worker)], check=True)
                killed.append(worker)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_the_slow_run)
    killer.start()
    done, results = _results(tmp_path / "two.yml", tmp_path / "results", "-j", "2", "--sandbox", "none",
                             "--executor", "ray", "--ray-address", cluster.address)
    killer.join()
    records = _runs(results)
    assert len(killed) == 1 and done.returncode == ExitCode.INFRASTRUCTURE, done.stderr
    assert [(r["case"], r["status"], r["error_kind"]) for r in records.values()] == [
        ("two/quick", "pass", None), ("two/slow", "error", "worker_lost")]
    lost = records["0002-two-slow-scripted-default-r1.json"]
    assert lost["cause"].startswith("the Ray task of this run was lost: ") and lost["failure"] == "run_error"
    assert lost["sandbox"] == records["0001-two-quick-scripted-default-r1.json"]["sandbox"]


@pytest.mark.slow
def test_ctrl_c_cancels_the_tasks_in_flight_and_keeps_the_finished_runs(cluster: Cluster, tmp_path: Path) -> None:
    marker = f"ray-test-marker-{os.getpid()}-{time.time_ns()}"  # names the slow run's workspace
    (tmp_path / "two.yml").write_text(TWO.replace("ray-test-marker", marker))
    runs = tmp_path / "results"

    def press_ctrl_c() -> None:  # once the quick run is saved and the slow one sleeps in its setup
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            saved = list(runs.glob("*/runs/0001-*.json"))
            if saved and _sleeping(cluster) is not None:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.2)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    done, results = _results(tmp_path / "two.yml", runs, "-j", "2", "--sandbox", "none",
                             "--executor", "ray", "--ray-address", cluster.address)
    presser.join()
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr
    assert list(_runs(results)) == ["0001-two-quick-scripted-default-r1.json"]
    assert json.loads((results / "report.json").read_text())["overall"]["runs"] == 1
    assert _sleeping(cluster, task=b"") is None  # the cancelled task's setup command was killed with it
    assert list(Path(tempfile.gettempdir()).glob(f"tooltrial-*/{marker}")) == []  # and its workspace removed


def _sleeping(cluster: Cluster, task: bytes = b"ray::run_on_node") -> int | None:
    """The process of the cluster whose command line starts with ``task`` (by default a Ray worker running
    a task) that has the slow case's ``sleep 30`` among its descendants; None when none has."""
    for pid in cluster.processes():
        try:
            if (Path(f"/proc/{pid}/cmdline").read_bytes().startswith(task)
                    and any(Path(f"/proc/{c}/cmdline").read_bytes().startswith(b"sleep\x0030") for c in _descendants(pid))):
                return pid
        except OSError:
            continue
    return None


def _descendants(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    found = [int(c) for c in children.read_text().split()] if children.exists() else []
    return found + [d for c in found for d in _descendants(c)]


def test_import_runner_cli_and_a_local_run_never_import_ray(tmp_path: Path) -> None:
    (tmp_path / "two.yml").write_text(TWO.split("- id: slow")[0])
    probe = ("import sys; from runner.cli import main; imported = 'ray' in sys.modules; "
             f"code = main(['run', {str(tmp_path / 'two.yml')!r}, '--sandbox', 'none', '--results', "
             f"{str(tmp_path / 'results')!r}, '-q']); print(imported, 'ray' in sys.modules, code)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert done.stdout.splitlines()[-1] == "False False 0", done.stderr


def test_a_cluster_that_does_not_answer_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port the OS gave and nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "two.yml").write_text(TWO)
    done = run_cli("run", str(tmp_path / "two.yml"), "--executor", "ray", "--ray-address", f"127.0.0.1:{port}",
                   "--results", str(tmp_path / "results"))
    assert done.returncode == ExitCode.USAGE
    assert done.stderr == (f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused "
                           "(start one (ray start --head --port PORT) or give its head's address as "
                           "--ray-address HOST:PORT)\n")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("flags, message", [
    (["--ray-address", "127.0.0.1:6379"], ("error: --ray-address is for --executor ray "
                                           "(add --executor ray, or leave --ray-address out)\n")),
    (["--executor", "ray", "--live"], ("error: --live is for the local executor: with --executor ray the runs "
                                       "happen on the cluster (leave --live out)\n")),
    (["--executor", "ray", "--workers", "2"], ("error: --workers is for the local executor: with --executor ray "
                                               "the runs happen on the cluster (leave --workers out)\n")),
])
def test_flags_that_do_not_go_with_the_executor_are_usage_errors(tmp_path: Path, flags: list[str],
                                                                 message: str) -> None:
    (tmp_path / "two.yml").write_text(TWO)
    done = run_cli("run", str(tmp_path / "two.yml"), *flags, "--results", str(tmp_path / "results"))
    assert (done.returncode, done.stderr) == (ExitCode.USAGE, message)


def test_without_ray_installed_the_executor_says_how_to_get_it(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError, as where it is not installed
    (tmp_path / "two.yml").write_text(TWO)
    done = run_cli("run", str(tmp_path / "two.yml"), "--executor", "ray", "--results", str(tmp_path / "results"))
    assert done.returncode == ExitCode.USAGE
    assert done.stderr == ("error: --executor ray needs Ray, which is not installed here (import of ray halted; "
                           "None in sys.modules) (install the ray extra: pip install 'tooltrial[ray]')\n")


_NAME = st.from_regex(r"[a-z0-9_-][a-z0-9._-]{0,11}", fullmatch=True)


@settings(max_examples=25, deadline=None)
@given(files=st.dictionaries(st.tuples(st.sampled_from(["", "sub/", "sub/deeper/"]), _NAME), st.binary(max_size=64),
                             max_size=6),
       link=st.booleans())
def test_a_fixture_folder_arrives_on_the_node_as_it_is_here(files: dict[tuple[str, str], bytes], link: bool) -> None:
    with tempfile.TemporaryDirectory() as here:
        folder = Path(here) / "fx"
        folder.mkdir()
        for (under, name), content in files.items():
            (folder / under).mkdir(parents=True, exist_ok=True)
            (folder / under / name).write_bytes(content)
        if link:
            (folder / "to-outside").symlink_to("/etc/hostname")  # a link stays a link, whatever it points at
        (folder / "run.sh").write_text("#!/bin/sh\n")
        (folder / "run.sh").chmod(0o755)
        with unpacked(make_case(fixture="fx", fixtures_dir=Path(here)), pack_folder(folder)) as case:
            assert case.fixtures_dir is not None and case.fixtures_dir != Path(here)
            arrived = case.fixtures_dir / "fx"
            assert _tree(arrived) == _tree(folder)
        assert not arrived.exists()  # removed after the run


def _tree(folder: Path) -> dict[str, Any]:
    return {str(p.relative_to(folder)): (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file() else None,
                                         p.lstat().st_mode) for p in folder.rglob("*")}


@pytest.mark.usefixtures("litellm_loaded")
def test_the_keys_forwarded_are_the_variables_the_suites_providers_read(tmp_path: Path) -> None:
    (tmp_path / "tooltrial.yml").write_text("providers:\n  mine:\n    model: anthropic/claude-x\n"
                                            "    api_key_env: MY_KEY\n")
    config = load_config(str(tmp_path / "tooltrial.yml"))
    names = key_variables(["scripted", "mine", "openai/gpt-4o", "ollama/qwen3", "openai/gpt-4o-mini"], config)
    assert names == ["MY_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OLLAMA_API_BASE"]  # what litellm reads
    environ = {"MY_KEY": "k1", "ANTHROPIC_API_KEY": " ", "OPENAI_API_KEY": "k3", "OTHER_KEY": "k4"}
    assert forwarded_keys(names, environ) == {"MY_KEY": "k1", "OPENAI_API_KEY": "k3"}
