"""What a new user met, worded: a missing interpreter for ``make``, ``--config`` given a folder, ``--resume`` and
``report`` given a file, counts that agree with their nouns, one mark for a missing value."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import GOOD, ROOT, run_cli


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("python", ["python3.99", "/nonexistent/python3"])
def test_make_says_the_interpreter_it_was_given_is_missing(tmp_path: Path, python: str) -> None:
    for name in ("Makefile", "requirements.lock", "requirements-pip.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    done = subprocess.run(["make", "-s", f"PYTHON={python}", "venv"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 2
    assert done.stdout == (f"make: {python} is missing here (or does not run): install Python >= 3.11, "
                           "or name one you have: make PYTHON=python3.11\n")
    assert not (tmp_path / ".venv").exists()


@pytest.mark.parametrize("inside", [True, False], ids=["holding-tooltrial.yml", "empty"])
def test_config_given_a_folder_says_so_and_what_it_takes(tmp_path: Path, inside: bool) -> None:
    if inside:
        (tmp_path / "tooltrial.yml").write_text("jobs: 2\n")
    done = run_cli("run", "cases/fix.yml", "--config", str(tmp_path))
    hint = (f"give the file itself: --config {tmp_path / 'tooltrial.yml'}" if inside
            else "--config takes a file such as tooltrial.yml (its keys: docs/reference/config.md)")
    assert (done.returncode, done.stderr) == (4, f"error: --config {tmp_path} is a folder, not a config file ({hint})\n")


def test_resume_and_report_given_a_file_of_a_results_folder_name_the_folder(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(GOOD)
    assert run_cli("run", str(tmp_path / "good.yml"), "--results", str(tmp_path / "r")).returncode == 0
    (folder,) = (tmp_path / "r").iterdir()
    run_file = min((folder / "runs").iterdir())
    for given in (folder / "report.json", run_file):
        done = run_cli("run", str(tmp_path / "good.yml"), "--resume", str(given), "--results", str(tmp_path / "r2"))
        assert (done.returncode, done.stderr) == (4, (f"error: {given} is a file, not a results folder "
                                                      f"(give the folder it is in: {folder})\n"))
    other = tmp_path / "good.yml"
    done = run_cli("report", str(other))
    assert (done.returncode, done.stderr) == (4, (f"error: {other} is a file, not a results folder (give a "
                                                  "results/<run-id> folder written by 'tooltrial run' (or the folder of them))\n"))


def test_one_case_in_one_file_is_counted_in_the_singular(tmp_path: Path) -> None:
    (tmp_path / "one.yml").write_text(GOOD.split("- id: count-lines")[0])
    done = run_cli("validate", str(tmp_path / "one.yml"))
    assert (done.returncode, done.stdout) == (0, "1 case in 1 file is valid\n")
    (tmp_path / "two.yml").write_text(GOOD)
    assert run_cli("validate", str(tmp_path)).stdout == "3 cases in 2 files are valid\n"


def test_a_missing_value_is_one_mark_in_every_table(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(GOOD)
    done = run_cli("run", str(tmp_path / "good.yml"), "--runs", "2", "-P", "prompts/default.j2", "-P", "prompts/terse.j2",
                   "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert "—" not in done.stdout
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["tokens", "/", "run", "-", "-"] in rows and ["cost", "-", "-"] in rows
    report = json.loads(next((tmp_path / "r").glob("*/report.json")).read_text())
    assert report["arms"][0]["tokens_total"] is None


def test_run_numbers_are_1_based_in_files_records_report_and_lines(tmp_path: Path) -> None:
    (tmp_path / "good.yml").write_text(GOOD)
    done = run_cli("run", str(tmp_path / "good.yml"), "-c", "good/write-hello", "--runs", "2", "--results", str(tmp_path / "r"))
    assert done.stdout.splitlines()[:2] == ["PASS good/write-hello #1", "PASS good/write-hello #2"]
    files = sorted((tmp_path / "r").glob("*/runs/*.json"))
    assert [(p.name[-8:], json.loads(p.read_text())["run"]) for p in files] == [("-r1.json", 1), ("-r2.json", 2)]
    report = json.loads(next((tmp_path / "r").glob("*/report.json")).read_text())
    assert [r["run"] for r in report["runs"]] == [1, 2]


def test_a_run_file_of_an_earlier_version_reads_its_0_based_run_one_up(tmp_path: Path) -> None:
    from runner.output.load import record_from_dict

    (tmp_path / "good.yml").write_text(GOOD)
    run_cli("run", str(tmp_path / "good.yml"), "-c", "good/write-hello", "--results", str(tmp_path / "r"))
    (path,) = (tmp_path / "r").glob("*/runs/*.json")
    document = json.loads(path.read_text())
    assert record_from_dict(document).run == 1
    earlier = {key: value for key, value in document.items() if key != "commands"}  # as versions before wrote it
    assert record_from_dict({**earlier, "run": 0}).run == 1


@pytest.mark.parametrize(("flag", "kind"), [("--junit", "fifo"), ("--report", "stdout"), ("--html", "null"),
                                             ("--summary-md", "stderr")])
def test_an_output_path_that_is_a_device_is_refused_and_left_as_it_is(tmp_path: Path, flag: str, kind: str) -> None:
    # links of the test's own stand for /dev/stdout and the like: a wrong answer replaces only them
    path = tmp_path / f"out-{kind}"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to({"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "null": "/dev/null"}[kind])
    before = os.lstat(path)
    done = run_cli("run", "cases/fs.yml", flag, str(path), "--results", str(tmp_path / "r"))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (f"error: {flag} {path} is not a regular file (a device, pipe or socket) (tooltrial writes "
                           "a file and moves it into place: give a file path; for the report on stdout, use --output json)\n")
    after = os.lstat(path)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


def test_the_atomic_writer_itself_never_replaces_a_device_or_a_link_into_proc(tmp_path: Path) -> None:
    from runner.output.store import write_replace

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "stdout").symlink_to("/proc/self/fd/1")
    (tmp_path / "file").write_text("old")
    for name in ("fifo", "stdout"):
        before = os.lstat(tmp_path / name)
        with pytest.raises(OSError, match="not a regular file"):
            write_replace(tmp_path / name, "new")
        assert os.lstat(tmp_path / name).st_ino == before.st_ino
    write_replace(tmp_path / "file", "new")
    assert (tmp_path / "file").read_text() == "new"
