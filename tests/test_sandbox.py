"""Sandbox, in both modes: scrubbed env, process-group timeouts, resource limits, death with
tooltrial, closed stdin, capped output."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runner.sandbox import confine
from runner.sandbox.bounds import Bounds
from runner.sandbox.command import CommandResult, Sandbox, budget, scrubbed_env
from runner.text import cap_text
from tests.sandboxes import MODES, make_sandbox, none_left, processes_with


@pytest.mark.parametrize("mode", MODES)
def test_env_is_scrubbed(mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret")
    env = scrubbed_env(tmp_path, {"GREETING": "hi", "LANG": "en_US.UTF-8"})
    assert set(env) == {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "PYTHONDONTWRITEBYTECODE", "GREETING"}
    result = make_sandbox(mode).run("env", tmp_path, env, Bounds(5))
    assert result.exit_code == 0
    assert "sk-fake-secret" not in result.output
    assert "OPENAI_API_KEY" not in result.output
    assert f"HOME={tmp_path}" in result.output
    assert "GREETING=hi" in result.output
    assert "LANG=en_US.UTF-8" in result.output
    assert "LC_ALL=C.UTF-8" in result.output


@pytest.mark.parametrize("mode", MODES)
def test_exit_code_cwd_and_stderr_merged(mode: str, tmp_path: Path) -> None:
    result = make_sandbox(mode).run("pwd; echo err >&2; exit 3", tmp_path, scrubbed_env(tmp_path), Bounds(5))
    assert result == CommandResult(3, f"{tmp_path}\nerr\n", False, result.duration)
    assert 0 < result.duration < 5


@pytest.mark.parametrize("mode", MODES)
def test_timeout_kills_the_process_group_including_grandchildren(mode: str, tmp_path: Path) -> None:
    # The shell, its child and its grandchild all ignore SIGTERM, so only SIGKILL ends them.
    token = f"sleep 4242.{mode == 'bwrap':d}1"
    command = f"trap '' TERM; bash -c \"trap '' TERM; {token} & wait\" & echo started; wait"
    # 1 s: long enough for bwrap to start and the shell to print even on a loaded machine
    result = make_sandbox(mode).run(command, tmp_path, scrubbed_env(tmp_path), Bounds(1.0))
    assert result.timed_out
    assert result.exit_code is None
    assert result.output == "started\n"
    assert result.duration < 3
    assert none_left(token)


@pytest.mark.parametrize("mode", MODES)
def test_background_child_holding_the_pipe_is_killed_after_exit(mode: str, tmp_path: Path) -> None:
    token = f"sleep 4242.{mode == 'bwrap':d}2"
    result = make_sandbox(mode).run(f"{token} & echo started", tmp_path, scrubbed_env(tmp_path), Bounds(10))
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.duration < 2
    assert none_left(token)



needs_util_linux = pytest.mark.skipif(
    confine.util_linux() is None, reason="util-linux's prlimit and setpriv are not installed"
)

@needs_util_linux
@pytest.mark.parametrize("mode", MODES)
def test_every_process_gets_the_resource_limits(mode: str, tmp_path: Path) -> None:
    result = make_sandbox(mode).run("ulimit -d; ulimit -f; ulimit -t", tmp_path, scrubbed_env(tmp_path), Bounds(5))
    cpu = math.ceil(5 * (os.cpu_count() or 1))
    # bash reports data in KiB and file size in 1024-byte blocks
    assert result.output.split() == [str(confine.MEMORY_LIMIT // 1024), str(confine.FILE_SIZE_LIMIT // 1024), str(cpu)]


@needs_util_linux
@pytest.mark.parametrize("mode", MODES)
def test_allocating_beyond_the_memory_limit_fails_at_once(mode: str, tmp_path: Path) -> None:
    command = f"python3 -c 'bytearray({2 * confine.MEMORY_LIMIT})'; echo still here"
    result = make_sandbox(mode).run(command, tmp_path, scrubbed_env(tmp_path), Bounds(10))
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.output.endswith("MemoryError\nstill here\n")
    assert result.duration < 5


@needs_util_linux
@pytest.mark.parametrize("mode", MODES)
def test_writing_beyond_the_file_size_limit_is_stopped(mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine, "FILE_SIZE_LIMIT", 2**20)
    result = make_sandbox(mode).run("head -c 3M /dev/zero > big", tmp_path, scrubbed_env(tmp_path), Bounds(10))
    assert result.exit_code == 128 + signal.SIGXFSZ
    assert "File size limit exceeded" in result.output
    assert (tmp_path / "big").stat().st_size == 2**20


_RUN_AND_WAIT = """
import sys
from pathlib import Path
from runner.sandbox.bounds import Bounds
from runner.sandbox.command import Sandbox, scrubbed_env
workspace = Path(sys.argv[3])
Sandbox(sys.argv[1], sys.argv[2]).run("sleep " + sys.argv[4], workspace, scrubbed_env(workspace), Bounds(60))
"""


@needs_util_linux
@pytest.mark.parametrize("mode", MODES)
def test_commands_die_when_tooltrial_is_killed(mode: str, tmp_path: Path) -> None:
    seconds = f"4242.{mode == 'bwrap':d}3"  # the runner's own command line holds this, not "sleep 4242..."
    token = f"sleep {seconds}"
    binary = make_sandbox(mode).binary
    runner = subprocess.Popen([sys.executable, "-c", _RUN_AND_WAIT, mode, binary, str(tmp_path), seconds])
    try:
        deadline = time.monotonic() + 10
        while not [pid for pid in processes_with(token) if _command_line(pid).startswith(token)]:
            assert time.monotonic() < deadline, "the command did not start"
            time.sleep(0.02)
    finally:
        runner.kill()
        runner.wait()
    assert none_left(token, within=3)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.parametrize("mode", MODES)
def test_stdin_is_closed(mode: str, tmp_path: Path) -> None:
    result = make_sandbox(mode).run("cat; read line; echo $?", tmp_path, scrubbed_env(tmp_path), Bounds(5))
    assert (result.exit_code, result.output, result.timed_out) == (0, "1\n", False)
    assert result.duration < 1


@pytest.mark.parametrize("mode", MODES)
def test_output_keeps_head_and_tail_and_marks_the_cut(mode: str, tmp_path: Path) -> None:
    command = "yes | head -c 5000000"
    result = make_sandbox(mode).run(command, tmp_path, scrubbed_env(tmp_path), Bounds(10, 1000))
    assert result.exit_code == 0
    assert result.output == "y\n" * 250 + "[... 4999000 bytes cut ...]\n" + "y\n" * 250


@pytest.mark.parametrize("mode", MODES)
def test_endless_output_is_capped_and_stopped(mode: str, tmp_path: Path) -> None:
    result = make_sandbox(mode).run("yes", tmp_path, scrubbed_env(tmp_path), Bounds(0.2, 1000))
    assert result.timed_out
    assert result.output.startswith("y\n" * 250 + "[... ")
    assert len(result.output) < 1100


def test_output_is_decoded_with_replacement(tmp_path: Path) -> None:
    result = Sandbox().run(r"printf 'a\377b'", tmp_path, scrubbed_env(tmp_path), Bounds(5))
    assert result.output == "a\ufffdb"


def test_budget_is_the_command_timeout_or_the_time_left() -> None:
    now = time.monotonic()
    assert budget(60, None) == 60
    assert budget(60, now + 3600) == 60
    assert 9 < budget(60, now + 10) <= 10
    assert budget(60, now - 1) == 0


def test_cap_text() -> None:
    assert cap_text("short", limit=10) == "short"
    assert cap_text("0123456789abcdef", limit=10) == "01234\n[... 6 characters cut ...]\nbcdef"
