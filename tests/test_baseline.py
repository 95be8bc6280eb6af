"""The baseline guard flags cases that a do-nothing or random-tool agent passes."""

from __future__ import annotations

import random
from pathlib import Path

from runner.errors import ExitCode
from runner.run.baselines import DoNothing, RandomTools, made_up_arguments
from runner.tools.toolbox import BUILTIN_TOOLS
from tests.helpers import run_cli

CASES = """\
- id: says-nothing-wrong
  description: Only forbids words, so silence passes.
  turns: [Explain the bug]
  expect: {response_not_contains: [TODO]}
- id: any-call-will-do
  description: Only asks for some tool call, so random calls pass.
  turns: [Look around]
  expect: {trace: {min_calls: 1}}
- id: real-work
  description: Needs the exact file.
  turns: [Write hello]
  expect:
    files: {out.txt: {equals: "hello\\n"}}
    trace: {must_include: [write_file]}
"""


def test_validate_baseline_fails_for_a_case_the_do_nothing_agent_passes(tmp_path: Path) -> None:
    (tmp_path / "weak.yml").write_text(CASES)
    done = run_cli("validate", str(tmp_path / "weak.yml"), "--baseline")
    at = tmp_path / "weak.yml"
    assert (done.returncode, done.stderr) == (ExitCode.FAILED, "")
    assert done.stdout.splitlines() == [
        "3 cases in 1 file are valid",
        f"error: {at}:1: weak/says-nothing-wrong passes with the do-nothing agent: its checks do not test the task",
        f"warning: {at}:1: weak/says-nothing-wrong passes with the random-tools agent: its checks do not test the task",
        f"warning: {at}:5: weak/any-call-will-do passes with the random-tools agent: its checks do not test the task",
        "baseline: 2 of 3 cases pass without doing the task",
    ]


def test_validate_baseline_exits_0_when_only_the_random_tools_agent_passes_and_1_with_strict(tmp_path: Path) -> None:
    (tmp_path / "weak.yml").write_text("- id: any-call-will-do\n  turns: [Look around]\n  expect: {trace: {min_calls: 1}}\n")
    done = run_cli("validate", str(tmp_path / "weak.yml"), "--baseline")
    line = f"{tmp_path / 'weak.yml'}:1: weak/any-call-will-do passes with the random-tools agent: its checks do not test the task"
    assert (done.returncode, done.stdout.splitlines()) == (ExitCode.OK, [
        "1 case in 1 file is valid", f"warning: {line}", "baseline: 1 of 1 cases pass without doing the task"])
    strict = run_cli("validate", str(tmp_path / "weak.yml"), "--baseline", "--strict")
    assert (strict.returncode, strict.stdout.splitlines()[1]) == (ExitCode.FAILED, f"error: {line}")


def test_do_nothing_never_calls_a_tool() -> None:
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    reply = DoNothing().complete([], tools)
    assert reply.content == "Done." and reply.tool_calls == ()


def test_random_tools_is_reproducible_and_ends() -> None:
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}} for n in BUILTIN_TOOLS]

    def calls(seed: str) -> list[str]:
        model, names = RandomTools(seed), []
        for _ in range(10):
            reply = model.complete([], tools)
            if not reply.tool_calls:
                return names
            names.append(reply.tool_calls[0].name)
        raise AssertionError("never stopped")

    first = calls("g/a")
    assert 1 <= len(first) <= 4 and first == calls("g/a")


def test_made_up_arguments_follow_the_schema() -> None:
    schema = {
        "type": "object",
        "required": ["path", "limit", "mode"],
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer"},
            "mode": {"enum": ["r", "w"]},
            "recursive": {"type": "boolean"},
        },
    }
    for seed in range(20):
        args = made_up_arguments(schema, random.Random(seed))
        assert {"path", "limit", "mode"} <= args.keys() <= set(schema["properties"])
        assert isinstance(args["path"], str) and isinstance(args["limit"], int) and args["mode"] in ("r", "w")
