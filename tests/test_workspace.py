"""Workspace: fixture copy, inline files, setup commands, changes, cleanup."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from runner.run.context import RunContext
from runner.run.workspace import Changes, SetupError, Workspace, WorkspaceError
from runner.sandbox.command import Sandbox
from runner.spec.case import Case


def _case(**fields: Any) -> Case:
    return Case(group="g", id="c", source=Path("g.yml"), line=1, turns=("hi",), **fields)


def _run(command_timeout: float = 60.0) -> RunContext:
    """A run of 600 seconds from now whose commands each have ``command_timeout`` seconds."""
    return RunContext(Sandbox(), 600.0, time.monotonic() + 600.0, command_timeout)


@pytest.fixture
def fixtures_dir(tmp_path: Path) -> Path:
    fixture = tmp_path / "fixtures" / "calc"
    (fixture / "pkg").mkdir(parents=True)
    (fixture / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (fixture / "pkg" / "data.txt").write_text("data\n")
    (fixture / "link.py").symlink_to("calc.py")
    return tmp_path / "fixtures"


def test_create_copies_the_fixture_and_writes_inline_files(temp_root: Path, fixtures_dir: Path) -> None:
    case = _case(
        fixture="calc",
        fixtures_dir=fixtures_dir,
        files={"notes/todo.md": "fix add\n", "pkg/data.txt": "replaced"},
    )
    workspace = Workspace.create(case)
    path = workspace.path
    assert path.parent == temp_root.resolve() and path.name.startswith("tooltrial-")
    assert (path / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    assert (path / "link.py").is_symlink() and str((path / "link.py").readlink()) == "calc.py"
    assert (path / "notes" / "todo.md").read_text() == "fix add\n"
    assert (path / "pkg" / "data.txt").read_text() == "replaced"
    workspace.cleanup()
    assert not path.exists()
    workspace.cleanup()  # already gone: fine


@pytest.mark.parametrize("relative", ["../escape.txt", "/tmp/escape.txt", "a/../../escape.txt"])
def test_inline_file_escaping_the_workspace_is_refused(temp_root: Path, relative: str) -> None:
    with pytest.raises(WorkspaceError, match="^files: path escapes the workspace"):
        Workspace.create(_case(files={relative: "x"}))
    assert list(temp_root.iterdir()) == []
    assert not (temp_root.parent / "escape.txt").exists()


def test_missing_fixture_is_refused(temp_root: Path, fixtures_dir: Path) -> None:
    with pytest.raises(WorkspaceError) as caught:
        Workspace.create(_case(fixture="nope", fixtures_dir=fixtures_dir))
    assert str(caught.value) == f"fixture folder 'nope' not found in {fixtures_dir}"
    assert list(temp_root.iterdir()) == []


def test_setup_runs_in_the_workspace_with_the_case_env(temp_root: Path) -> None:
    case = _case(setup=("echo $GREETING > out.txt", "echo $HOME >> out.txt"), env={"GREETING": "hi"})
    workspace = Workspace.create(case)
    workspace.run_setup(case, _run())
    assert (workspace.path / "out.txt").read_text() == f"hi\n{workspace.path}\n"
    assert workspace.env(case)["GREETING"] == "hi"
    workspace.cleanup()


def test_setup_failure_names_the_command_and_exit_code(temp_root: Path) -> None:
    case = _case(setup=("true", "echo boom; exit 2", "touch never"))
    workspace, run = Workspace.create(case), _run()
    with pytest.raises(SetupError) as caught:
        workspace.run_setup(case, run)
    assert str(caught.value) == "setup command failed (exit 2): echo boom; exit 2"
    assert [(c.command, c.exit_code) for c in run.commands] == [("true", 0), ("echo boom; exit 2", 2)]
    error = caught.value
    assert (error.command, error.exit_code, error.output) == ("echo boom; exit 2", 2, "boom\n")
    assert not (workspace.path / "never").exists()
    workspace.cleanup()


def test_setup_timeout(temp_root: Path) -> None:
    case = _case(setup=("sleep 5",))
    workspace = Workspace.create(case)
    with pytest.raises(SetupError, match=r"^setup command timed out after 0.2s: sleep 5$") as caught:
        workspace.run_setup(case, _run(command_timeout=0.2))
    assert caught.value.exit_code is None
    workspace.cleanup()


def test_changes_lists_added_changed_and_deleted_files(temp_root: Path) -> None:
    case = _case(files={"a.txt": "a", "b.txt": "b", "keep.txt": "k", "sub/c.txt": "c"})
    workspace = Workspace.create(case)
    path = workspace.path
    before = workspace.snapshot()
    assert sorted(before) == ["a.txt", "b.txt", "keep.txt", "sub/c.txt"]
    (path / "a.txt").write_text("A")
    (path / "b.txt").unlink()
    (path / "sub" / "d.txt").write_text("d")
    (path / ".git").mkdir()
    (path / ".git" / "HEAD").write_text("ref")
    (path / "keep-link").symlink_to("keep.txt")
    assert workspace.changes(before) == Changes(added=("sub/d.txt",), changed=("a.txt",), deleted=("b.txt",))
    workspace.cleanup()
