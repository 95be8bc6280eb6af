"""bubblewrap mode: escape attempts fail, the workspace stays writable; choosing the mode."""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.errors import UserError
from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.bwrap import HostView, bwrap_argv, host_view, probe
from runner.sandbox.choose import choose_sandbox
from runner.sandbox.command import CommandResult, Confinement, Sandbox, scrubbed_env
from tests.sandboxes import BWRAP, make_sandbox, needs_bwrap


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP server on 127.0.0.1 of the host; yields its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def _run(workspace: Path, command: str, network: bool = False) -> CommandResult:
    return make_sandbox("bwrap").run(command, workspace, scrubbed_env(workspace), Bounds(10), Access(network=network))


@needs_bwrap
def test_the_root_file_system_is_read_only(tmp_path: Path) -> None:
    result = _run(tmp_path, "touch /etc/tooltrial-escape")
    assert result.exit_code != 0
    assert "Read-only file system" in result.output
    assert not Path("/etc/tooltrial-escape").exists()


@needs_bwrap
def test_home_outside_the_workspace_is_read_only(tmp_path: Path) -> None:
    home = Path(os.path.expanduser("~")).resolve()
    target = home / "tooltrial-escape.txt"
    result = _run(tmp_path, f"echo pwned > {target}")
    assert result.exit_code != 0
    assert not target.exists()


@needs_bwrap
def test_only_the_workspace_is_writable_and_tmp_is_private(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sibling = tmp_path / "sibling.txt"
    marker = Path("/tmp", f"tooltrial-marker-{tmp_path.name}")
    result = _run(workspace, f"echo kept > out.txt && echo private > {marker} && cat {marker}; echo x > {sibling}")
    assert result.output.startswith("private\n")
    assert (workspace / "out.txt").read_text() == "kept\n"
    assert not sibling.exists()
    assert not marker.exists()


@needs_bwrap
def test_no_network_unless_the_case_allows_it(tmp_path: Path, listener: int) -> None:
    connect = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {listener}), timeout=2); print(\"connected\")'"
    closed = _run(tmp_path, connect)
    assert closed.exit_code != 0 and "connected" not in closed.output
    assert _run(tmp_path, connect, network=True).output == "connected\n"


@needs_bwrap
def test_a_parent_secret_is_not_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake-key")
    result = _run(tmp_path, "env; cat /proc/1/environ /proc/2/environ 2>/dev/null | tr '\\0' '\\n'")
    assert "sk-ant-fake-key" not in result.output


@needs_bwrap
def test_host_processes_are_invisible(tmp_path: Path) -> None:
    assert _run(tmp_path, f"test -e /proc/{os.getpid()}; echo $?").output == "1\n"


def test_argv_binds_the_workspace_at_its_own_path() -> None:
    argv = bwrap_argv("/usr/bin/bwrap", Path("/w"), Path("/w/sub"))
    assert argv[0] == "/usr/bin/bwrap" and argv[-1] == "--"
    assert "--bind /w /w" in " ".join(argv)
    assert "--chdir /w/sub" in " ".join(argv)
    assert "--unshare-all" in argv and "--share-net" not in argv
    assert "--cap-drop ALL" in " ".join(argv) and "--unshare-user --disable-userns" in " ".join(argv)
    assert "--share-net" in bwrap_argv("bwrap", Path("/w"), Path("/w"), network=True)
    assert "--disable-userns" not in bwrap_argv("bwrap", Path("/w"), Path("/w"), hardened=False)
    view = bwrap_argv("bwrap", Path("/w"), Path("/w"), view=HostView(("/root",), ("/root/.pyenv",)), seccomp_fd=7)
    assert " ".join(view).count("--tmpfs /root --ro-bind /root/.pyenv /root/.pyenv --remount-ro /root --bind /w /w") == 1
    assert "--seccomp 7" in " ".join(view)


def test_probe_names_a_missing_binary() -> None:
    assert probe("no-such-bwrap-here") == (None, False, "no-such-bwrap-here not found on PATH")


def test_auto_falls_back_to_a_plain_process_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("runner.sandbox.choose.bubblewrap", lambda: (None, False, "bwrap not found on PATH"))
    chosen = choose_sandbox("auto")
    assert (chosen.mode, chosen.confinement.note) == ("none", "bubblewrap unavailable: bwrap not found on PATH")
    assert capsys.readouterr().err == (
        "warning: bubblewrap unavailable (bwrap not found on PATH); commands run unconfined: "
        "they can read and write your files and use your network\n"
    )
    with pytest.raises(UserError, match="bubblewrap sandbox unavailable: bwrap not found on PATH"):
        choose_sandbox("bwrap")
    assert choose_sandbox("none").confinement.note == "requested with --sandbox none"
    assert capsys.readouterr().err == (
        "warning: --sandbox none: commands run unconfined: they can read and write your files and use your network\n"
    )


@needs_bwrap
def test_auto_uses_bwrap_when_it_works(capsys: pytest.CaptureFixture[str]) -> None:
    sandbox = choose_sandbox("auto")
    assert (sandbox.mode, sandbox.binary, sandbox.confinement) == ("bwrap", BWRAP, Confinement("bwrap", True, ""))
    assert capsys.readouterr().err == ""


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown sandbox mode 'docker'"):
        Sandbox("docker")


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a folder under /var/lib")
def test_the_programs_on_path_come_back_from_hidden_folders(tmp_path: Path) -> None:
    hidden = Path("/var/lib") / f"tooltrial-view-{os.getpid()}"
    (hidden / ".pyenv" / "shims").mkdir(parents=True)
    (hidden / "tools").mkdir()
    (hidden / "venv" / "bin").mkdir(parents=True)
    (hidden / "py" / "bin").mkdir(parents=True)
    (hidden / "venv" / "bin" / "python").symlink_to(hidden / "py" / "bin" / "python3")
    (hidden / "py" / "bin" / "python3").write_text("")
    try:
        path = ":".join(str(p) for p in (hidden / ".pyenv" / "shims", hidden / "tools", hidden / "venv" / "bin", "/usr/bin"))
        view = host_view(path, (hidden,))
        assert str(hidden) in view.hidden and "/run" in view.hidden and "/usr" not in view.hidden
        assert sorted(view.exposed) == sorted(str(hidden / name) for name in (".pyenv", "tools", "venv", "py"))
    finally:
        shutil.rmtree(hidden)


def test_without_libseccomp_the_sandbox_says_host_sockets_are_reachable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("runner.sandbox.machine.socket_filter", lambda: (None, "libseccomp unavailable (not found)"))
    monkeypatch.setattr("runner.sandbox.choose.bubblewrap", lambda: ("/usr/bin/bwrap", True, ""))
    sandbox = choose_sandbox("auto")
    assert sandbox.confinement == Confinement("bwrap", True, "commands can reach the host's Unix sockets: libseccomp unavailable (not found)")
    assert capsys.readouterr().err == "warning: commands can reach the host's Unix sockets: libseccomp unavailable (not found)\n"
