"""One vocabulary: the schemas' enums are runner.kinds' enums; the exit code tells tooltrial's bug (3)
from the case's data (4), the agent (1) and the infrastructure (6); a fixture or file that cannot be put
into the workspace is a recorded ``workspace`` error, never an internal one."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from runner.kinds import Blame, Category, ErrorKind, FailureCause, Status
from runner.run import execute
from runner.run.workspace import Workspace, WorkspaceError
from tests.helpers import ROOT, cli_output, make_case

RUN = json.loads((ROOT / "schemas" / "run.schema.json").read_text())
REPORT = json.loads((ROOT / "schemas" / "report.schema.json").read_text())


def _values(enum: type) -> list[Any]:
    return [member.value for member in enum]


def test_the_schemas_enums_are_the_python_enums() -> None:
    check = RUN["$defs"]["check"]["properties"]
    record = REPORT["$defs"]["run"]["properties"]
    gate = REPORT["$defs"]["cell"]["properties"]["gate"]["properties"]
    assert RUN["properties"]["status"]["enum"] == record["status"]["enum"] == _values(Status)
    assert RUN["properties"]["error_kind"]["enum"] == check["error_kind"]["enum"] == [*_values(ErrorKind), None]
    assert REPORT["$defs"]["errorKindOrNull"]["enum"] == [*_values(ErrorKind), None]
    assert record["error_kind"]["$ref"] == REPORT["$defs"]["check"]["properties"]["error_kind"]["$ref"] == (
        "#/$defs/errorKindOrNull")
    assert RUN["properties"]["failure"]["enum"] == [*_values(FailureCause), None]
    assert REPORT["$defs"]["failureCause"]["enum"] == _values(FailureCause)
    assert check["category"]["enum"] == REPORT["$defs"]["check"]["properties"]["category"]["enum"] == _values(Category)
    assert gate["broken_by"]["enum"] == [*_values(Blame), None]


FIXTURES = {"notes": {"notes": "a file where the case wants a folder\n"}}
SUITE = """\
- id: ok
  turns: [Say done.]
  expect: {response_contains: done}
  script: [{content: done}]
- id: fails
  turns: [Say done.]
  expect: {response_contains: done}
  script: [{content: nope}]
- id: outage
  turns: [Say done.]
  setup: [exit 7]
  script: [{content: done}]
- id: boom
  turns: [Say done.]
  script: [{content: done}]
- id: clash
  turns: [Say done.]
  fixture: notes
  files: {notes/todo.md: x}
  script: [{content: done}]
"""
KINDS = {"ok": None, "fails": None, "outage": "setup", "boom": "internal", "clash": "workspace"}
BLAMES = {"ok": None, "fails": "agent", "outage": "infrastructure", "boom": "internal", "clash": "case"}


@pytest.mark.parametrize(("cases", "code"), [
    (["ok"], 0),
    (["ok", "outage"], 6),  # only the infrastructure broke a gate
    (["fails", "outage"], 1),  # the agent's failure is certain; the outage does not hide it
    (["boom", "outage"], 3),  # tooltrial's bug before the infrastructure
    (["boom", "fails"], 3),  # and before the agent: the measurement itself is in doubt
    (["clash", "fails", "outage"], 4),  # the case's data before the agent and the infrastructure
    (["clash", "boom"], 3),
])
def test_the_exit_code_takes_the_worst_blame(cases: list[str], code: int, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    fill = execute.fill_metrics

    def buggy(case: Any, record: Any) -> None:
        if case.id == "boom":
            raise RuntimeError("injected")
        fill(case, record)

    monkeypatch.setattr(execute, "fill_metrics", buggy)
    for name, files in FIXTURES.items():
        for path, text in files.items():
            (tmp_path / "fixtures" / name).mkdir(parents=True, exist_ok=True)
            (tmp_path / "fixtures" / name / path).write_text(text)
    (tmp_path / "t.yml").write_text(SUITE)
    selected = [arg for case in cases for arg in ("-c", f"t/{case}")]
    argv = ["run", str(tmp_path / "t.yml"), "--fixtures-dir", str(tmp_path / "fixtures"), "--results",
            str(tmp_path / "r"), "--report", str(tmp_path / "report.json"), *selected]
    assert cli_output(argv)[0] == code
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["exit_code"] == code
    assert {r["case"]: r["error_kind"] for r in report["runs"]} == {f"t/{c}": KINDS[c] for c in cases}
    assert {c["case"]: c["gate"]["broken_by"] for c in report["cells"]} == {f"t/{c}": BLAMES[c] for c in cases}


def test_a_file_that_clashes_with_the_fixture_is_a_workspace_error(tmp_path: Path) -> None:
    (tmp_path / "fixtures" / "notes").mkdir(parents=True)
    (tmp_path / "fixtures" / "notes" / "notes").write_text("x")
    (tmp_path / "t.yml").write_text(SUITE)
    code, out, _err = cli_output(["run", str(tmp_path / "t.yml"), "--fixtures-dir", str(tmp_path / "fixtures"),
                                 "--results", str(tmp_path / "r"), "-c", "t/clash"])
    assert code == 4
    assert out.splitlines()[:2] == ["ERROR t/clash: files: notes/todo.md cannot be written: File exists",
                                    "0/1 passed"]
    (folder,) = (tmp_path / "r").iterdir()
    (run,) = (json.loads(p.read_text()) for p in (folder / "runs").iterdir())
    assert (run["status"], run["error_kind"], run["failure"]) == ("error", "workspace", "run_error")


def test_a_fixture_that_cannot_be_copied_is_a_workspace_error(tmp_path: Path) -> None:
    fixture = tmp_path / "fixtures" / "pipe"
    fixture.mkdir(parents=True)
    os.mkfifo(fixture / "queue")
    case = make_case(fixture="pipe", fixtures_dir=tmp_path / "fixtures")
    with pytest.raises(WorkspaceError) as caught:
        Workspace.create(case)
    assert str(caught.value) == f"fixture 'pipe' cannot be copied: {fixture / 'queue'} is a named pipe"


def test_a_fixture_folder_gone_before_the_run_is_a_workspace_error(tmp_path: Path) -> None:
    case = make_case(fixture="gone", fixtures_dir=tmp_path)
    with pytest.raises(WorkspaceError) as caught:
        Workspace.create(case)
    assert str(caught.value) == f"fixture folder 'gone' not found in {tmp_path}"


def test_validate_refuses_a_fixture_that_cannot_be_copied_before_any_run(tmp_path: Path) -> None:
    fixture = tmp_path / "fixtures" / "pipe"  # beside the cases folder: the fixtures the cases get
    (fixture / "data").mkdir(parents=True)
    (fixture / "data" / "ok.txt").write_text("fine\n")
    os.mkfifo(fixture / "data" / "queue")
    path = tmp_path / "cases" / "t.yml"
    path.parent.mkdir()
    path.write_text("- {id: c, turns: [Hi.], fixture: pipe, script: [{content: hi}]}\n")
    for argv in (["validate", str(path)], ["run", str(path), "--results", str(tmp_path / "r")]):
        code, out, err = cli_output(argv)
        assert (code, out) == (4, "")
        assert err == (f"error: {path}:1:34: fixture: fixture 'pipe' holds data/queue (a named pipe), which cannot be "
                       "copied (remove it from the fixture folder, or make it with a setup command)\n")
    assert not (tmp_path / "r").exists()
