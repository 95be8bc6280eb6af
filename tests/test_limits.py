"""Limits of one run: its wall-clock timeout cuts setup and blocked commands; cancellation; odd files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from runner.kinds import ErrorKind
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import ERROR, PASS
from runner.sandbox.command import Sandbox, scrubbed_env
from runner.suite.engine import Interrupted, run_matrix
from runner.suite.options import SuiteOptions
from runner.tools.base import ToolContext, ToolResult
from runner.tools.toolbox import BUILTIN_TOOLS, Toolbox
from tests.helpers import make_case

ARM = Arm(resolve_provider("scripted"), load_prompt(None))


def _bash(command: str) -> dict:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def test_a_command_blocking_past_the_run_timeout_is_cut_and_the_trajectory_kept() -> None:
    case = make_case(script=[_bash("echo begun; sleep 30"), {"content": "done"}], timeout=0.5)
    started = time.monotonic()
    record = execute(case, ARM, RunOptions(Sandbox()))
    assert time.monotonic() - started < 3
    assert (record.status, record.error_kind, record.cause) == (ERROR, "timeout", "run timed out after 0.5s")
    assert [s.name for s in record.steps] == ["bash"]
    assert record.steps[0].result == "Error: begun\n[stopped: the run's time is up]"
    assert record.requests == 1


def test_setup_running_past_the_run_timeout_is_a_timeout() -> None:
    case = make_case(setup=["sleep 30"], script=[{"content": "hi"}], timeout=0.3)
    record = execute(case, ARM, RunOptions(Sandbox(), command_timeout=60))
    assert (record.error_kind, record.cause) == ("timeout", "run timed out after 0.3s, in setup: sleep 30")
    assert record.duration < 3


def test_cancel_stops_a_run_at_its_next_step_and_the_matrix_reports_what_is_left() -> None:
    cancel = threading.Event()
    cancel.set()
    options = RunOptions(Sandbox(), cancel=cancel)
    case = make_case(script=[{"content": "hi"}])
    record = execute(case, ARM, options)
    assert (record.status, record.error_kind, record.checks) == (ERROR, ErrorKind.CANCELLED, [])
    with pytest.raises(Interrupted) as caught:
        run_matrix([case], [ARM], SuiteOptions(options), repeats=2)
    assert caught.value.records == []
    assert caught.value.left == [("t/case", "scripted", "default", 1, None), ("t/case", "scripted", "default", 2, None)]


def test_runs_finished_before_the_cancel_are_kept_in_plan_order() -> None:
    options = SuiteOptions(RunOptions(Sandbox()))
    cases = [make_case(id=f"c{i}", script=[{"content": "hi"}]) for i in range(4)]
    seen: list[str] = []

    def on_record(record) -> None:
        seen.append(record.case)
        if len(seen) == 2:
            options.run.cancel.set()

    with pytest.raises(Interrupted) as caught:
        run_matrix(cases, [ARM], options, on_record=on_record)
    assert [r.case for r in caught.value.records] == ["t/c0", "t/c1"] == seen
    assert all(r.status == PASS for r in caught.value.records)
    assert [left[0] for left in caught.value.left] == ["t/c2", "t/c3"]


@pytest.mark.parametrize("tool", ["read_file", "write_file", "edit_file"])
def test_a_fifo_is_refused_instead_of_blocking(tmp_path: Path, tool: str) -> None:
    os.mkfifo(tmp_path / "pipe")
    box = Toolbox(BUILTIN_TOOLS, (), ToolContext(tmp_path, Sandbox(), scrubbed_env(tmp_path)))
    arguments = {"read_file": {}, "write_file": {"content": "x"}, "edit_file": {"old_string": "a", "new_string": "b"}}
    result = box.call(tool, {"path": "pipe", **arguments[tool]})
    assert result == ToolResult("Error: pipe is not a regular file", True)
    grep = box.call("grep", {"pattern": "x"})
    assert grep == ToolResult("no matches")


def test_a_nul_byte_in_a_command_is_refused(tmp_path: Path) -> None:
    box = Toolbox(BUILTIN_TOOLS, (), ToolContext(tmp_path, Sandbox(), scrubbed_env(tmp_path)))
    assert box.call("bash", {"command": "echo a\0b"}) == ToolResult("Error: command contains a NUL byte", True)
