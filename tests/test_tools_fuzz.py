"""Property: whatever arguments a model sends, tool calls and the agent loop never raise.

Every builtin tool gets arbitrary argument objects through ``Toolbox.call`` (wrong
types, huge strings, odd unicode, NUL bytes, ``..`` and absolute paths, a symlink
leading out); each call returns a ToolResult and nothing outside the workspace
changes. The agent loop gets arbitrary scripted replies (any tool name, any
arguments) and always ends with a trajectory. The provider response parser is
fuzzed where it lives (runner.providers.parse), not here.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.agent import run_agent
from runner.providers.limits import TurnLimited
from runner.providers.scripted import ScriptedProvider
from runner.sandbox import OUTPUT_LIMIT, Sandbox, scrubbed_env
from runner.tools import BUILTIN_TOOLS, Toolbox
from runner.tools.base import ToolContext, ToolResult

ODD = ["", "..", "../x", "../../etc/passwd", "/etc/passwd", "a/../../b", "out", "out/secret.txt", "link-loop",
       ".", "./a.txt", "a\0b", "\ud800", "a\udcffb", "\u202etxt.exe", "é/ü.txt", "~", "$HOME", "*", "**/*",
       "(a+)+", "[", "x" * 5000, "y" * 100_000, "a.txt", "dir", "dir/"]  # fmt: skip
PARAMS = ["path", "content", "old_string", "new_string", "offset", "limit", "pattern", "glob", "command"]

strings = st.sampled_from(ODD) | st.text(max_size=30)
scalars = st.none() | st.booleans() | st.integers() | st.floats() | strings
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3), max_leaves=8
)
arguments = (
    st.dictionaries(st.sampled_from(PARAMS), scalars, max_size=4)
    | st.dictionaries(st.sampled_from(PARAMS) | strings, json_values, max_size=4)
    | json_values
)


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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([n for n in BUILTIN_TOOLS if n != "bash"]), arguments)
def test_file_and_search_tools_never_raise_nor_touch_the_outside(name: str, given_arguments: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = _workspace(root)
        box = Toolbox(BUILTIN_TOOLS, (), ToolContext(workspace, Sandbox(), scrubbed_env(workspace)))
        _assert_result(box.call(name, given_arguments))
        assert _outside_untouched(root)


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
    optional={"arguments": st.dictionaries(st.sampled_from(PARAMS) | strings, json_values, max_size=3)},
)
reply = st.fixed_dictionaries({}, optional={"content": strings, "tool_calls": st.lists(call, max_size=3)})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(reply, max_size=5), st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=2))
def test_the_agent_loop_ends_with_a_trajectory_whatever_the_model_replies(script: list, turns: list) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        workspace = _workspace(root)
        box = Toolbox(BUILTIN_TOOLS, ("bash",), ToolContext(workspace, Sandbox(), scrubbed_env(workspace)))
        provider = TurnLimited(ScriptedProvider(script), max_turns=4)
        trajectory = run_agent(provider, box, "system", turns)
        assert trajectory.stop in (None, "turn_limit", "provider_error")
        assert len(trajectory.steps) == sum(len(c.tool_calls) for c in provider.completions)
        json.dumps(trajectory.messages)
        assert _outside_untouched(root)
