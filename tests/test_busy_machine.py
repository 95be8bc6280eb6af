"""A busy machine buys no unconfined shell.

Under fork pressure bubblewrap fails with ``Creating new namespace failed: Resource temporarily unavailable``.
``--sandbox auto`` once read that as "bubblewrap does not work here" and ran every command unconfined; a command
whose start failed later was the model's result (bwrap's message as the tool's output), a fork refused to tooltrial
an internal error (exit 3), a thread refused the whole suite's end (exit 3). Now the probe makes a refused trial
again and, refused each time, stops the invocation (exit 6); after it, a command or thread that cannot be started is
its run's ``start_failed`` error (infrastructure, exit 6), the other runs kept.

Each attack's canary is a command that writes outside its workspace, into a folder bubblewrap gives every command
a private copy of (``/tmp``): run confined it leaves nothing on the host; run unconfined, the file.
"""

from __future__ import annotations

import errno
import json
import os
import pickle
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from runner.run.options import RunOptions
from runner.sandbox.bounds import Bounds
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.suite.portable import WorkerSetup
from tests.helpers import run_cli, tooltrial
from tests.sandboxes import BWRAP, make_sandbox, needs_bwrap

REFUSED = "bwrap: Creating new namespace failed: Resource temporarily unavailable"


def _suite(tmp_path: Path) -> tuple[Path, Path]:
    """A suite whose second case's one command writes the canary (outside its workspace); its path and the
    canary's."""
    canary = tmp_path / "outside" / "canary"
    suite = tmp_path / "busy.yml"
    suite.write_text(f"""\
- id: before
  turns: [Say hi.]
  expect: {{response_contains: [hi]}}
  script:
    - tool_calls: [{{name: bash, arguments: {{command: echo hi}}}}]
    - content: hi
- id: escape
  turns: [Write outside the workspace.]
  expect: {{response_contains: [done]}}
  script:
    - tool_calls: [{{name: bash, arguments: {{command: "mkdir -p {canary.parent} && echo out > {canary}"}}}}]
    - content: done
- id: after
  turns: [Say hi.]
  expect: {{response_contains: [hi]}}
  script:
    - tool_calls: [{{name: bash, arguments: {{command: echo hi}}}}]
    - content: hi
""")
    return suite, canary


def _fake_bwrap(tmp_path: Path, refuse: str) -> dict[str, str]:
    """A ``bwrap`` first on PATH that counts its calls in ``tmp_path/calls`` and, when shell condition ``refuse``
    holds (``$n``: the calls before this one; ``$*``: its arguments), fails as bubblewrap does under fork pressure;
    else it is the real one. The environment that puts it there."""
    folder = tmp_path / "bin"
    folder.mkdir()
    calls = tmp_path / "calls"
    calls.write_text("")
    (folder / "bwrap").write_text(f"""#!/bin/sh
n=$(wc -l < {calls}); echo call >> {calls}
if {refuse}; then echo '{REFUSED}' >&2; exit 1; fi
exec {BWRAP} "$@"
""")
    (folder / "bwrap").chmod(0o755)
    return {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "PATH": f"{folder}:{os.environ['PATH']}"}


def _calls(tmp_path: Path) -> int:
    """How many times the fake ``bwrap`` ran (a line each: commands of runs at once append, never overwrite)."""
    return len((tmp_path / "calls").read_text().splitlines())


def _records(results: Path) -> dict[str, dict[str, Any]]:
    """The run files under ``results``, by case id."""
    return {(run := json.loads(p.read_text()))["case"].split("/")[1]: run for p in results.glob("*/runs/*.json")}


@needs_bwrap
def test_auto_tries_a_busy_bubblewrap_again_and_confines_every_command(tmp_path: Path) -> None:
    suite, canary = _suite(tmp_path)
    env = _fake_bwrap(tmp_path, '[ "$n" -lt 2 ]')  # the probe's first two trials refused
    done = tooltrial("run", str(suite), "--results", str(tmp_path / "results"), env=env)
    assert not canary.exists()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "bubblewrap unavailable" not in done.stderr and "unconfined" not in done.stderr
    records = _records(tmp_path / "results")
    assert {case: (run["status"], run["sandbox"]["mode"]) for case, run in records.items()} == {
        "before": ("pass", "bwrap"), "escape": ("pass", "bwrap"), "after": ("pass", "bwrap")}
    assert _calls(tmp_path) == 3 + 3  # two trials refused, the third confined; three commands


@needs_bwrap
def test_a_bubblewrap_busy_at_every_try_stops_the_run_instead_of_running_unconfined(tmp_path: Path) -> None:
    suite, canary = _suite(tmp_path)
    env = _fake_bwrap(tmp_path, "true")
    done = tooltrial("run", str(suite), "--results", str(tmp_path / "results"), env=env)
    assert not canary.exists()
    assert (done.returncode, done.stdout) == (6, "")
    assert done.stderr.splitlines()[-1] == (
        f"error: cannot tell whether {tmp_path}/bin/bwrap works here: {REFUSED} (6 tries in 1.55 s) "
        "(the machine is out of processes or memory; try again once it is less busy)")
    assert not (tmp_path / "results").exists()
    assert _calls(tmp_path) == 6


@needs_bwrap
def test_a_confined_command_refused_mid_suite_is_an_infrastructure_error_never_run_unconfined(tmp_path: Path) -> None:
    suite, canary = _suite(tmp_path)
    env = _fake_bwrap(tmp_path, 'case "$*" in *canary*) true;; *) false;; esac')  # the escape's command refused
    done = tooltrial("run", str(suite), "--results", str(tmp_path / "results"), env=env)
    assert done.returncode == 6, done.stdout + done.stderr  # infrastructure broke a run
    assert f"ERROR busy/escape: the sandbox did not start the command: {REFUSED}" in done.stdout
    records = _records(tmp_path / "results")
    assert {case: (run["status"], run["error_kind"], run["sandbox"]["mode"]) for case, run in records.items()} == {
        "before": ("pass", None, "bwrap"), "escape": ("error", "start_failed", "bwrap"),
        "after": ("pass", None, "bwrap")}
    assert records["escape"]["cause"] == f"the sandbox did not start the command: {REFUSED}"
    assert not canary.exists()


def test_a_command_the_machine_cannot_fork_is_an_infrastructure_error(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    suite, canary = _suite(tmp_path)
    popen = subprocess.Popen

    def refusing(argv: list[str], *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        if any("canary" in part for part in argv):
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        return popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", refusing)
    done = run_cli("run", str(suite), "--results", str(tmp_path / "results"), "--sandbox", "none")
    assert done.returncode == 6, done.stdout + done.stderr
    records = _records(tmp_path / "results")
    assert {case: (run["status"], run["error_kind"]) for case, run in records.items()} == {
        "before": ("pass", None), "escape": ("error", "start_failed"), "after": ("pass", None)}
    assert records["escape"]["cause"] == ("the machine is out of processes or memory: "
                                          "[Errno 11] Resource temporarily unavailable")
    assert not canary.exists()


def test_a_run_whose_thread_the_machine_refuses_is_an_infrastructure_error_and_the_rest_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite, _ = _suite(tmp_path)
    start = threading.Thread.start
    runs: list[str] = []

    def refusing(thread: threading.Thread) -> None:
        if thread.name.startswith("tooltrial-run"):
            runs.append(thread.name)
            if len(runs) > 1:  # the machine gives one thread to runs, then no more
                raise RuntimeError("can't start new thread")
        start(thread)

    monkeypatch.setattr(threading.Thread, "start", refusing)
    done = run_cli("run", str(suite), "--results", str(tmp_path / "results"), "--sandbox", "none", "-j", "2")
    assert done.returncode == 6, done.stdout + done.stderr
    records = _records(tmp_path / "results")
    assert {case: (run["status"], run["error_kind"]) for case, run in records.items()} == {
        "before": ("pass", None), "escape": ("error", "start_failed"), "after": ("error", "start_failed")}
    assert records["after"]["cause"] == ("the machine could not start a thread for this run (out of processes or "
                                         "memory): can't start new thread (6 tries in 1.55 s)")


def test_output_that_looks_like_a_bubblewrap_failure_is_the_commands_own(tmp_path: Path) -> None:
    """A model cannot turn its command's failure into an unscored infrastructure error by printing bwrap's words."""
    result = make_sandbox("bwrap" if BWRAP else "none").run(f"echo '{REFUSED}' >&2; exit 1", tmp_path,
                                                            scrubbed_env(tmp_path), Bounds(10))
    assert (result.exit_code, result.output) == (1, REFUSED + "\n")


def test_a_command_kept_from_starting_by_its_own_doing_is_no_infrastructure_error(tmp_path: Path) -> None:
    """A workspace a command removed, a command line too long for the kernel: the model's doing, shown to it."""
    sandbox, env = Sandbox("none"), scrubbed_env(tmp_path)
    with pytest.raises(FileNotFoundError):
        sandbox.run("true", tmp_path / "removed", env, Bounds(10))
    with pytest.raises(OSError) as long:
        sandbox.run("echo " + "x" * 200_000, tmp_path, env, Bounds(10))
    assert long.value.errno == errno.E2BIG


def test_a_worker_rebuilds_the_parents_sandbox_and_probes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox = Sandbox("none")
    setup = pickle.loads(pickle.dumps(WorkerSetup.from_options(RunOptions(sandbox))))  # as a worker gets it

    def probe(mode: str) -> None:
        raise AssertionError("a worker probed the machine")

    monkeypatch.setattr("runner.sandbox.command.probe_machine", probe)
    rebuilt = setup.options(threading.Event()).sandbox
    assert (rebuilt.probed, rebuilt.confinement) == (sandbox.probed, sandbox.confinement)
