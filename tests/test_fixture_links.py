"""A fixture brings into the workspace only what lies inside its fixtures folder. Each attack puts a
canary file where bubblewrap would hide it (under the home folder: /root when run as root, as CI
runs) and reaches for it through a symbolic link on the fixture's way; the canary's text must then
appear nowhere: no workspace file (``--keep`` leaves them), no run file, no report.json, no request a
provider saw, no line printed. The refusal is a positioned error at the ``fixture:`` key before any
run, and, when a link is put there after the case was loaded, the run's recorded ``workspace`` error.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.errors import UserError
from runner.output.replay import Recorder
from runner.run.workspace import Workspace, WorkspaceError
from runner.spec.casefile import load_file
from runner.spec.fixture import FixtureError
from runner.suite.rayexec import _packed_fixture
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import make_case, run_cli

CASE = """- id: leak
  fixture: {fixture}
  tools: [read_file]
  turns: [Read secret.txt.]
  script:
    - tool_calls: [{{name: read_file, arguments: {{path: secret.txt}}}}]
    - content: done
"""
RULE = ("a fixture must be a folder inside {fixtures}, with no symbolic link on the way "
        "(copy the files in instead of linking them)")


@pytest.fixture
def secret(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder under the home folder (else, where that cannot be written, outside the project) holding
    ``secret.txt`` and ``b/secret.txt``, both the canary text; removed afterwards."""
    canary = f"tooltrial-canary-{uuid.uuid4().hex}"
    try:
        folder = Path(tempfile.mkdtemp(prefix=".tooltrial-canary-", dir=pwd.getpwuid(os.getuid()).pw_dir))
    except OSError:
        folder = Path(tempfile.mkdtemp(prefix="canary-", dir=tmp_path))
    (folder / "b").mkdir()
    for file in (folder / "secret.txt", folder / "b" / "secret.txt"):
        file.write_text(canary + "\n")
    yield folder, canary
    shutil.rmtree(folder)


def project(tmp_path: Path, fixture: str) -> Path:
    """``tmp_path/p`` with ``cases/x.yml`` (one case of ``fixture`` that reads secret.txt) and an empty
    ``fixtures/``; the case file's path."""
    case = tmp_path / "p" / "cases" / "x.yml"
    case.parent.mkdir(parents=True)
    (tmp_path / "p" / "fixtures").mkdir()
    case.write_text(CASE.format(fixture=fixture), encoding="utf-8")
    return case


def leaked(canary: str, *folders: Path) -> list[str]:
    """Every regular file below ``folders`` (no link followed) whose bytes hold ``canary``."""
    found = []
    for folder in folders:
        for where, _, names in os.walk(folder):
            for name in names:
                path = Path(where, name)
                if path.is_file() and not path.is_symlink() and canary.encode() in path.read_bytes():
                    found.append(str(path))
    return found


def attack(layout: str, tmp_path: Path, secret: Path) -> tuple[Path, str]:
    """The case file of one way out of the fixtures folder, and its validate error after ``file:line:col: ``."""
    fixtures = tmp_path / "p" / "fixtures"
    rule = RULE.format(fixtures=fixtures)
    if layout == "fixture is a link":
        case = project(tmp_path, "secretfx")
        (fixtures / "secretfx").symlink_to(secret)
        return case, f"fixture: fixture 'secretfx' is a symbolic link (to {secret}); {rule}"
    if layout == "fixture is a relative link":
        case = project(tmp_path, "secretfx")
        target = os.path.relpath(secret, fixtures)
        (fixtures / "secretfx").symlink_to(target)
        return case, f"fixture: fixture 'secretfx' is a symbolic link (to {target}); {rule}"
    if layout == "a folder on its way is a link":
        case = project(tmp_path, "a/b")
        (fixtures / "a").symlink_to(secret)
        return case, f"fixture: fixture 'a/b' goes through a symbolic link: a (to {secret}); {rule}"
    if layout == "the fixtures folder beside the cases is a link out":
        case = project(tmp_path, "b")
        fixtures.rmdir()
        fixtures.symlink_to(secret)
        return case, (f"fixture: fixture 'b': the fixtures folder {fixtures} is a symbolic link (to {secret}), which"
                      f" leads out of {tmp_path / 'p'} (give --fixtures-dir {secret} to use it, or copy the fixtures in)")
    if layout == "fixture is ../b":
        case = project(tmp_path, "../b")
        shutil.copytree(secret / "b", tmp_path / "p" / "b")
        return case, f"fixture: fixture '../b' must be a folder inside {fixtures}"
    case = project(tmp_path, str(secret / "b"))
    return case, f"fixture: fixture '{secret / 'b'}' must be a folder inside {fixtures}"


LAYOUTS = ["fixture is a link", "fixture is a relative link", "a folder on its way is a link",
           "the fixtures folder beside the cases is a link out", "fixture is ../b", "fixture is an absolute path"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_fixture_outside_its_fixtures_folder_is_refused_and_the_secret_goes_nowhere(
        layout: str, tmp_path: Path, secret: tuple[Path, str], temp_root: Path) -> None:
    folder, canary = secret
    case, error = attack(layout, tmp_path, folder)
    results = tmp_path / "r"
    done = run_cli("run", str(case), "-p", "scripted", "--keep", "--results", str(results), cwd=tmp_path)
    assert leaked(canary, temp_root, tmp_path / "p" / "cases", results) == []
    assert canary not in done.stdout + done.stderr
    assert (done.returncode, done.stdout, done.stderr) == (4, "", f"error: {case}:2:12: {error}\n")
    assert not results.exists() and list(temp_root.iterdir()) == []
    for command in ("validate", "list"):
        done = run_cli(command, str(case), cwd=tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (4, "", f"error: {case}:2:12: {error}\n")


@pytest.mark.usefixtures("litellm_loaded")
def test_a_model_is_never_sent_a_secret_a_fixture_links_to(tmp_path: Path, secret: tuple[Path, str],
                                                           temp_root: Path) -> None:
    folder, canary = secret
    case, error = attack("fixture is a link", tmp_path, folder)
    (tmp_path / "tooltrial.yml").write_text("providers:\n  fake: {model: openai/fake, api_base: API, timeout: 10,"
                                            " retries: {attempts: 1}}\n", encoding="utf-8")
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("read_file", {"path": "secret.txt"})]), openai_reply("done"))
        config = tmp_path / "tooltrial.yml"
        config.write_text(config.read_text().replace("API", server.api_base), encoding="utf-8")
        done = run_cli("run", str(case), "-p", "fake", "--config", str(config), "--keep", "--results",
                       str(tmp_path / "r"), cwd=tmp_path)
    assert [request for request in server.requests if canary in json.dumps(request.body)] == []
    assert leaked(canary, temp_root, tmp_path / "r") == [] and canary not in done.stdout + done.stderr
    assert (done.returncode, done.stderr) == (4, f"error: {case}:2:12: {error}\n")
    assert server.chats == []


def test_a_fixture_swapped_for_a_link_by_an_earlier_case_is_a_recorded_error_with_nothing_copied(
        tmp_path: Path, secret: tuple[Path, str], temp_root: Path) -> None:
    folder, canary = secret
    case = project(tmp_path, "secretfx")
    fixture = tmp_path / "p" / "fixtures" / "secretfx"
    fixture.mkdir()
    (fixture / "secret.txt").write_text("nothing secret\n")
    swap = f"rm -rf {fixture} && ln -s {folder} {fixture}"  # unconfined, an earlier command can do this
    case.write_text(f"- {{id: a-swap, setup: ['{swap}'], turns: [Hi.], script: [{{content: hi}}]}}\n"
                    + CASE.replace("id: leak", "id: b-leak").format(fixture="secretfx"), encoding="utf-8")
    results = tmp_path / "r"
    done = run_cli("run", str(case), "-p", "scripted", "--sandbox", "none", "-j", "1", "--keep", "--results",
                   str(results), cwd=tmp_path)
    assert leaked(canary, temp_root, results) == [] and canary not in done.stdout + done.stderr
    reason = (f"fixture 'secretfx' is a symbolic link (to {folder}); "
              f"{RULE.format(fixtures=tmp_path / 'p' / 'fixtures')}")
    assert done.returncode == 4
    (kept,) = temp_root.iterdir()  # the first case's workspace; none is left of the second's
    assert done.stdout.splitlines()[:4] == ["PASS x/a-swap", f"  workspace kept: {kept}", f"ERROR x/b-leak: {reason}",
                                            "1/2 passed"]
    (run,) = (json.loads(p.read_text()) for p in results.glob("*/runs/*b-leak*.json"))
    assert (run["status"], run["error_kind"], run["cause"], run["steps"]) == ("error", "workspace", reason, [])


@pytest.mark.parametrize("swapped", ["the fixture", "a folder on its way", "the fixtures folder"])
def test_a_link_put_on_the_fixtures_way_after_loading_is_refused_by_the_copy(
        swapped: str, tmp_path: Path, secret: tuple[Path, str], temp_root: Path) -> None:
    folder, canary = secret
    fixtures = tmp_path / "p" / "fixtures"
    case = project(tmp_path, "a/b")
    (fixtures / "a" / "b").mkdir(parents=True)
    (loaded,) = load_file(case)
    if swapped == "the fixture":
        shutil.rmtree(fixtures / "a" / "b")
        (fixtures / "a" / "b").symlink_to(folder / "b")
        reason = f"fixture 'a/b' is a symbolic link (to {folder / 'b'}); {RULE.format(fixtures=fixtures)}"
    elif swapped == "a folder on its way":
        shutil.rmtree(fixtures / "a")
        (fixtures / "a").symlink_to(folder)
        reason = f"fixture 'a/b' goes through a symbolic link: a (to {folder}); {RULE.format(fixtures=fixtures)}"
    else:
        fixtures.rename(tmp_path / "p" / "old")
        (folder / "a").mkdir()
        shutil.copytree(folder / "b", folder / "a" / "b")
        fixtures.symlink_to(folder)
        reason = (f"fixture 'a/b' cannot be copied: the fixtures folder {fixtures} has become a symbolic link"
                  f" (to {folder}) since the case was loaded")
    with pytest.raises(WorkspaceError) as caught:
        Workspace.create(loaded)
    assert str(caught.value) == reason
    assert list(temp_root.iterdir()) == [] and canary not in str(caught.value)


@pytest.mark.parametrize("entry", ["sub", "notes.txt"])
def test_an_entry_swapped_for_a_link_while_the_fixture_is_copied_is_refused(
        entry: str, tmp_path: Path, secret: tuple[Path, str], temp_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, canary = secret
    fixture = tmp_path / "fixtures" / "fx"
    (fixture / "sub").mkdir(parents=True)
    (fixture / "notes.txt").write_text("notes\n")
    real_stat = os.stat

    def stat_then_swap(path: object, *args: object, **kwargs: object) -> os.stat_result:
        """The entry as the copy looks at it, then a link in its place before the copy opens it."""
        info = real_stat(path, *args, **kwargs)  # type: ignore[arg-type]
        if path == entry and kwargs.get("dir_fd") is not None and not (fixture / entry).is_symlink():
            if entry == "sub":
                shutil.rmtree(fixture / entry)
            else:
                (fixture / entry).unlink()
            (fixture / entry).symlink_to(folder / ("b" if entry == "sub" else "secret.txt"))
        return info

    monkeypatch.setattr(os, "stat", stat_then_swap)
    with pytest.raises(WorkspaceError) as caught:
        Workspace.create(make_case(fixture="fx", fixtures_dir=tmp_path / "fixtures"))
    monkeypatch.undo()
    assert str(caught.value) == f"fixture 'fx' cannot be copied: {fixture / entry} changed while it was copied"
    assert list(temp_root.iterdir()) == [] and leaked(canary, temp_root) == []


def test_a_link_inside_a_fixture_is_copied_as_a_link_that_the_file_tools_refuse(
        tmp_path: Path, secret: tuple[Path, str], temp_root: Path) -> None:
    folder, canary = secret
    case = project(tmp_path, "fx")
    (tmp_path / "p" / "fixtures" / "fx").mkdir()
    (tmp_path / "p" / "fixtures" / "fx" / "secret.txt").symlink_to(folder / "secret.txt")
    results = tmp_path / "r"
    done = run_cli("run", str(case), "-p", "scripted", "--keep", "--results", str(results), cwd=tmp_path)
    assert leaked(canary, temp_root, results) == [] and canary not in done.stdout + done.stderr
    (workspace,) = temp_root.iterdir()
    assert os.readlink(workspace / "secret.txt") == str(folder / "secret.txt")
    (run,) = (json.loads(p.read_text()) for p in results.glob("*/runs/*.json"))
    (step,) = run["steps"]
    assert step["is_error"] and step["result"] == "Error: path escapes the workspace: secret.txt"


def test_a_hard_linked_file_in_a_fixture_is_copied_as_a_file_of_its_own(tmp_path: Path, temp_root: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("shared\n")
    fixture = tmp_path / "fixtures" / "fx"
    fixture.mkdir(parents=True)
    os.link(outside, fixture / "linked.txt")
    workspace = Workspace.create(make_case(fixture="fx", fixtures_dir=tmp_path / "fixtures"))
    copied = workspace.path / "linked.txt"
    assert copied.read_text() == "shared\n" and copied.stat().st_nlink == 1
    copied.write_text("changed\n")
    assert outside.read_text() == "shared\n"
    workspace.cleanup()


def test_the_copy_keeps_modes_times_and_links(tmp_path: Path, temp_root: Path) -> None:
    fixture = tmp_path / "fixtures" / "fx"
    (fixture / "bin").mkdir(parents=True)
    (fixture / "bin" / "run.sh").write_text("#!/bin/sh\n")
    (fixture / "bin" / "run.sh").chmod(0o751)
    (fixture / "bin" / "latest").symlink_to("run.sh")
    (fixture / "data.txt").write_text("data\n")
    os.utime(fixture / "data.txt", ns=(1_000_000_000, 2_000_000_000))
    (fixture / "bin").chmod(0o750)
    os.utime(fixture / "bin", ns=(3_000_000_000, 4_000_000_000))
    workspace = Workspace.create(make_case(fixture="fx", fixtures_dir=tmp_path / "fixtures"))
    path = workspace.path
    assert (path / "bin" / "run.sh").stat().st_mode & 0o777 == 0o751
    assert (path / "data.txt").stat().st_mtime_ns == 2_000_000_000
    assert ((path / "bin").stat().st_mode & 0o777, (path / "bin").stat().st_mtime_ns) == (0o750, 4_000_000_000)
    assert os.readlink(path / "bin" / "latest") == "run.sh"
    workspace.cleanup()


def test_a_fixtures_folder_the_user_names_may_be_a_link_and_one_inside_the_project_too(
        tmp_path: Path, temp_root: Path) -> None:
    case = project(tmp_path, "fx")
    real = tmp_path / "p" / "data" / "fixtures"
    (real / "fx").mkdir(parents=True)
    (real / "fx" / "secret.txt").write_text("nothing secret\n")
    (tmp_path / "named").symlink_to(real)
    (tmp_path / "p" / "fixtures").rmdir()
    (tmp_path / "p" / "fixtures").symlink_to("data/fixtures")
    for extra in (["--fixtures-dir", str(tmp_path / "named")], []):
        done = run_cli("run", str(case), "-p", "scripted", "--results", str(tmp_path / "r"), *extra, cwd=tmp_path)
        assert (done.returncode, done.stdout.splitlines()[:2]) == (0, ["PASS x/leak", "1/1 passed"]), done.stderr


def test_the_record_and_the_ray_executor_copy_a_fixture_as_the_workspace_does(
        tmp_path: Path, secret: tuple[Path, str]) -> None:
    folder, canary = secret
    case = project(tmp_path, "fx")
    (tmp_path / "p" / "fixtures" / "fx").mkdir()
    (loaded,) = load_file(case)
    (tmp_path / "p" / "fixtures" / "fx").rmdir()
    (tmp_path / "p" / "fixtures" / "fx").symlink_to(folder)
    reason = f"fixture 'fx' is a symbolic link (to {folder}); {RULE.format(fixtures=tmp_path / 'p' / 'fixtures')}"
    with pytest.raises(UserError) as caught:
        Recorder(tmp_path / "rec", [loaded])
    assert str(caught.value) == f"cannot record: {reason}"
    assert leaked(canary, tmp_path / "rec") == []
    with pytest.raises(FixtureError) as refused:
        _packed_fixture(tmp_path / "p" / "fixtures", "fx")
    assert str(refused.value) == reason
