"""Builtin tools and the Toolbox: path safety, paging, edits, search, bash, errors as results."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from runner.sandbox.command import Sandbox, scrubbed_env
from runner.spec.case import Case
from runner.tools import search
from runner.tools.base import Tool, ToolContext, ToolError, ToolResult
from runner.tools.paths import resolve_inside
from runner.tools.registry import BUILTIN_NAMES, object_schema
from runner.tools.toolbox import BUILTIN_TOOLS, Toolbox, build_toolbox


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def _context(workspace: Path, timeout: float = 5.0) -> ToolContext:
    return ToolContext(workspace, Sandbox(), scrubbed_env(workspace), command_timeout=timeout)


def _box(workspace: Path, deny: tuple[str, ...] = (), timeout: float = 5.0) -> Toolbox:
    return Toolbox(BUILTIN_TOOLS, deny, _context(workspace, timeout))


def _call(workspace: Path, name: str, **arguments: Any) -> ToolResult:
    return _box(workspace).call(name, arguments)


def _case(**fields: Any) -> Case:
    return Case(group="g", id="c", source=Path("g.yml"), line=1, turns=("hi",), **fields)


def _raise(arguments: dict[str, Any], context: ToolContext) -> str:
    raise RuntimeError("boom")


BROKEN = Tool("broken", "Always fails.", object_schema({}, []), _raise)


# --- paths -------------------------------------------------------------------


@pytest.mark.parametrize("relative", ["../x", "/etc/passwd", "a/../../x", "out/secret.txt", "out"])
def test_paths_escaping_the_workspace_are_refused(workspace: Path, relative: str) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (workspace / "out").symlink_to(outside)
    with pytest.raises(ToolError, match="path escapes the workspace"):
        resolve_inside(workspace, relative)
    for name, arguments in [("read_file", {}), ("write_file", {"content": "x"}), ("list_dir", {})]:
        result = _call(workspace, name, path=relative, **arguments)
        assert result.is_error and result.content.startswith("Error: path escapes the workspace: ")
    assert (outside / "secret.txt").read_text() == "secret"
    assert not (workspace.parent / "x").exists()


def _linked_world(tmp_path: Path) -> tuple[Path, Path]:
    """``tmp_path/real/ws`` (resolved, holding a.txt, sub/ and a link ``out`` to the outside) and the
    outside folder; ``tmp_path/alias`` links to ``real`` (as /tmp to /private/tmp), ``tmp_path/into``
    to ``ws/sub``."""
    workspace, outside = tmp_path / "real" / "ws", tmp_path / "outside"
    (workspace / "sub").mkdir(parents=True)
    outside.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (outside / "secret.txt").write_text("secret")
    (workspace / "out").symlink_to(outside)
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    (tmp_path / "into").symlink_to(workspace / "sub")
    return workspace.resolve(), outside


def test_an_absolute_path_inside_the_workspace_resolves_as_the_relative_one(tmp_path: Path) -> None:
    workspace, _ = _linked_world(tmp_path)
    for given in (f"{workspace}/a.txt", f"{tmp_path}/alias/ws/a.txt", f"/proc/self/root{workspace}/a.txt",
                  f"{workspace}/./sub/../a.txt", f"{workspace}//a.txt"):
        assert resolve_inside(workspace, given) == workspace / "a.txt", given
        assert _call(workspace, "read_file", path=given).content == "     1\talpha", given
    assert resolve_inside(workspace, str(workspace)) == workspace
    assert resolve_inside(tmp_path / "alias" / "ws", f"{workspace}/a.txt") == workspace / "a.txt"  # given through the link
    assert _call(workspace, "write_file", path=f"{tmp_path}/alias/ws/sub/new.txt", content="x").is_error is False
    assert (workspace / "sub" / "new.txt").read_text() == "x"
    assert _call(workspace, "list_dir", path=str(workspace)).content == "a.txt\nout/\nsub/"


def test_an_absolute_path_outside_the_workspace_is_refused_however_it_is_spelled(tmp_path: Path) -> None:
    workspace, outside = _linked_world(tmp_path)
    for given in (f"{outside}/secret.txt", f"{workspace}/../../outside/secret.txt", f"{workspace}/out/secret.txt",
                  f"{tmp_path}/alias/ws/../../outside/secret.txt", f"{tmp_path}/alias/ws/out/secret.txt",
                  f"/proc/self/root{outside}/secret.txt", f"{tmp_path}/into/a.txt", f"{tmp_path}/real", "/",
                  "/etc/passwd"):
        with pytest.raises(ToolError, match="^path escapes the workspace: "):
            resolve_inside(workspace, given)
        for name, arguments in [("read_file", {}), ("write_file", {"content": "overwritten"}), ("list_dir", {})]:
            result = _call(workspace, name, path=given, **arguments)
            assert result.is_error and result.content.startswith("Error: path escapes the workspace: "), (given, result)
    assert (outside / "secret.txt").read_text() == "secret" and [p.name for p in outside.iterdir()] == ["secret.txt"]
    refused = _call(workspace, "read_file", path="/etc/passwd").content
    assert refused == (f"Error: path escapes the workspace: /etc/passwd (use a path relative to the workspace, "
                       f"or an absolute one inside {workspace})")


@pytest.mark.parametrize(("relative", "message"), [("", "path is empty"), ("a\0b", "NUL byte")])
def test_empty_and_nul_paths_are_refused(workspace: Path, relative: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        resolve_inside(workspace, relative)


def test_paths_inside_resolve(workspace: Path) -> None:
    (workspace / "a").mkdir()
    (workspace / "link").symlink_to("a")
    assert resolve_inside(workspace, "a/../b.txt") == workspace.resolve() / "b.txt"
    assert resolve_inside(workspace, "link/new.txt") == workspace.resolve() / "a" / "new.txt"


# --- files -------------------------------------------------------------------


def test_read_file_pages_with_offset_and_limit(workspace: Path) -> None:
    (workspace / "f.txt").write_text("".join(f"line {n}\n" for n in range(1, 6)))
    page = _call(workspace, "read_file", path="f.txt", offset=2, limit=2)
    assert page == ToolResult("     2\tline 2\n     3\tline 3\n[... 2 more lines; continue with offset=4]")
    last = _call(workspace, "read_file", path="f.txt", offset=4)
    assert last.content == "     4\tline 4\n     5\tline 5"
    assert _call(workspace, "read_file", path="f.txt").content.count("\n") == 4
    past = _call(workspace, "read_file", path="f.txt", offset=9)
    assert past.content == "Error: offset 9 is past the end of f.txt (5 lines)"


def test_read_file_refusals(workspace: Path) -> None:
    (workspace / "data.bin").write_bytes(b"abc\0def")
    (workspace / "dir").mkdir()
    binary = _call(workspace, "read_file", path="data.bin")
    assert binary == ToolResult("Error: data.bin is a binary file", True)
    assert _call(workspace, "read_file", path="dir").content == "Error: dir is a directory; use list_dir"
    assert _call(workspace, "read_file", path="nope.txt").content == "Error: file not found: nope.txt"
    with (workspace / "big.txt").open("wb") as f:
        f.truncate(10_000_001)
    assert "over the 10000000 byte limit" in _call(workspace, "read_file", path="big.txt").content


def test_write_file_creates_parents(workspace: Path) -> None:
    assert _call(workspace, "write_file", path="a/b/c.txt", content="héllo") == ToolResult(
        "wrote 6 bytes to a/b/c.txt"
    )
    assert (workspace / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "héllo"


def test_edit_file_needs_exactly_one_match(workspace: Path) -> None:
    path = workspace / "calc.py"
    path.write_bytes(b"x = 1\nx = 1\ny = 2 \xff\n")
    none = _call(workspace, "edit_file", path="calc.py", old_string="z = 3", new_string="z")
    assert none == ToolResult("Error: old_string not found in calc.py", True)
    several = _call(workspace, "edit_file", path="calc.py", old_string="x = 1", new_string="x = 3")
    assert several.content == (
        "Error: old_string occurs 2 times in calc.py; include more context to make it unique"
    )
    one = _call(workspace, "edit_file", path="calc.py", old_string="y = 2", new_string="y = 20")
    assert one == ToolResult("edited calc.py")
    assert path.read_bytes() == b"x = 1\nx = 1\ny = 20 \xff\n"


def test_list_dir_sorts_marks_folders_and_hides_git(workspace: Path) -> None:
    for folder in ("src", ".git", "docs"):
        (workspace / folder).mkdir()
    (workspace / "b.txt").write_text("")
    (workspace / "a.txt").write_text("")
    assert _call(workspace, "list_dir").content == "a.txt\nb.txt\ndocs/\nsrc/"
    assert _call(workspace, "list_dir", path="src").content == "src is empty"
    assert _call(workspace, "list_dir", path="a.txt").is_error


# --- search ------------------------------------------------------------------


@pytest.fixture
def tree(workspace: Path) -> Path:
    files = {
        "calc.py": "import os\n\ndef add(a, b):\n    return a + b\n",
        "pkg/util.py": "def add_all(xs):\n    return sum(xs)\n",
        "pkg/deep/mod.py": "X = 1\n",
        "notes.md": "def add is in calc.py\n",
        ".git/hooks/pre.py": "def add(): pass\n",
    }
    for relative, content in files.items():
        (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        (workspace / relative).write_text(content)
    (workspace / "blob.bin").write_bytes(b"def add\0")
    return workspace


def test_glob_recursive(tree: Path) -> None:
    assert _call(tree, "glob", pattern="**/*.py").content == "calc.py\npkg/deep/mod.py\npkg/util.py"
    assert _call(tree, "glob", pattern="*.py", path="pkg").content == "pkg/util.py"
    assert _call(tree, "glob", pattern="*.rs").content == "no files match *.rs"
    assert _call(tree, "glob", pattern="../*").is_error


def test_glob_caps_results(workspace: Path) -> None:
    for n in range(503):
        (workspace / f"f{n:03}.txt").write_text("")
    lines = _call(workspace, "glob", pattern="*.txt").content.splitlines()
    assert len(lines) == 501 and lines[0] == "f000.txt" and lines[499] == "f499.txt"
    assert lines[-1] == "[... 3 more files not shown; narrow the pattern]"


def test_grep_with_glob_filter(tree: Path) -> None:
    assert _call(tree, "grep", pattern=r"def add\b").content == (
        "calc.py:3:def add(a, b):\nnotes.md:1:def add is in calc.py"
    )
    assert _call(tree, "grep", pattern="def add", glob="*.py").content == (
        "calc.py:3:def add(a, b):\npkg/util.py:1:def add_all(xs):"
    )
    assert _call(tree, "grep", pattern="return", path="pkg").content == "pkg/util.py:2:    return sum(xs)"
    assert _call(tree, "grep", pattern="nothing here").content == "no matches"


def test_grep_bad_regex_is_an_error(tree: Path) -> None:
    result = _call(tree, "grep", pattern="def (add")
    assert result.is_error
    assert result.content == (
        "Error: invalid regex 'def (add': missing ) at position 8"
    )


# --- bash --------------------------------------------------------------------


def test_bash_reports_the_exit_code_without_an_error(workspace: Path) -> None:
    assert _call(workspace, "bash", command="echo hi; exit 3") == ToolResult("hi\n[exit code 3]")
    assert _call(workspace, "bash", command="true") == ToolResult("[exit code 0]")


def test_bash_timeout_is_an_error(workspace: Path) -> None:
    result = _box(workspace, timeout=0.2).call("bash", {"command": "echo started; sleep 5"})
    assert result == ToolResult("Error: started\n[timed out after 0.2s]", True)


# --- toolbox -----------------------------------------------------------------


def test_toolbox_errors_never_raise(workspace: Path) -> None:
    box = Toolbox({**BUILTIN_TOOLS, "broken": BROKEN}, ("bash",), _context(workspace))
    denied = box.call("bash", {"command": "true"})
    assert denied == ToolResult("Error: tool 'bash' is denied in this case", True, refused=True)
    unknown = box.call("nope", {})
    assert unknown.is_error and unknown.refused
    assert unknown.content == (
        "Error: unknown tool 'nope'; "
        "available: read_file, write_file, edit_file, list_dir, glob, grep, broken"
    )
    missing = box.call("read_file", {})
    assert missing.content == "Error: invalid arguments for read_file: 'path' is a required property"
    assert missing.refused
    extra = box.call("read_file", {"path": "a", "bogus": 1})
    assert extra.is_error and extra.refused and extra.content.startswith("Error: invalid arguments for read_file: ")
    assert "'bogus'" in extra.content
    typed = box.call("read_file", {"path": "a", "offset": "2"})
    assert typed.content == "Error: invalid arguments for read_file: offset: '2' is not of type 'integer'"
    assert box.call("read_file", None, "invalid JSON: Expecting value") == ToolResult(
        "Error: invalid JSON: Expecting value", True
    )
    assert box.call("broken", None) == ToolResult("Error: RuntimeError: boom", True)


def test_toolbox_caps_long_results(workspace: Path) -> None:
    long = Tool("long", "Long output.", object_schema({}, []), lambda arguments, context: "x" * 100_000)
    content = Toolbox({"long": long}, (), _context(workspace)).call("long", {}).content
    assert content == "x" * 15_000 + "\n[... 70000 characters cut ...]\n" + "x" * 15_000


def test_build_toolbox_offers_and_denies(workspace: Path) -> None:
    context = _context(workspace)
    mock = Tool("weather", "Weather.", object_schema({}, []), lambda arguments, context: "sunny")
    every = build_toolbox(_case(), context, {"weather": mock})
    assert every.offered == [*BUILTIN_TOOLS, "weather"]
    assert [spec["function"]["name"] for spec in every.specs()] == every.offered
    assert every.specs()[0]["type"] == "function"
    assert every.specs()[0]["function"]["parameters"]["additionalProperties"] is False

    case = _case(tools=("weather", "read_file"), deny=("read_file",))
    chosen = build_toolbox(case, context, {"weather": mock})
    assert chosen.offered == ["weather", "read_file"]
    assert chosen.call("weather", {}) == ToolResult("sunny")
    assert chosen.call("read_file", {"path": "a"}).content == "Error: tool 'read_file' is denied in this case"
    unknown = chosen.call("bash", {"command": "true"})
    assert unknown.content == "Error: unknown tool 'bash'; available: weather"

    override = Tool("bash", "Fake bash.", object_schema({}, []), lambda arguments, context: "fake")
    overridden = build_toolbox(_case(), context, {"bash": override})
    assert overridden.offered == list(BUILTIN_TOOLS)
    assert overridden.call("bash", {}) == ToolResult("fake")

    with pytest.raises(ValueError, match="g/c: unknown tool 'nope'"):
        build_toolbox(_case(tools=("read_file", "nope")), context)
    with pytest.raises(ValueError, match="g/c: unknown tool 'bsh'"):
        build_toolbox(_case(deny=("bsh",)), context)


def test_grep_stops_a_pattern_that_takes_too_long(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "GREP_TIMEOUT", 0.2)
    (workspace / "long.txt").write_text("a" * 5000 + "b\n")
    started = time.monotonic()
    result = _call(workspace, "grep", pattern=r"(a+)+$")
    assert time.monotonic() - started < 3
    assert result == ToolResult(
        "Error: pattern took longer than 0.2 s (stopped in long.txt at line 1); simplify it or narrow the path or glob",
        True,
    )
    assert _call(workspace, "grep", pattern=r"a+b$").content.startswith("long.txt:1:aaa")


# --- bounds: links, time, Ctrl-C, caps -----------------------------------------------------------


def test_a_hard_link_is_neither_read_nor_written_and_grep_skips_it(workspace: Path) -> None:
    outside = workspace.parent / "outside.txt"
    outside.write_text("secret\n")
    (workspace / "linked.txt").hardlink_to(outside)
    refused = ("Error: linked.txt has 2 hard links, and the file tools refuse a file whose other names may lie "
               "outside the workspace; delete it to write a new one")
    assert _call(workspace, "read_file", path="linked.txt") == ToolResult(refused, True)
    assert _call(workspace, "write_file", path="linked.txt", content="x") == ToolResult(refused, True)
    assert _call(workspace, "edit_file", path="linked.txt", old_string="secret", new_string="x") == ToolResult(refused, True)
    assert _call(workspace, "grep", pattern="secret") == ToolResult("no matches")
    assert outside.read_text() == "secret\n"


def test_a_folder_swapped_for_a_symlink_after_the_path_resolved_is_not_followed(workspace: Path) -> None:
    from runner.tools.paths import open_inside

    outside = workspace.parent / "outside"
    outside.mkdir()
    (workspace / "dir").mkdir()
    target = resolve_inside(workspace, "dir/f.txt")  # what a tool resolved; then a command swaps dir
    (workspace / "dir").rmdir()
    (workspace / "dir").symlink_to(outside)
    with pytest.raises(OSError) as caught:
        open_inside(workspace, target, os.O_RDWR | os.O_CREAT)
    assert caught.value.errno in (errno.ELOOP, errno.ENOTDIR)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize(("name", "arguments"), [
    ("glob", {"pattern": "**/*.py"}), ("grep", {"pattern": "def"}), ("list_dir", {}),
])
@pytest.mark.parametrize(("stopped", "reason"), [
    ({"cancel": "set"}, "the suite was interrupted"), ({"deadline": "passed"}, "the run's time is up"),
])
def test_search_and_listing_stop_on_ctrl_c_and_at_the_run_deadline(
    tree: Path, name: str, arguments: dict, stopped: dict, reason: str
) -> None:
    cancel = threading.Event()
    cancel.set()
    given = {"cancel": cancel} if "cancel" in stopped else {"deadline": time.monotonic() - 1}
    context = ToolContext(tree, Sandbox(), scrubbed_env(tree), **given)
    assert Toolbox(BUILTIN_TOOLS, (), context).call(name, arguments) == ToolResult(f"Error: stopped: {reason}", True)


def test_grep_stops_at_the_run_deadline_before_its_own_limit(workspace: Path) -> None:
    (workspace / "long.txt").write_text("a" * 5000 + "b\n")
    context = ToolContext(workspace, Sandbox(), scrubbed_env(workspace), deadline=time.monotonic() + 0.3)
    started = time.monotonic()
    result = Toolbox(BUILTIN_TOOLS, (), context).call("grep", {"pattern": r"(a+)+$"})
    assert result == ToolResult("Error: stopped: the run's time is up", True)
    assert time.monotonic() - started < 3  # a hang guard: grep's own limit is 5 s


def test_a_bash_command_stops_when_the_suite_is_interrupted(workspace: Path) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    context = ToolContext(workspace, Sandbox(), scrubbed_env(workspace), command_timeout=30, cancel=cancel)
    started = time.monotonic()
    result = Toolbox(BUILTIN_TOOLS, (), context).call("bash", {"command": "echo begun; sleep 30"})
    assert result == ToolResult("Error: begun\n[stopped: the suite was interrupted]", True)
    assert time.monotonic() - started < 5  # a hang guard: the command's timeout is 30 s


def test_walks_stop_at_the_entry_cap_and_say_so(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("runner.tools.walk.MAX_ENTRIES", 40)
    for n in range(30):
        (workspace / "a" / f"{n:02}").mkdir(parents=True)
        (workspace / "a" / f"{n:02}" / "f.txt").write_text("hit\n")
    note = "[stopped after reading 40 folder entries; narrow the path]"
    globbed = _call(workspace, "glob", pattern="**/*.txt").content.splitlines()
    assert globbed[-1] == note and len(globbed) == 10 and all(line.endswith("/f.txt") for line in globbed[:-1])
    assert _call(workspace, "grep", pattern="hit").content.splitlines()[-1] == note
    assert _call(workspace, "glob", pattern="**/*.md").content == f"no files match **/*.md {note}"
    assert _call(workspace, "glob", pattern="*/07/*.txt").content == "a/07/f.txt"  # only folders that can match are read


def test_list_dir_shows_at_most_500_entries(workspace: Path) -> None:
    for n in range(503):
        (workspace / f"f{n:03}").write_text("")
    lines = _call(workspace, "list_dir").content.splitlines()
    assert len(lines) == 501 and lines[:2] == ["f000", "f001"] and lines[499] == "f499"
    assert lines[-1] == "[... 3 more entries not shown; use glob to find what you need]"


def test_a_mock_with_slow_patterns_stops_at_the_run_deadline(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.tools.mocks import mock_tools

    monkeypatch.setattr("runner.patterns.PATTERN_TIMEOUT", 0.2)  # each search below takes that long
    slow = {"when": {"q": {"matches": "(a+)+$"}}, "result": "never"}
    spec = {"name": "lookup", "description": "Look up.", "parameters": object_schema({"q": {"type": "string"}}, ["q"]),
            "responses": [slow] * 6 + [{"result": "fallback"}]}
    context = ToolContext(workspace, Sandbox(), scrubbed_env(workspace), deadline=time.monotonic() + 0.3)
    result = Toolbox(mock_tools([spec]), (), context).call("lookup", {"q": "a" * 5000 + "b"})
    assert result == ToolResult("Error: stopped: the run's time is up", True)


def test_the_names_the_case_loader_knows_are_the_builtin_tools_there_are() -> None:
    assert tuple(BUILTIN_TOOLS) == BUILTIN_NAMES
