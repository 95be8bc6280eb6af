"""Sandbox: scrubbed env, process-group timeouts, closed stdin, capped output."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runner.sandbox import CommandResult, Sandbox, cap_text, scrubbed_env


def _gone(pid: int, within: float = 2.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def test_env_is_scrubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-secret")
    env = scrubbed_env(tmp_path, {"GREETING": "hi", "LANG": "en_US.UTF-8"})
    assert set(env) == {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "PYTHONDONTWRITEBYTECODE", "GREETING"}
    result = Sandbox().run("env", tmp_path, env, timeout=5)
    assert result.exit_code == 0
    assert "sk-fake-secret" not in result.output
    assert "OPENAI_API_KEY" not in result.output
    assert f"HOME={tmp_path}" in result.output
    assert "GREETING=hi" in result.output
    assert "LANG=en_US.UTF-8" in result.output
    assert "LC_ALL=C.UTF-8" in result.output


def test_exit_code_cwd_and_stderr_merged(tmp_path: Path) -> None:
    result = Sandbox().run("pwd; echo err >&2; exit 3", tmp_path, scrubbed_env(tmp_path), timeout=5)
    assert result == CommandResult(3, f"{tmp_path}\nerr\n", False, result.duration)
    assert 0 < result.duration < 5


def test_timeout_kills_the_process_group_including_grandchildren(tmp_path: Path) -> None:
    # Both the shell and its background child ignore SIGTERM, so only SIGKILL ends them.
    command = "trap '' TERM; sleep 30 & echo $!; wait"
    result = Sandbox().run(command, tmp_path, scrubbed_env(tmp_path), timeout=0.3)
    assert result.timed_out
    assert result.exit_code is None
    assert result.duration < 2
    assert _gone(int(result.output.split()[0]))


def test_background_child_holding_the_pipe_is_killed_after_exit(tmp_path: Path) -> None:
    result = Sandbox().run("sleep 30 & echo $!", tmp_path, scrubbed_env(tmp_path), timeout=10)
    assert not result.timed_out
    assert result.exit_code == 0
    assert result.duration < 2
    assert _gone(int(result.output.split()[0]))


def test_stdin_is_closed(tmp_path: Path) -> None:
    result = Sandbox().run("cat", tmp_path, scrubbed_env(tmp_path), timeout=5)
    assert (result.exit_code, result.output, result.timed_out) == (0, "", False)
    assert result.duration < 1


def test_output_keeps_head_and_tail_and_marks_the_cut(tmp_path: Path) -> None:
    command = "yes | head -c 5000000"
    result = Sandbox().run(command, tmp_path, scrubbed_env(tmp_path), timeout=10, output_limit=1000)
    assert result.exit_code == 0
    assert result.output == "y\n" * 250 + "[... 4999000 bytes cut ...]\n" + "y\n" * 250


def test_output_is_decoded_with_replacement(tmp_path: Path) -> None:
    result = Sandbox().run(r"printf 'a\377b'", tmp_path, scrubbed_env(tmp_path), timeout=5)
    assert result.output == "a\ufffdb"


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown sandbox mode 'bwrap'"):
        Sandbox("bwrap")


def test_cap_text() -> None:
    assert cap_text("short", limit=10) == "short"
    assert cap_text("0123456789abcdef", limit=10) == "01234\n[... 6 characters cut ...]\nbcdef"
