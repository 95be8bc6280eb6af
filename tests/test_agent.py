"""The agent loop driven by the scripted provider, with real tools in a real folder."""

from __future__ import annotations

import json
import time
from pathlib import Path

from runner.providers.limits import TurnLimited
from runner.providers.scripted import ScriptedProvider
from runner.run.agent import run_agent
from runner.run.context import RunContext
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.tools.base import ToolContext
from runner.tools.toolbox import build_toolbox
from tests.helpers import make_case


def _run(tmp_path: Path, script: list, turns=("go",), max_turns: int = 30, **case_fields):
    case = make_case(script=script, turns=tuple(turns), **case_fields)
    context = ToolContext(tmp_path, Sandbox(), scrubbed_env(tmp_path), 10.0)
    toolbox = build_toolbox(case, context)
    provider = TurnLimited(ScriptedProvider(script), max_turns)
    run = RunContext(context.sandbox, 600.0, time.monotonic() + 600.0, context.command_timeout)
    return run_agent(provider, toolbox, "system", list(turns), run), provider


def test_trajectory_records_every_call_with_result(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    script = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "b.txt", "content": "hi"}}]},
        {"content": "a.txt has 2 lines"},
    ]
    trajectory, provider = _run(tmp_path, script)
    assert [s.name for s in trajectory.steps] == ["read_file", "write_file"]
    assert trajectory.steps[0].arguments == {"path": "a.txt"}
    assert "two" in trajectory.steps[0].result and not trajectory.steps[0].is_error
    assert trajectory.final_reply == "a.txt has 2 lines"
    assert trajectory.stop is None
    assert provider.requests == 3
    assert (tmp_path / "b.txt").read_text() == "hi"
    roles = [m["role"] for m in trajectory.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    call = trajectory.messages[2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"path": "a.txt"}
    assert trajectory.messages[3]["tool_call_id"] == call["id"]


def test_tool_error_is_fed_back_and_the_loop_goes_on(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "missing.txt"}}]},
        {"tool_calls": [{"name": "nope", "arguments": {}}]},
        {"content": "done"},
    ]
    trajectory, _ = _run(tmp_path, script)
    assert [s.is_error for s in trajectory.steps] == [True, True]
    tool_messages = [m["content"] for m in trajectory.messages if m["role"] == "tool"]
    assert all(text.startswith("Error:") for text in tool_messages)
    assert "unknown tool 'nope'" in tool_messages[1]
    assert trajectory.final_reply == "done"


def test_turn_limit_stops_the_run_and_keeps_the_trajectory(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}] * 5 + [{"content": "never"}]
    trajectory, provider = _run(tmp_path, script, max_turns=2)
    assert trajectory.stop == "turn_limit"
    assert trajectory.stop_message == "turn limit 2 exceeded"
    assert provider.requests == 2
    assert len(trajectory.steps) == 2


def test_script_running_out_is_its_own_stop(tmp_path: Path) -> None:
    trajectory, _ = _run(tmp_path, [{"tool_calls": [{"name": "list_dir", "arguments": {}}]}])
    assert trajectory.stop == "script_exhausted"
    assert "script exhausted" in (trajectory.stop_message or "")


def test_each_turn_gets_its_own_reply(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.txt", "content": "x"}}]},
        {"content": "wrote it"},
        {"content": "second answer"},
    ]
    trajectory, _ = _run(tmp_path, script, turns=("first", "second"))
    assert trajectory.replies == ["wrote it", "second answer"]
    assert [s.turn for s in trajectory.steps] == [0]


def test_denied_tool_is_refused_with_an_error_result(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "bash", "arguments": {"command": "echo hi"}}]}, {"content": "ok"}]
    trajectory, _ = _run(tmp_path, script, deny=("bash",))
    assert trajectory.steps[0].is_error
    assert "denied" in trajectory.steps[0].result
