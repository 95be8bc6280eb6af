"""Files a setup or agent command names that bubblewrap hides are told before the command runs, as an error of
kind ``setup`` that names the file, why it is hidden (the private ``/tmp``, a hidden home folder, a folder not
mounted) and the fix; an agent under ``/tmp`` once failed with the interpreter's "can't open file" and was scored.
With ``--sandbox none`` nothing is checked. A ``PATH`` folder the user cannot search (root's ``~/.cargo/bin``
kept by ``su``) made every sandboxed command fail; it is dropped with one warning per suite.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.sandbox.bwrap import PRIVATE, probe
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.sandbox.seccomp import socket_filter
from runner.sandbox.visible import Hidden, hidden_file, named_files
from tests.helpers import NOBODY, ROOT, as_nobody, cli_output, nobody_home, run_cli
from tests.sandboxes import needs_bwrap, needs_open_checkout, needs_visible_checkout

HOME = Path(os.path.realpath(Path.home()))
TMP = os.path.realpath(tempfile.gettempdir())
home_hidden = pytest.mark.skipif(str(HOME) in ("/", *PRIVATE) or any(HOME.is_relative_to(p) for p in PRIVATE),
                                 reason="the home folder is not one bubblewrap hides here")
SANDBOX = Sandbox("bwrap", "bwrap")  # judging needs no bwrap: what it would mount is known
in_tmp = pytest.mark.skipif(not Path(TMP).is_relative_to("/tmp"), reason="the temp folder is not in /tmp")
FIX = "{{ here }}"


@pytest.fixture
def in_home() -> Iterator[Path]:
    """A new folder in this user's home folder, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=".tooltrial-test-", dir=HOME))
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _run(tmp_path: Path, *argv: str) -> tuple[int, list[str], list[dict[str, Any]]]:
    """``tooltrial run ARGV -p scripted``: exit code, output lines up to ``N/M passed``, run records."""
    results = tmp_path / "results"
    done = run_cli("run", *argv, "-p", "scripted", "--results", str(results))
    runs = sorted(results.glob("*/runs/*.json")) if results.exists() else []
    lines = done.stdout.splitlines()
    shown = lines[:next((i for i, line in enumerate(lines) if line.endswith(" passed")), len(lines)) + 1]
    return done.returncode, shown, [json.loads(p.read_text()) for p in runs]


AGENT_CASE = """\
- id: hidden
  agent: {agent}
  turns: [Write ran into out.txt.]
  expect: {{files: {{out.txt: {{equals: "ran\\n"}}}}}}
  script: [{{content: done}}]
"""


@needs_bwrap
@home_hidden
@in_tmp
def test_an_agent_program_under_tmp_or_in_a_home_folder_is_an_error_that_says_why_and_the_fix(
        tmp_path: Path, in_home: Path) -> None:
    in_tmp, elsewhere, project = tmp_path / "agent.sh", in_home / "tools" / "agent.sh", in_home / "project"
    for folder in (elsewhere.parent, project):
        folder.mkdir()
    for script in (in_tmp, elsewhere):
        script.write_text("echo ran > out.txt\n")
    (project / "tooltrial.yml").write_text(f"agents:\n  tmp: {{command: sh {in_tmp}}}\n"
                                           f"  home: {{command: sh {elsewhere}}}\n")
    cases = tmp_path / "cases.yml"
    cases.write_text(AGENT_CASE.format(agent="tmp"))
    config = ("--config", str(project / "tooltrial.yml"))  # {{ here }}: in a home folder, brought back
    code, lines, runs = _run(tmp_path / "tmp", str(cases), *config)
    assert (code, lines) == (6, [
        (f"ERROR cases/hidden: agent command: {in_tmp} is hidden under the sandbox (/tmp is a fresh tmpfs there); "
         f"move it out of /tmp, name it relative to the case with {FIX}, or run with --sandbox none"), "0/1 passed"])
    assert [(r["status"], r["error_kind"], r["commands"]) for r in runs] == [("error", "setup", [])]  # it never ran
    code, lines, _ = _run(tmp_path / "home", str(cases), *config, "--agent", "home")
    assert (code, lines[0]) == (6, (f"ERROR cases/hidden: agent command: {elsewhere} is hidden under the sandbox "
                                    f"({HOME} is a hidden home folder there); move it out of {HOME}, name it relative "
                                    f"to the case with {FIX}, or run with --sandbox none"))
    inline = tmp_path / "inline.yml"  # defined in /tmp: {{ here }} is hidden too, and not offered
    inline.write_text(AGENT_CASE.format(agent=f"{{command: sh {in_tmp}}}"))
    code, lines, _ = _run(tmp_path / "inline", str(inline))
    assert (code, lines[0]) == (6, (f"ERROR inline/hidden: agent command: {in_tmp} is hidden under the sandbox (/tmp is "
                                    "a fresh tmpfs there); move it out of /tmp or run with --sandbox none"))
    code, lines, runs = _run(tmp_path / "none", str(cases), *config, "--sandbox", "none")
    assert (code, lines, runs[0]["commands"][0]["phase"]) == (0, ["PASS cases/hidden", "1/1 passed"], "agent")


SETUP_CASES = """\
- id: tmp
  setup: [bash {tmp}]
  turns: [Say done.]
  expect: {{files: {{made.txt: {{equals: "ran\\n"}}}}}}
  script: [{{content: done}}]
- id: home
  setup: ["{home} --quiet"]
  turns: [Say done.]
  expect: {{files: {{made.txt: {{equals: "ran\\n"}}}}}}
  script: [{{content: done}}]
- id: relative
  setup: ["true", "sh {relative} 2>/dev/null"]
  turns: [Say done.]
  expect: {{files: {{made.txt: {{equals: "ran\\n"}}}}}}
  script: [{{content: done}}]
"""


@needs_bwrap
@home_hidden
@in_tmp
def test_a_setup_script_outside_the_visible_folders_is_an_error_before_it_runs(tmp_path: Path, in_home: Path) -> None:
    for script in (tmp_path / "setup.sh", in_home / "setup.sh"):
        script.write_text("#!/bin/sh\necho ran > made.txt\n")
        script.chmod(0o755)
    relative = os.path.join("..", os.path.relpath(tmp_path / "setup.sh", TMP))  # out of a workspace in the temp folder
    cases = tmp_path / "setup.yml"
    cases.write_text(SETUP_CASES.format(tmp=tmp_path / "setup.sh", home=in_home / "setup.sh", relative=relative))
    code, lines, runs = _run(tmp_path / "bwrap", str(cases))
    fixture = "put it in the case's fixture"
    assert (code, lines) == (6, [
        (f"ERROR setup/tmp: setup command: {tmp_path}/setup.sh is hidden under the sandbox (/tmp is a fresh tmpfs "
         f"there); move it out of /tmp, {fixture}, or run with --sandbox none"),
        (f"ERROR setup/home: setup command: {in_home}/setup.sh is hidden under the sandbox ({HOME} is a hidden home "
         f"folder there); move it out of {HOME}, {fixture}, or run with --sandbox none"),
        (f"ERROR setup/relative: setup command: {tmp_path}/setup.sh is hidden under the sandbox (/tmp is a fresh tmpfs "
         f"there); move it out of /tmp, {fixture}, or run with --sandbox none"),
        "0/3 passed"])
    assert [(r["error_kind"], [c["command"] for c in r["commands"]]) for r in runs] == [
        ("setup", []), ("setup", []), ("setup", ["true"])]  # each stopped before the command that names it
    code, lines, _ = _run(tmp_path / "none", str(cases), "--sandbox", "none")
    assert (code, lines) == (0, ["PASS setup/tmp", "PASS setup/home", "PASS setup/relative", "3/3 passed"])


@pytest.mark.parametrize(("command", "named"), [
    ("sh /etc/hostname", [("sh ({sh} on PATH)", "{sh}"), ("/etc/hostname", "/etc/hostname")]),
    ("FOO=1 nohup ../w2/run.sh --config=/etc/hostname", [("{w2}/run.sh", "{w2}/run.sh"),
                                                         ("/etc/hostname", "/etc/hostname")]),
    ("./run.sh sub/x ~/x", []),  # the program and files in the workspace (HOME is the workspace)
    ("cat < /etc/hostname > /etc/hostname.out 2>&1 && true",
     [("cat ({cat} on PATH)", "{cat}"), ("/etc/hostname", "/etc/hostname"), ("true ({true} on PATH)", "{true}")]),
    ("if no-such-program-here; then echo 'unclosed", []),  # bash says what is wrong with it
    ("echo hi\n../w2/run.sh # /etc/hostname", [("echo ({echo} on PATH)", "{echo}"), ("{w2}/run.sh", "{w2}/run.sh")]),
    ("rm -rf /etc /tmp ../w2", [("rm ({rm} on PATH)", "{rm}")]),  # folders a command makes or removes are its own
])
def test_the_files_a_command_names(tmp_path: Path, command: str, named: list[tuple[str, str]]) -> None:
    workspace, other = tmp_path / "w", tmp_path / "w2"
    for folder in (workspace, other):
        folder.mkdir()
        (folder / "run.sh").write_text("")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workspace)}
    where = {name: shutil.which(name, path=env["PATH"]) for name in ("sh", "cat", "true", "echo", "rm")}
    expected = [(name.format(w2=other, **where), path.format(w2=other, **where)) for name, path in named]
    assert named_files(command, workspace, env) == expected


@in_tmp
def test_each_reason_a_file_is_hidden_has_its_words(tmp_path: Path) -> None:
    workspace = tmp_path / "w"
    workspace.mkdir()
    (tmp_path / "agent.py").write_text("")
    (workspace / "link.py").symlink_to(tmp_path / "agent.py")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "tool").write_text("#!/bin/sh\n")
    (venv / "tool").chmod(0o755)
    env = scrubbed_env(workspace)
    assert hidden_file(SANDBOX, f"python3 {tmp_path}/agent.py", workspace, env) == Hidden(
        f"{tmp_path}/agent.py", "/tmp", "/tmp is a fresh tmpfs there")
    assert hidden_file(SANDBOX, f"python3 {workspace}/link.py", workspace, env) == Hidden(
        f"{workspace}/link.py (a link to {tmp_path}/agent.py)", "/tmp", "/tmp is a fresh tmpfs there")
    assert hidden_file(SANDBOX, "tool --help", workspace, {**env, "PATH": f"{venv}:/usr/bin"}) == Hidden(
        f"tool ({venv}/tool on PATH)", "/tmp", "/tmp is a fresh tmpfs there")
    seen = "cat /dev/null /dev/urandom /proc/self/status /tmp /etc/hostname"
    assert hidden_file(SANDBOX, seen, workspace, env) is None
    assert hidden_file(Sandbox("none"), f"python3 {tmp_path}/agent.py", workspace, env) is None


@pytest.mark.skipif(any(ROOT.is_relative_to(p) for p in PRIVATE), reason="the checkout is in the private /tmp")
@needs_visible_checkout
def test_a_folder_the_run_hides_is_not_mounted_there_unless_brought_back(tmp_path: Path) -> None:
    results = ROOT / "examples"  # a folder the run hides, as it hides its results folder
    hiding, env = Sandbox("bwrap", "bwrap", hide=[results]), scrubbed_env(tmp_path)
    assert hidden_file(hiding, f"cat {results}/agents/agent.py", tmp_path, env) == Hidden(
        f"{results}/agents/agent.py", str(results), f"the host's {results} is not mounted there")
    assert hidden_file(hiding, f"cat {results}/agents/agent.py", tmp_path, env, (str(results / "agents"),)) is None


def test_a_file_in_dev_shm_is_not_mounted_there(tmp_path: Path) -> None:
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    with tempfile.NamedTemporaryFile(dir="/dev/shm", suffix=".py") as script:
        found = hidden_file(SANDBOX, f"python3 {script.name}", tmp_path, scrubbed_env(tmp_path))
    assert found == Hidden(script.name, "/dev", "the host's /dev is not mounted there")


PATH_CASES = """\
- id: first
  setup: ['echo "$PATH" > setup-path.txt']
  turns: [Save PATH.]
  expect: {files: {setup-path.txt: {equals: "/usr/bin:/bin\\n"}, tool-path.txt: {equals: "/usr/bin:/bin\\n"}}}
  script:
    - tool_calls: [{name: bash, arguments: {command: 'echo "$PATH" > tool-path.txt'}}]
    - content: saved
- id: second
  setup: ['echo "$PATH" > setup-path.txt', 'echo "$PATH" > tool-path.txt']
  turns: [Save PATH.]
  expect: {files: {setup-path.txt: {equals: "/usr/bin:/bin\\n"}}}
  script: [{content: saved}]
"""


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="makes a folder only root may enter")
@needs_open_checkout  # nobody runs the checkout's code
def test_path_folders_the_user_cannot_search_are_dropped_with_one_warning_each() -> None:
    locked = Path(tempfile.mkdtemp(prefix="tooltrial-test-locked-"))  # 0700, root's: as root's ~ is to a user of su
    (locked / "bin").mkdir()
    socket_filter()  # loaded while libseccomp can still be read
    try:
        with nobody_home() as home:
            (home / "cases").mkdir()
            (home / "cases" / "path.yml").write_text(PATH_CASES)

            def as_user() -> tuple[str | None, int, str, str]:
                os.environ["PATH"] = f"{locked}/bin:{locked}:/usr/bin:/bin"
                argv = ["run", str(home / "cases"), "--sandbox", "bwrap", "--results", str(home / "results")]
                return (probe()[0], *cli_output(argv))

            binary, code, out, err = as_nobody(as_user, home)
            if binary is None:
                pytest.skip("bubblewrap does not work for nobody here")
            runs = [json.loads(p.read_text()) for p in sorted((home / "results").glob("*/runs/*.json"))]
    finally:
        shutil.rmtree(locked)
    assert (code, out.splitlines()[:3]) == (0, ["PASS path/first", "PASS path/second", "2/2 passed"]), out + err
    assert [line for line in err.splitlines() if "PATH" in line] == [
        f"warning: PATH entry {locked}/bin cannot be read by this user (uid {NOBODY}); commands run without it",
        f"warning: PATH entry {locked} cannot be read by this user (uid {NOBODY}); commands run without it"]
    assert [(r["sandbox"]["mode"], len(r["commands"])) for r in runs] == [("bwrap", 1), ("bwrap", 2)]
