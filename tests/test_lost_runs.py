"""No finished run is lost: a full results folder, a bug in one run, a workspace that will not go, a closed output.

Each of these once ended the suite with ``internal error`` (exit 3) or a closed pipe's exit 2,
and no report.json: the runs still to come, and often the report of those done, were lost.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ExitCode
from runner.run import execute
from runner.run.record import RunRecord
from runner.run.workspace import Workspace
from runner.terminal.lines import RunPrinter
from tests.helpers import ROOT, cli_output, private_mounts

BIG = "x" * 20_000  # a reply this long makes a run file of about 80 KB (the reply, its script item, its request, its message)


def _big_cases(folder: Path, count: int) -> Path:
    path = folder / "big.yml"
    path.write_text("".join(f"- {{id: c{i}, turns: [Hi.], script: [{{content: {BIG}}}]}}\n" for i in range(count)))
    return path


def _in_own_mounts(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``sh -c script`` in a mount namespace of its own, ``$PYTHON`` the interpreter running the tests."""
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "PYTHON": sys.executable}
    return subprocess.run([*private_mounts(), "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env, check=False)


def test_a_full_results_folder_keeps_what_it_took_and_resume_finishes(tmp_path: Path) -> None:
    cases, full, saved, report = _big_cases(tmp_path, 5), tmp_path / "full", tmp_path / "saved", tmp_path / "report.json"
    full.mkdir()
    # 220 KiB: room for two run files, not a third; what the tmpfs held is copied out before it goes
    done = _in_own_mounts(f"mount -t tmpfs -o size=220k tmpfs {full} && $PYTHON -m runner run {cases} -j 1 "
                          f"--results {full} --report {report}; code=$?; cp -a {full} {saved}; exit $code", tmp_path)
    assert done.returncode == ExitCode.INTERRUPTED, done.stderr
    (kept,) = saved.iterdir()
    folder = full / kept.name  # as the run saw it
    assert sorted(p.name for p in (kept / "runs").iterdir()) == [
        "0001-big-c0-scripted-default-r1.json", "0002-big-c1-scripted-default-r1.json"]  # no half-written file
    assert [json.loads(p.read_text())["final_reply"] for p in sorted((kept / "runs").iterdir())] == [BIG, BIG]
    assert not (kept / "report.json").exists()
    assert [line for line in done.stderr.splitlines() if line.startswith("error: ")] == [
        f"error: cannot write to the results folder {folder}: No space left on device",
        (f"error: cannot write {folder}/report.json: No space left on device "
         f"(the run files are there: 'tooltrial report {folder}' reads them)"),
    ]
    assert done.stdout.splitlines()[:3] == ["PASS big/c0", "PASS big/c1", "2/2 passed (3 runs not finished: interrupted)"]
    assert done.stdout.splitlines()[-2:] == [
        "interrupted: 3 runs did not finish (cases: big/c2, big/c3, big/c4)",
        f"to run just those: tooltrial run {cases} -j 1 --results {full} --report {report} --resume {folder}",
    ]
    document = json.loads(report.read_text())  # --report lies elsewhere: written, listing what is left
    assert document["exit_code"] == ExitCode.INTERRUPTED and [r["case"] for r in document["runs"]] == ["big/c0", "big/c1"]
    assert [u["case"] for u in document["unfinished"]] == ["big/c2", "big/c3", "big/c4"]

    code, out, err = cli_output(["run", str(cases), "--resume", str(kept), "--results", str(tmp_path / "again")])
    assert code == 0, err
    assert out.splitlines()[:5] == ["resuming: 2 of 5 runs are done already", "PASS big/c2", "PASS big/c3",
                                    "PASS big/c4", "5/5 passed"]
    (finished,) = (tmp_path / "again").iterdir()
    assert len(list((finished / "runs").iterdir())) == 5
    document = json.loads((finished / "report.json").read_text())
    assert [document["overall"][k] for k in ("passed", "failed", "errored")] == [5, 0, 0]


SUITE = """\
- {id: first, turns: [Hi.], expect: {response_contains: [hi]}, script: [{content: hi}]}
- {id: boom, files: {boom: x}, turns: [Hi.], expect: {response_contains: [boom]}, script: [{content: boom}]}
- {id: last, turns: [Hi.], expect: {response_contains: [hi]}, script: [{content: hi}]}
"""


def _raise_on(original: Any, is_boom: Any) -> Any:
    def patched(self_or_case: Any, *args: Any) -> Any:
        if is_boom(self_or_case, *args):
            raise RuntimeError("injected")
        return original(self_or_case, *args)
    return patched


# Where tooltrial's own code can go wrong around one run: (owner, attribute, whether the call is the boom case's).
BUGS = {
    "scoring": (execute, "fill_metrics", lambda case, record: case.id == "boom"),
    "cleanup": (Workspace, "cleanup", lambda workspace: (workspace.path / "boom").exists()),
    "record": (RunRecord, "to_dict", lambda record: record.final_reply == "boom"),  # building the run file
}


@pytest.mark.parametrize("where", sorted(BUGS))
def test_a_bug_in_one_run_is_that_runs_error(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    owner, name, is_boom = BUGS[where]
    monkeypatch.setattr(owner, name, _raise_on(getattr(owner, name), is_boom))
    (tmp_path / "t.yml").write_text(SUITE)
    code, out, _err = cli_output(["run", str(tmp_path / "t.yml"), "--results", str(tmp_path / "r"), "-j", "2"])
    assert code == ExitCode.INTERNAL  # only tooltrial's own error broke a gate
    assert out.splitlines()[:4] == ["PASS t/first", "ERROR t/boom: internal error: RuntimeError: injected", "PASS t/last",
                                    "2/3 passed"]
    (folder,) = (tmp_path / "r").iterdir()
    first, boom, last = (json.loads(p.read_text()) for p in sorted((folder / "runs").iterdir()))
    assert (first["status"], last["status"]) == ("pass", "pass")
    assert (boom["status"], boom["error_kind"], boom["failure"]) == ("error", "internal", "run_error")
    assert boom["cause"].startswith("internal error: RuntimeError: injected\nTraceback (most recent call last):\n")
    assert boom["cause"].rstrip().endswith("RuntimeError: injected")
    document = json.loads((folder / "report.json").read_text())
    assert [document["overall"][k] for k in ("passed", "failed", "errored")] == [2, 0, 1]


def test_a_run_that_cannot_be_shown_is_still_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    show = RunPrinter.record
    monkeypatch.setattr(RunPrinter, "record", _raise_on(show, lambda printer, record: record.case == "t/boom"))
    (tmp_path / "t.yml").write_text(SUITE)
    code, out, err = cli_output(["run", str(tmp_path / "t.yml"), "--results", str(tmp_path / "r")])
    assert code == 0, err
    assert out.splitlines()[:4] == ["PASS t/first", "ERROR t/boom: cannot show this run: RuntimeError: injected",
                                    "PASS t/last", "3/3 passed"]
    (folder,) = (tmp_path / "r").iterdir()
    assert [json.loads(p.read_text())["status"] for p in sorted((folder / "runs").iterdir())] == ["pass"] * 3


def test_the_internal_error_log_is_new_each_time_and_follows_no_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    target = tmp_path / "target"
    (tmp_path / "tooltrial-internal-error.log").symlink_to(target)  # the old fixed name, planted as a link

    def broken(path: Any) -> Any:
        raise RuntimeError("injected")

    monkeypatch.setattr("runner.cli.run.load_config", broken)
    logs = []
    for _ in range(2):
        code, _out, err = cli_output(["run", str(ROOT / "cases" / "fs.yml"), "--results", str(tmp_path / "r")])
        assert code == ExitCode.INTERNAL
        head, _, path = err.strip().rpartition(" (traceback in ")
        assert head == "internal error: RuntimeError: injected"
        logs.append(Path(path.removesuffix(")")))
    assert logs[0] != logs[1] and not target.exists()
    for log in logs:
        assert log.parent == tmp_path and log.name.startswith("tooltrial-internal-error-") and not log.is_symlink()
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        assert log.read_text().rstrip().endswith("RuntimeError: injected")


def test_a_closed_output_after_the_runs_loses_no_result(tmp_path: Path) -> None:
    # as `tooltrial run ... --report r.json --junit j.xml 2>&1 | head -N` with head gone after the run lines
    groups = 40
    for i in range(groups):  # long group names: the summary table after the run lines is more than the pipe holds
        (tmp_path / f"group-{i:02d}-{'x' * 80}.yml").write_text("- {id: hi, turns: [Hi.], script: [{content: hi}]}\n")
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    read, write = os.pipe()
    fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 4096)
    command = [sys.executable, "-m", "runner", "run", *sorted(str(p) for p in tmp_path.glob("*.yml")),
               "--results", str(tmp_path / "results"), "--report", str(report), "--junit", str(junit)]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=write, stderr=write)
    os.close(write)
    seen = b""
    while seen.count(b"PASS ") < groups or not seen.endswith(b"\n"):  # read the run lines, byte by byte, no more
        byte = os.read(read, 1)
        assert byte, seen[-500:]
        seen += byte
    os.close(read)
    assert proc.wait(timeout=120) == ExitCode.OK  # the suite's own code: every run passed
    (folder,) = (tmp_path / "results").iterdir()
    document = json.loads((folder / "report.json").read_text())
    assert [document["overall"][k] for k in ("passed", "failed", "errored")] == [groups, 0, 0] and "unfinished" not in document
    assert json.loads(report.read_text()) == document
    assert ET.parse(junit).getroot().get("tests") == str(groups)


def test_a_workspace_cleanup_cannot_finish_is_a_warning_on_its_run(tmp_path: Path) -> None:
    cases, temp = tmp_path / "busy.yml", tmp_path / "temp"
    temp.mkdir()
    cases.write_text("""\
- id: mount
  setup: [mkdir sub, sleep 1]
  turns: [Wait.]
  script: [{content: done}]
- {id: after, turns: [Hi.], script: [{content: hi}]}
""")
    # A command can no longer mount anything (no capability): another process of the host does,
    # while the run's setup waits, as a host service or a second shell could.
    done = _in_own_mounts(
        f"TMPDIR={temp} $PYTHON -m runner run {cases} --sandbox none -j 1 --results {tmp_path / 'r'} >{tmp_path}/out & "
        f"until [ -d {temp}/tooltrial-*/sub ]; do sleep 0.02; done; mount -t tmpfs tmpfs {temp}/tooltrial-*/sub; "
        f"echo x > {temp}/tooltrial-*/sub/f; wait $!; code=$?; cat {tmp_path}/out; exit $code", tmp_path)
    (folder,) = (tmp_path / "r").iterdir()
    mount, after = (json.loads(p.read_text()) for p in sorted((folder / "runs").iterdir()))
    (warning,) = mount["warnings"]
    workspace = Path(warning.split(" entries in ", 1)[1].split(",", 1)[0])
    shutil.rmtree(workspace)  # the mount went with the namespace: what it left is an empty folder
    assert done.returncode == ExitCode.OK, done.stderr
    assert warning == f"cleanup left 2 entries in {workspace}, the first {workspace}/sub: Device or resource busy"
    assert done.stdout.splitlines()[:4] == ["PASS busy/mount", f"  warning: {warning}", "PASS busy/after", "2/2 passed"]
    assert (mount["status"], after["status"]) == ("pass", "pass")
