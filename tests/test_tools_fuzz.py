"""Property: whatever a model sends, tool calls, the response parser and the agent loop never raise.

Every builtin tool gets arbitrary argument objects through ``Toolbox.call`` (wrong
types, huge strings, odd unicode, NUL bytes, ``..`` and absolute paths, a symlink
leading out); each call returns a ToolResult and nothing outside the workspace
changes. The response parser gets arbitrary provider-shaped JSON and gives a
Completion or a ProviderError; the agent loop, fed scripted replies or parsed
responses of any shape, always ends with a trajectory (an error result for each
bad call, a recorded stop for a bad response).
"""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from runner.providers.base import Completion, ProviderError, ToolCall
from runner.providers.limits import TurnLimited
from runner.providers.parse import parse_completion
from runner.providers.scripted import ScriptedProvider
from runner.run.agent import run_agent
from runner.run.context import RunContext
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.text import OUTPUT_LIMIT
from runner.tools.base import ToolContext, ToolResult
from runner.tools.toolbox import BUILTIN_TOOLS, Toolbox

ODD = ["", "..", "../x", "../../etc/passwd", "/etc/passwd", "a/../../b", "out", "out/secret.txt", "link-loop",
       ".", "./a.txt", "a\0b", "\ud800", "a\udcffb", "\u202etxt.exe", "é/ü.txt", "~", "$HOME", "*", "**/*",
       "(a+)+", "[", "x" * 5000, "y" * 100_000, "a.txt", "dir", "dir/"]  # fmt: skip
PARAMS = ["path", "content", "old_string", "new_string", "offset", "limit", "pattern", "glob", "command"]

strings = st.sampled_from(ODD) | st.text(max_size=30)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | strings
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3), max_leaves=8
)
GOOD = [{"path": "a.txt"}, {"path": "dir"}, {"pattern": "alpha"}, {"pattern": "*.txt"}, {"path": "b.txt", "content": "x"},
        {"path": "a.txt", "old_string": "beta", "new_string": "gamma"}]  # fmt: skip
arguments = (
    st.sampled_from(GOOD)
    | st.dictionaries(st.sampled_from(PARAMS), scalars, max_size=4)
    | st.dictionaries(st.sampled_from(PARAMS) | strings, json_values, max_size=4)
    | json_values
)


def _run(context: ToolContext) -> RunContext:
    """A run of 600 seconds from now in ``context``'s sandbox."""
    return RunContext(context.sandbox, 600.0, time.monotonic() + 600.0, context.command_timeout)


def _workspace(root: Path) -> Path:
    """A workspace with a text file, a binary file, a folder, a symlink out and a symlink loop."""
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    workspace = root / "ws"
    (workspace / "dir").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    (workspace / "data.bin").write_bytes(b"\0\1\2")
    (workspace / "out").symlink_to(outside)
    (workspace / "link-loop").symlink_to("link-loop")
    return workspace


def _outside_untouched(root: Path) -> bool:
    outside = root / "outside"
    return sorted(p.name for p in root.iterdir()) == ["outside", "ws"] and [p.name for p in outside.iterdir()] == [
        "secret.txt"
    ] and (outside / "secret.txt").read_text() == "secret\n"


def _assert_result(result: Any) -> None:
    assert isinstance(result, ToolResult)
    assert isinstance(result.content, str) and isinstance(result.is_error, bool)
    assert len(result.content) <= OUTPUT_LIMIT + 100


# The world of the file-tool property: canaries outside the workspace, a hard link to one inside, and
# the symlinks an example makes (to folders and files outside and inside, dangling, looping); then calls
# at paths that try to get out through them, through `..` chains and as absolute paths, or at any arguments.
CANARY = "CANARY-5e1f must never leave the outside folder\n"
OUTSIDE = {"secret.txt": CANARY, "sub/deep.txt": CANARY}
LINK_TARGETS = ["{root}/outside", "{root}/outside/secret.txt", "../outside", "../outside/sub", "../../outside/sub/deep.txt",
                "dir", "a.txt", "{root}/ws/dir", "missing", "loop", "/etc", "/"]  # fmt: skip
link_names = st.sampled_from(["l1", "l2", "dir/l3", "loop"])
links = st.lists(st.tuples(link_names, st.sampled_from(LINK_TARGETS)), max_size=3, unique_by=lambda link: link[0])
tails = st.sampled_from(["", "secret.txt", "sub", "sub/deep.txt", "new.txt", "x/y.txt", "..", "../outside/secret.txt"])
escaping = (
    st.builds(lambda prefix, n, tail: prefix + "../" * n + tail, st.sampled_from(["", "dir/", "dir/../", "./"]),
              st.integers(1, 4), st.sampled_from(["outside/secret.txt", "outside", "outside/sub/deep.txt", "ws/a.txt", ""]))
    | st.sampled_from(["{root}/outside/secret.txt", "{root}/outside", "{root}/ws/a.txt", "{root}/ws", "{root}/ws/new.txt",
                       "{root}/ws/dir", "/etc/passwd", "/"])
    | st.builds(lambda link, tail: f"{link}/{tail}" if tail else link, link_names, tails)
    | st.sampled_from(["a.txt", "dir", "new.txt", "dir/new.txt", ".", "hard.txt", "dir/../a.txt"])
)  # fmt: skip
FILE_TOOLS = [n for n in BUILTIN_TOOLS if n != "bash"]


def _with_path(name: str, path: str) -> dict[str, Any]:
    """Valid arguments for tool ``name`` that use ``path``, so the call reaches the path check."""
    return {"read_file": {"path": path}, "write_file": {"path": path, "content": "overwritten"},
            "edit_file": {"path": path, "old_string": "CANARY", "new_string": "changed"}, "list_dir": {"path": path},
            "glob": {"path": path, "pattern": "**/*"}, "grep": {"path": path, "pattern": "CANARY"}}[name]  # fmt: skip


def _world(root: Path, made: list[tuple[str, str]]) -> Path:
    """The workspace ``root/ws`` beside ``root/outside`` (the canaries), holding a hard link to a
    canary and the symlinks ``made`` (``(name, target)``, ``{root}`` standing for ``root``)."""
    for name, text in OUTSIDE.items():
        (root / "outside" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "outside" / name).write_text(text)
    workspace = root / "ws"
    (workspace / "dir").mkdir(parents=True)
    (workspace / "a.txt").write_text("alpha\nbeta\n")
    os.link(root / "outside" / "secret.txt", workspace / "hard.txt")
    for name, target in made:
        (workspace / name).symlink_to(target.format(root=root))
    return workspace


def _escapes(workspace: Path, path: str) -> bool:
    """The oracle: whether ``path``, symlinks followed, names something outside ``workspace``; an absolute
    one escapes unless its text starts with the workspace's (then it is read as the rest, relative).
    A path no file can have (a NUL byte, text that is not UTF-8) names nothing: it escapes nowhere."""
    if "\0" in path or path.encode("utf-8", "replace").decode("utf-8") != path:
        return False
    root = os.path.realpath(workspace)
    if os.path.isabs(path):
        if path != root and not path.startswith(root + "/"):
            return True
        path = path[len(root):].lstrip("/") or "."
    return os.path.commonpath([root, os.path.realpath(os.path.join(root, path))]) != root


def _outside_as_made(root: Path) -> bool:
    files = sorted(p.relative_to(root / "outside").as_posix() for p in (root / "outside").rglob("*") if p.is_file())
    return (sorted(p.name for p in root.iterdir()) == ["outside", "ws"] and files == sorted(OUTSIDE)
            and all((root / "outside" / name).read_text() == text for name, text in OUTSIDE.items()))


aimed = st.tuples(st.sampled_from(FILE_TOOLS), escaping)  # a path that escapes, or one inside
anything = st.tuples(st.sampled_from(FILE_TOOLS), arguments)  # any arguments at all


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(links, st.lists(aimed | anything, min_size=1, max_size=3))
@example([], [("read_file", "{")])  # a bare string that is no path template
def test_file_and_search_tools_never_raise_nor_touch_the_outside(made: list[tuple[str, str]], calls: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        workspace = _world(root, made)
        box = Toolbox(BUILTIN_TOOLS, (), ToolContext(workspace, Sandbox(), scrubbed_env(workspace)))
        for name, given in calls:
            path = given.replace("{root}", str(root)) if isinstance(given, str) else None  # any text at all: no format()
            escapes = path is not None and _escapes(workspace, path)
            result = box.call(name, given if path is None else _with_path(name, path))
            _assert_result(result)
            assert "CANARY-5e1f" not in result.content, f"{name} showed a canary's text: {result}"
            if escapes:
                assert result.is_error and result.content.startswith("Error: path escapes the workspace: "), result
            assert _outside_as_made(root), f"{name} changed the outside"


printf = st.builds(lambda text: f"printf %s {shlex.quote(text)}", strings)
bash_arguments = (
    st.fixed_dictionaries({"command": printf})
    | st.dictionaries(st.sampled_from(["command", "timeout"]), printf | json_values, max_size=2)
    | json_values
)


@settings(max_examples=40, deadline=None)
@given(bash_arguments)
def test_bash_never_raises(given_arguments: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        box = Toolbox(BUILTIN_TOOLS, (), ToolContext(workspace, Sandbox(), scrubbed_env(workspace), 5.0))
        _assert_result(box.call("bash", given_arguments))


call = st.fixed_dictionaries(
    {"name": st.sampled_from([*BUILTIN_TOOLS, "nope", "read_file "]) | st.text(min_size=1, max_size=10)},
    optional={"arguments": st.sampled_from(GOOD) | st.dictionaries(st.sampled_from(PARAMS) | strings, json_values, max_size=3)},
)
reply = st.fixed_dictionaries({}, optional={"content": strings, "tool_calls": st.lists(call, max_size=3)})


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(reply, max_size=5), st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=2))
def test_the_agent_loop_ends_with_a_trajectory_whatever_the_model_replies(script: list, turns: list) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = _workspace(root)
        box = Toolbox(BUILTIN_TOOLS, ("bash",), ToolContext(workspace, Sandbox(), scrubbed_env(workspace)))
        provider = TurnLimited(ScriptedProvider(script), max_turns=4)
        trajectory = run_agent(provider, box, "system", turns, _run(box.context))
        assert trajectory.stop in (None, "turn_limit", "script_exhausted", "empty_reply", "truncated")
        assert len(trajectory.steps) == sum(len(c.tool_calls) for c in provider.completions)
        json.dumps(trajectory.messages)
        assert _outside_untouched(root)


raw_call = st.fixed_dictionaries({}, optional={
    "id": st.none() | st.sampled_from(["c1", "c1", ""]) | json_values,
    "type": st.just("function"),
    "function": st.fixed_dictionaries({}, optional={
        "name": st.sampled_from([*BUILTIN_TOOLS, "nope"]),
        "arguments": st.builds(json.dumps, st.sampled_from(GOOD) | st.dictionaries(st.sampled_from(PARAMS), scalars,
                                                                                   max_size=3)) | json_values,
    }) | json_values,
})  # fmt: skip
message = st.fixed_dictionaries({}, optional={
    "role": st.just("assistant"),
    "content": json_values | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": strings}), max_size=2),
    "tool_calls": st.lists(raw_call, max_size=3) | json_values,
    "function_call": raw_call | json_values,
})  # fmt: skip
odd_response = st.fixed_dictionaries({}, optional={
    "choices": st.lists(st.fixed_dictionaries({}, optional={"message": message | json_values,
                                                            "finish_reason": json_values}) | json_values, max_size=2),
    "usage": st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "total_tokens", "input_tokens"]),
                             json_values) | json_values,
    "usageMetadata": json_values,
    "prompt_eval_count": json_values,
}) | json_values  # fmt: skip
response = st.builds(  # a well-formed reply (its calls may still be bad), or anything
    lambda calls, content: {"choices": [{"message": {"role": "assistant", "content": content, "tool_calls": calls},
                                         "finish_reason": "tool_calls" if calls else "stop"}]},
    st.lists(raw_call, max_size=3),
    st.none() | strings,
) | odd_response


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response)
def test_any_provider_response_parses_to_a_completion_or_a_provider_error(body: Any) -> None:
    try:
        completion = parse_completion(body)
    except ProviderError:
        return
    assert isinstance(completion, Completion)
    assert completion.content is None or isinstance(completion.content, str)
    assert all(isinstance(c, ToolCall) and isinstance(c.name, str) for c in completion.tool_calls)
    assert all((c.arguments is None) == (c.error is not None) for c in completion.tool_calls)


class _Responses:
    """A provider whose replies are raw response bodies, parsed as a live provider parses them."""

    name = "responses"

    def __init__(self, bodies: list[Any]) -> None:
        self.bodies = iter(bodies)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        body = next(self.bodies, None)
        if body is None:
            raise ProviderError("no more responses")
        return parse_completion(body)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(response, max_size=4))
def test_the_agent_loop_ends_with_a_trajectory_whatever_the_provider_returns(bodies: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = _workspace(root)
        box = Toolbox(BUILTIN_TOOLS, ("bash",), ToolContext(workspace, Sandbox(), scrubbed_env(workspace)))
        trajectory = run_agent(TurnLimited(_Responses(bodies), max_turns=4), box, "system", ["go"], _run(box.context))
        assert trajectory.stop in (None, "turn_limit", "provider_error", "empty_reply", "truncated")
        json.dumps(trajectory.messages)
        assert _outside_untouched(root)


names = st.sampled_from(["a", "b", ".h", "x.py", "y.txt"])
trees = st.lists(st.lists(names, min_size=1, max_size=4).map("/".join), min_size=1, max_size=8)
patterns = st.lists(st.sampled_from(["*", "**", "a", "b", "*.py", "?", "[ab]", ".*", "x.py", "*.txt"]),
                    min_size=1, max_size=5).map("/".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, patterns)
def test_glob_finds_the_files_pathlib_finds_in_one_walk(files: list[str], pattern: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for relative in files:
            path = workspace / relative
            if any(parent.is_file() for parent in path.parents) or path.is_dir():
                continue  # a name already taken by a file or a folder
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
        expected = sorted(p.relative_to(workspace).as_posix() for p in workspace.glob(pattern) if p.is_file())
        box = Toolbox(BUILTIN_TOOLS, (), ToolContext(workspace, Sandbox(), scrubbed_env(workspace)))
        got = box.call("glob", {"pattern": pattern}).content
        assert got == ("\n".join(expected) if expected else f"no files match {pattern}")
