"""Attacks on the sandbox through the CLI, as a hostile agent would make them: each run's bash
calls try to escape, and the test looks at the host afterwards (canary files, listeners,
process tables), not at messages only. CI runs these as root; the classes that depend on it
run again as an unprivileged user (tests.helpers.as_nobody)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from tests.helpers import as_nobody, nobody_home, tooltrial
from tests.sandboxes import needs_bwrap, needs_open_checkout, none_left, processes_with

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the attack needs a root tooltrial (as CI runs it)")
MODES = [pytest.param("none", id="none"), pytest.param("bwrap", id="bwrap", marks=needs_bwrap)]


def attack_case(folder: Path, commands: list[str], network: bool = False) -> Path:
    """A case file whose scripted model runs each of ``commands`` with the bash tool, then stops."""
    calls = [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]} for command in commands]
    case = {"id": "attack", "turns": ["attack"], "network": network, "script": [*calls, {"content": "done"}]}
    path = folder / "escape.yml"
    path.write_text(json.dumps([case]), encoding="utf-8")  # JSON is YAML
    return path


def run_attack(folder: Path, commands: list[str], sandbox: str = "bwrap", network: bool = False,
               results: Path | None = None) -> dict[str, Any]:
    """Run the attack through ``main`` and return its one run record, as written to disk."""
    results = results or folder / "results"
    code = main(["run", str(attack_case(folder, commands, network)), "--results", str(results),
                 "--sandbox", sandbox, "--no-user-cases"])
    assert code == 0
    (run_file,) = results.glob("*/runs/*.json")
    return json.loads(run_file.read_text(encoding="utf-8"))


def outputs(record: dict[str, Any]) -> list[str]:
    return [step["result"] for step in record["steps"]]


@pytest.fixture
def token() -> str:
    return secrets.token_hex(4)


@pytest.fixture
def canary(token: str) -> Iterator[Path]:
    """A world-writable folder on the host's root file system, outside /tmp, /run and the home
    folders: visible (read-only) inside the sandbox, so a write that lands there escaped."""
    folder = Path("/var/lib") / f"tooltrial-canary-{token}"
    folder.mkdir()
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


@needs_bwrap
@needs_root
def test_a_root_command_holds_no_capability_and_cannot_remount_or_unmount(tmp_path: Path, canary: Path, token: str) -> None:
    site = Path(sysconfig.get_paths()["purelib"]) / f"tooltrial-escape-{token}.pth"
    host_tmp = Path("/tmp") / f"tooltrial-canary-{token}"
    host_tmp.write_text("host /tmp\n")
    try:
        record = run_attack(tmp_path, [
            "grep CapEff /proc/self/status",
            f"mount -o remount,bind,rw / ; echo pwned > {canary}/remount; echo 'import os' > {site}; echo done",
            "umount -l /tmp; ls -a /tmp",
            "umount -l /proc; ls /proc",
            "unshare --user --map-root-user --mount true && echo made a user namespace",
        ])
    finally:
        host_tmp.unlink()
    capabilities, remount, tmp, proc, userns = outputs(record)
    assert capabilities == "CapEff:\t0000000000000000\n[exit code 0]"
    assert not (canary / "remount").exists() and not site.exists()
    assert "Read-only file system" in remount
    assert host_tmp.name not in tmp
    assert str(os.getpid()) not in proc.split()
    assert "made a user namespace" not in userns
    assert record["sandbox"] == {"mode": "bwrap", "isolated": True, "note": ""}


@needs_bwrap
@needs_root
def test_home_folders_run_and_the_results_folder_are_not_visible(tmp_path: Path, canary: Path, token: str) -> None:
    home_canary = Path.home() / f".tooltrial-canary-{token}"
    run_canary = Path("/run") / f"tooltrial-canary-{token}"
    results = canary / "results"
    (results / "earlier").mkdir(parents=True)
    (results / "earlier" / f"planted-{token}.json").write_text("{}")
    for path in (home_canary, run_canary):
        path.write_text(f"secret-{token}\n")
    try:
        record = run_attack(tmp_path, [
            f"ls -A /root /home /run {Path.home()}",
            f"cat {home_canary} {run_canary}",
            f"ls -R {results}",
            "python3 -c 'print(6 * 7)'",  # the programs on PATH still run, wherever they live
        ], results=results)
    finally:
        home_canary.unlink()
        run_canary.unlink()
    listing, reading, results_listing, python = outputs(record)
    assert token not in listing
    assert f"secret-{token}" not in reading
    assert f"planted-{token}" not in results_listing
    assert python == "42\n[exit code 0]"


_CONNECT = """python3 -c '
import socket, sys
for path in sys.argv[1:]:
    family, address = (socket.AF_UNIX, path.replace("@", chr(0)))
    try:
        socket.socket(family).connect(address)
        print("connected", path)
    except OSError as e:
        print("refused", path, e.errno)
a, b = socket.socketpair(); a.send(b"pair"); print(b.recv(4).decode())
' """


@pytest.fixture
def unix_listeners(canary: Path, token: str) -> Iterator[list[socket.socket]]:
    """Unix-domain listeners of the host: at a path visible in the sandbox, under /run, and abstract."""
    listeners = []
    for address in (str(canary / "host.sock"), f"/run/tooltrial-{token}.sock", f"\0tooltrial-{token}"):
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(address)
        listener.listen()
        listener.setblocking(False)
        listeners.append(listener)
    yield listeners
    for listener in listeners:
        listener.close()
    Path(f"/run/tooltrial-{token}.sock").unlink()


@needs_bwrap
@needs_root
def test_no_host_unix_socket_answers(tmp_path: Path, canary: Path, token: str, unix_listeners: list[socket.socket]) -> None:
    paths = [str(canary / "host.sock"), f"/run/tooltrial-{token}.sock", f"@tooltrial-{token}"]
    (attempt,) = outputs(run_attack(tmp_path, [_CONNECT + " ".join(paths)]))
    assert "connected" not in attempt and attempt.endswith("pair\n[exit code 0]")
    for listener in unix_listeners:
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody knocked


@needs_bwrap
@needs_root
def test_a_case_with_network_reaches_host_sockets(tmp_path: Path, canary: Path, unix_listeners: list[socket.socket]) -> None:
    (attempt,) = outputs(run_attack(tmp_path, [_CONNECT + str(canary / "host.sock")], network=True))
    assert attempt.startswith(f"connected {canary / 'host.sock'}\n")
    unix_listeners[0].accept()[0].close()


_STRAYS = [  # each leaves a process named tooltrial-stray-TOKEN-<how> behind, the way agents do
    "nohup bash -c 'exec -a tooltrial-stray-TOKEN-nohup sleep 300' >/dev/null 2>&1 &",
    "setsid bash -c 'exec -a tooltrial-stray-TOKEN-setsid sleep 300' >/dev/null 2>&1 &",
    "setsid -f bash -c 'trap \"\" TERM HUP; exec -a tooltrial-stray-TOKEN-setsidf sleep 300' </dev/null >/dev/null 2>&1",
    "(bash -c 'exec -a tooltrial-stray-TOKEN-double sleep 300' >/dev/null 2>&1 &); true",
    "bash -c 'exec -a tooltrial-stray-TOKEN-disown sleep 300' >/dev/null 2>&1 & disown",
    "bash -c 'exec -a tooltrial-stray-TOKEN-job sleep 300' & echo started",
]


def _strays_gone(folder: Path, sandbox: str, token: str) -> bool:
    record = run_attack(folder, [command.replace("TOKEN", token) for command in _STRAYS], sandbox)
    assert record["status"] == "pass" and record["sandbox"]["isolated"]
    return none_left(f"tooltrial-stray-{token}", within=2)


@pytest.mark.parametrize("sandbox", MODES)
def test_no_process_outlives_its_command(tmp_path: Path, sandbox: str, token: str) -> None:
    try:
        assert _strays_gone(tmp_path, sandbox, token), processes_with(f"tooltrial-stray-{token}")
    finally:
        for pid in processes_with(f"tooltrial-stray-{token}"):
            os.kill(pid, 9)


@needs_root
@needs_open_checkout  # nobody runs the checkout's code
@pytest.mark.parametrize("sandbox", MODES)
def test_no_process_outlives_its_command_as_another_user(sandbox: str, token: str) -> None:
    try:
        with nobody_home() as home:
            assert as_nobody(lambda: _strays_gone(home, sandbox, token), home)
    finally:
        for pid in processes_with(f"tooltrial-stray-{token}"):
            os.kill(pid, 9)


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


_READ_KEYS = "cat /proc/$PPID/environ; for f in /proc/[0-9]*/environ; do cat $f; echo; done; env"


@pytest.mark.parametrize("sandbox", MODES)
def test_no_command_reads_a_provider_key(tmp_path: Path, sandbox: str, token: str) -> None:
    key = f"sk-canary-{token}"
    holder = subprocess.Popen(["sleep", "60"], env={"ANTHROPIC_API_KEY": key})  # like the shell you started tooltrial from
    try:
        case = attack_case(tmp_path, [_READ_KEYS])
        env = {**os.environ, "OPENAI_API_KEY": key}
        done = tooltrial("run", str(case), "--results", str(tmp_path / "results"), "--sandbox", sandbox, env=env)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr
    (run_file,) = (tmp_path / "results").glob("*/runs/*.json")
    text = run_file.read_text(encoding="utf-8")
    assert "PATH=" in text  # the command did print its environment
    assert key not in text and key not in done.stdout


@needs_root
@needs_open_checkout  # nobody runs the checkout's code
def test_no_command_reads_another_process_of_its_user_as_another_user(token: str) -> None:
    key = f"sk-canary-{token}"

    def attack() -> str:
        holder = subprocess.Popen(["sleep", "60"], env={"OPENAI_API_KEY": key})
        try:
            return json.dumps(run_attack(home, [_READ_KEYS], "none"))
        finally:
            holder.kill()
            holder.wait()

    with nobody_home() as home:
        text = as_nobody(attack, home)
    assert "PATH=" in text and key not in text


def test_a_machine_without_pid_namespaces_is_said_loudly_and_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "unshare").write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    (fake / "unshare").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    from runner.sandbox.confine import namespace_prefix
    from runner.sandbox.guard import guard_prefix

    namespace_prefix.cache_clear()
    guard_prefix.cache_clear()
    token = secrets.token_hex(4)
    try:
        record = run_attack(tmp_path, [command.replace("TOKEN", token) for command in _STRAYS], "none")
        left = {_command_line(pid).split()[0].rsplit("-", 1)[1] for pid in processes_with(f"tooltrial-stray-{token}")}
    finally:
        namespace_prefix.cache_clear()
        guard_prefix.cache_clear()
        for pid in processes_with(f"tooltrial-stray-{token}"):
            os.kill(pid, 9)
    assert left <= {"setsid", "setsidf"}  # the process-group kill takes the rest; a new session may escape it
    weakness = ("no PID namespace for commands (unshare: unshare failed: Operation not permitted): they can read the "
                "environment of your other processes and leave processes running")
    assert record["sandbox"] == {"mode": "none", "isolated": False, "note": f"requested with --sandbox none; {weakness}"}
    err = capsys.readouterr()
    assert err.err.splitlines()[:2] == [
        "warning: --sandbox none: commands run unconfined: they can read and write your files and use your network",
        f"warning: {weakness}",
    ]
    assert f"note: 1 of 1 runs ran without bubblewrap (requested with --sandbox none; {weakness})" in err.out


def test_an_unconfined_run_is_marked_in_the_report_and_the_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = attack_case(tmp_path, ["true"])
    junit = tmp_path / "junit.xml"
    assert main(["run", str(case), "--results", str(tmp_path / "r"), "--sandbox", "none", "--junit", str(junit)]) == 0
    (report,) = (tmp_path / "r").glob("*/report.json")
    document = json.loads(report.read_text())
    assert document["runs"][0]["sandbox"] == {"mode": "none", "isolated": True, "note": "requested with --sandbox none"}
    assert (document["overall"]["unconfined"], document["arms"][0]["unconfined"]) == (1, 1)
    assert '<property name="sandbox" value="none: requested with --sandbox none" />' in junit.read_text()
    assert "note: 1 of 1 runs ran without bubblewrap (requested with --sandbox none)" in capsys.readouterr().out
