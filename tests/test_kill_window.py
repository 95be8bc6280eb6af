"""tooltrial killed (SIGKILL) while its commands start leaves none of them running.

Each trial kills a process that starts commands as tooltrial's run threads do (the sandbox ``--sandbox MODE``
chooses, four commands at once, each on a thread of its own) 0 to 50 ms after it began to start them, then reads
the process table: no process of any command may be left. Without the start-up guard (runner.sandbox.guard) a
command whose parent died before its parent-death signal was set (``prlimit`` before ``setpriv``; bubblewrap's own
process in the sandbox, which sets it late and never looks) ran on under init: under bwrap as root, 12 of 22
trials of ``tooltrial run -j 8`` left some. The slow test kills a real ``tooltrial run`` the same way.
"""

from __future__ import annotations

import ctypes  # noqa: F401  (imported before as_nobody drops root: nobody cannot read the standard library)
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runner.sandbox.bwrap import host_view
from runner.sandbox.choose import choose_sandbox
from runner.sandbox.command import scrubbed_env
from tests.helpers import ROOT, as_nobody, nobody_home
from tests.sandboxes import BWRAP, processes_with

TRIALS = 50
COMMANDS = 4  # started at once in each trial
WINDOW = 0.05  # seconds: the trials' kills are spread over this much time after the commands began to start
needs_bwrap = pytest.mark.skipif(BWRAP is None, reason="bubblewrap unusable here")


def _token() -> str:
    """A ``sleep`` duration no other process has on its command line."""
    return f"{3000 + secrets.randbelow(999)}.{secrets.randbelow(10**6):06d}"


def _kill_trials(mode: str, workspace: Path, token: str, trials: int = TRIALS) -> list[int]:
    """``trials`` stand-ins for tooltrial, forked from this process, each killed at its offset into the start of its
    commands (``sleep TOKEN`` in ``workspace``); the pids of the commands' processes left a second after the last."""
    sandbox = choose_sandbox(mode)
    env = scrubbed_env(workspace)
    host_view(env["PATH"], sandbox.hide)  # what bwrap mounts, worked out once here as in tooltrial after one command
    for trial in range(trials):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the stand-in: never returns
            os.close(read)
            threads = [threading.Thread(target=sandbox.run, args=(f"sleep {token}", workspace, env, 60.0))
                       for _ in range(COMMANDS)]
            os.write(write, b"go")  # its commands start now
            for thread in threads:
                thread.start()
            time.sleep(60)
            os._exit(0)
        os.close(write)
        os.read(read, 2)
        os.close(read)
        time.sleep(WINDOW * trial / (trials - 1))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    time.sleep(1)
    return processes_with(f"sleep {token}")


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("mode", [pytest.param("bwrap", marks=needs_bwrap), "none"])
def test_no_command_outlives_a_kill_as_it_starts(mode: str, tmp_path: Path) -> None:
    token = _token()
    try:
        left = _kill_trials(mode, tmp_path, token)
    finally:
        _kill(processes_with(f"sleep {token}"))
    assert left == []


@pytest.mark.skipif(os.geteuid() != 0, reason="runs as nobody: needs root (as a user, the tests above are this)")
@pytest.mark.parametrize("mode", [pytest.param("bwrap", marks=needs_bwrap), "none"])
def test_no_command_outlives_a_kill_as_it_starts_as_another_user(mode: str) -> None:
    token = _token()
    with nobody_home() as home:
        try:
            left = as_nobody(lambda: _kill_trials(mode, home, token), home)
        finally:
            _kill(processes_with(f"sleep {token}"))
    assert left == []


@pytest.mark.slow
@pytest.mark.parametrize("mode, more", [pytest.param("bwrap", (), marks=needs_bwrap),  # plain mode: the fast tests
                                        pytest.param("bwrap", ("--workers", "2"), marks=needs_bwrap)])
def test_no_command_outlives_tooltrial_killed_as_its_commands_start(mode: str, more: tuple[str, ...],
                                                                    tmp_path: Path) -> None:
    token = _token()
    suite = f"- id: s\n  setup: ['sleep {token}']\n  turns: [hi]\n  script: [{{content: hi}}]\n"
    (tmp_path / "slow.yml").write_text(suite)
    argv = [sys.executable, "-m", "runner", "run", str(tmp_path / "slow.yml"), "--results", str(tmp_path / "results"),
            "--sandbox", mode, "--runs", "8", "-j", "8", *more]
    trials = 5
    temp = tmp_path / "tmp"  # where the workspaces of the runs cut short stay
    temp.mkdir()
    try:
        for trial in range(trials):
            said = tmp_path / f"stderr-{trial}"
            with said.open("wb") as stderr:
                tooltrial = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
                                             env={**os.environ, "TMPDIR": str(temp)})
            deadline = time.monotonic() + 60
            while not processes_with(f"sleep {token}"):  # its first command begins to start
                assert time.monotonic() < deadline and tooltrial.poll() is None, (
                    f"no command started (exit {tooltrial.poll()}): {said.read_text(errors='replace')[-3000:]}")
            time.sleep(WINDOW * trial / (trials - 1))
            tooltrial.kill()
            tooltrial.wait()
        time.sleep(1)
        left = processes_with(f"sleep {token}")
    finally:
        _kill(processes_with(f"sleep {token}"))
    assert left == []
