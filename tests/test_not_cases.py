"""A folder or glob of case files leaves out tooltrial's own files (runner.spec.notcases): a report.json written
beside the cases, a results folder's run files, the project's tooltrial.yml; ``validate``, ``list`` and ``run`` read
the same case files, and a path that names results (a results folder or document, a folder of results folders)
or a fixtures folder is refused with what to give instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ExitCode
from tests.helpers import GOOD, run_cli


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    """``cases/`` holding demo.yml, the report.json and the results folder of a run of it, and a tooltrial.yml."""
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "demo.yml").write_text(GOOD)
    (folder / "tooltrial.yml").write_text("jobs: 1\n")
    done = run_cli("run", str(folder), "--sandbox", "none", "--results", str(folder), "--report",
                   str(folder / "report.json"), cwd=tmp_path)
    assert done.returncode == ExitCode.OK, done.stderr
    return folder


def test_validate_list_and_run_of_a_folder_read_its_case_files_and_leave_results_out(cases: Path) -> None:
    valid = run_cli("validate", str(cases))
    assert (valid.returncode, valid.stdout, valid.stderr) == (ExitCode.OK, "2 cases in 1 file are valid\n", "")
    listed = run_cli("list", str(cases))
    assert (listed.returncode, listed.stdout.split(), listed.stderr) == (
        ExitCode.OK, ["demo/write-hello", "Write", "a", "greeting", "file.", "demo/count-lines", "Count", "lines."], "")
    again = run_cli("run", str(cases), "--sandbox", "none", "--results", str(cases.parent / "r"))
    assert (again.returncode, again.stdout.splitlines()[:2]) == (ExitCode.OK, ["PASS demo/write-hello",
                                                                               "PASS demo/count-lines"])
    globbed = run_cli("validate", f"{cases}/**")
    assert (globbed.returncode, globbed.stdout) == (ExitCode.OK, "2 cases in 1 file are valid\n")


def test_a_path_that_names_results_is_refused_saying_what_to_give(cases: Path) -> None:
    (results,) = [p for p in cases.iterdir() if p.is_dir()]
    run_file = min((results / "runs").iterdir())
    expected = {
        str(results): f"error: {results} is a results folder tooltrial wrote, not case files (give the case files "
                      f"the runs were made from; 'tooltrial report {results}' reads the results)\n",
        str(run_file): f"error: {run_file} is a results document tooltrial wrote, not case files (give the case "
                       f"files the runs were made from; 'tooltrial report {results}' reads the results)\n",
        str(cases / "report.json"): f"error: {cases / 'report.json'} is a results document tooltrial wrote, not "
                                    "case files (give the case files the runs were made from)\n",
        f"{cases}/**/*.json": f"error: no case files match {cases}/**/*.json (case files end in .yml, .yaml, .json; "
                              "tooltrial's results and its tooltrial.yml are left out)\n",
    }
    for path, message in expected.items():
        for command in ("validate", "list", "run"):
            done = run_cli(command, path)
            assert (done.returncode, done.stdout, done.stderr) == (ExitCode.USAGE, "", message), command


def test_a_folder_of_only_tooltrials_own_files_says_what_each_is(cases: Path) -> None:
    (cases / "demo.yml").unlink()
    done = run_cli("validate", str(cases))
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == (f"error: {cases} holds no case files: report.json is a results document tooltrial wrote, "
                           "tooltrial.yml is the project config (give the folder of case files)\n")


def test_a_folder_of_results_folders_or_a_fixtures_folder_is_refused_saying_what_to_give(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "demo.yml").write_text(GOOD)
    (tmp_path / "fixtures" / "project").mkdir(parents=True)
    done = run_cli("run", "cases", "--sandbox", "none", cwd=tmp_path)
    assert done.returncode == ExitCode.OK, done.stderr
    (written,) = (tmp_path / "results").iterdir()
    expected = {
        "results": "error: results is a folder of results folders tooltrial wrote, not case files (give the case files "
                   "the runs were made from; 'tooltrial report results' reads the newest of them)\n",
        "fixtures": "error: fixtures is a fixtures folder, not case files (give the case files that name its folders "
                    "in 'fixture:'; --fixtures-dir FOLDER says where fixtures are read from)\n",
    }
    for path, message in expected.items():
        for command, *flags in (("validate",), ("list",), ("run", "--sandbox", "none")):
            done = run_cli(command, path, *flags, cwd=tmp_path)
            assert (done.returncode, done.stdout, done.stderr) == (ExitCode.USAGE, "", message), (command, path)
    assert list((tmp_path / "results").iterdir()) == [written]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases", "fixtures", "results"]
    assert run_cli("report", "results", cwd=tmp_path).returncode == ExitCode.OK
