"""--record: a run frozen as a case whose script replays it offline, with the same trajectory and metrics."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.output.replay import Recorder
from runner.providers.base import Completion, ToolCall, Usage
from runner.providers.kind import ProviderSpec
from runner.providers.parse import parse_arguments
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import RunRecord
from runner.sandbox.command import Sandbox
from runner.spec.case import Case
from runner.spec.discover import load_cases

SUITE = """\
# A comment that stays behind.
defaults:
  fixture: notes
  tags: [recorded]
  expect:
    max_turns: 8
cases:
  - id: two-turns
    description: Count, then write; a denied tool and a failing command on the way.
    deny: [glob]
    turns:
      - How many notes are there?
      - Write the count to count.txt.
    expect:
      files:
        count.txt: {equals: "2\\n"}
      trace: {must_include: [write_file]}
"""

# What a live model did, reply by reply: text beside tool calls, several calls in one reply,
# a denied tool, a failing command, arguments that are not JSON, and token counts.
LIVE = [
    Completion("Let me look.", (ToolCall("a1", "list_dir", {"path": "."}), ToolCall("a2", "glob", {"pattern": "*"}))),
    Completion(None, (ToolCall("b1", "bash", {"command": "ls notes | wc -l; exit 3"}),)),
    Completion(None, (ToolCall("c1", "read_file", *parse_arguments('{"path": notes')[:3]),)),
    Completion("There are 2 notes."),
    Completion(None, (ToolCall("d1", "write_file", {"path": "count.txt", "content": "2\n"}),)),
    Completion("Wrote count.txt with a count of 2 that is long enough to be folded onto a second line when written.",
               finish_reason="length"),
]


class Live:
    """A stand-in for a live model: replies LIVE in order, with usage, never from a script."""

    name = "live"

    def __init__(self) -> None:
        self.replies = iter(LIVE)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        reply = next(self.replies)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return dataclasses.replace(reply, usage=Usage(100, 10, 110, 0.002), finish_reason=finish)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "fixtures/notes/notes").mkdir(parents=True)
    (tmp_path / "fixtures/notes/notes/a.md").write_text("one\n", encoding="utf-8")
    (tmp_path / "fixtures/notes/notes/b.md").write_text("two\n", encoding="utf-8")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases/rec.yml").write_text(SUITE, encoding="utf-8")
    return tmp_path


def run(case: Case, provider: ProviderSpec) -> RunRecord:
    return execute(case, Arm(provider, load_prompt(None)), RunOptions(Sandbox()))


def same_run(record: RunRecord) -> dict[str, Any]:
    """What a replay must reproduce: everything but timings, call ids, the provider's name and the workspace, and of
    its provenance the model (scripted), its parameters and the case (the recorded case holds the script)."""
    data = record.to_dict()
    messages = re.sub(r"tooltrial-\w+", "tooltrial-X", json.dumps(data["messages"]))  # the workspace's name
    for number, step in enumerate(record.steps):
        messages = messages.replace(step.call_id, f"call-{number}")
    data["messages"] = json.loads(messages)
    for key in ("provider", "duration", "workspace", "latency", "started"):
        data.pop(key)
    data["provenance"] = {k: v for k, v in data["provenance"].items()
                          if k not in ("model", "params", "litellm", "case", "case_parts")}  # the model is scripted
    for step in data["steps"]:
        step.pop("duration")
        step.pop("started")
        step.pop("call_id")
    for request in data["model_requests"]:
        request.pop("latency")
        request.pop("started")
        for call in request["tool_calls"]:
            call.pop("id")
    return data


def test_a_recorded_live_run_replays_offline_exactly(suite: Path) -> None:
    (case,) = load_cases([suite / "cases"])
    live = run(case, ProviderSpec("live", lambda _case: Live()))
    assert live.status == "pass", live.checks
    assert [s.is_error for s in live.steps] == [False, True, False, True, False]
    assert live.tokens.total_tokens == 660

    recorder = Recorder(suite / "recorded", [case])
    recorder.record(live)
    (suite / "fixtures/notes/notes/a.md").unlink()  # the recording carries its own copy
    (replayed_case,) = load_cases([suite / "recorded/cases"])
    assert replayed_case.full_id == "rec/two-turns"
    assert replayed_case.fixtures_dir == (suite / "recorded/fixtures").resolve()
    replay = run(replayed_case, resolve_provider("scripted"))
    assert same_run(replay) == same_run(live)


RECORDED = """\
cases:
  - id: two-turns
    description: Count, then write; a denied tool and a failing command on the way.
    fixture: notes
    tags: [recorded]
    deny: [glob]
    turns:
      - How many notes are there?
      - Write the count to count.txt.
    expect:
      files:
        count.txt: {equals: "2\\n"}
      trace: {must_include: [write_file]}
      max_turns: 8
    script:
      - content: Let me look.
        tool_calls:
          - name: list_dir
            arguments: {path: .}
          - name: glob
            arguments: {pattern: '*'}
        usage: {prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, cost: 0.002}
      - tool_calls:
          - name: bash
            arguments: {command: ls notes | wc -l; exit 3}
        usage: {prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, cost: 0.002}
      - tool_calls:
          - {name: read_file, arguments: '{"path": notes'}
        usage: {prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, cost: 0.002}
      - content: There are 2 notes.
        usage: {prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, cost: 0.002}
      - tool_calls:
          - name: write_file
            arguments: {path: count.txt, content: "2\\n"}
        usage: {prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, cost: 0.002}
      - content: >-
          Wrote count.txt with a count of 2 that is long enough to be folded onto a second
          line when written.
        usage: {prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, cost: 0.002}
        finish_reason: length
"""


def test_the_recorded_file_is_the_case_with_defaults_merged_and_a_readable_script(suite: Path) -> None:
    (case,) = load_cases([suite / "cases"])
    recorder = Recorder(suite / "out", [case])
    recorder.record(run(case, ProviderSpec("live", lambda _case: Live())))
    header, replay, text = (suite / "out/cases/rec.yml").read_text(encoding="utf-8").split("\n", 2)
    assert header == "# Recorded by `tooltrial run --record`: each case's script is what its model replied."
    assert replay == f"# Replay offline: tooltrial run {suite / 'out/cases'} -p scripted"
    assert text == RECORDED


def test_several_arms_and_runs_each_get_their_own_case(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (suite / "cases/rec.yml").write_text(
        "- {id: two-turns, turns: [How many notes?], expect: {response_contains: ['2']}, script: [{content: '2 notes.'}]}\n"
    )
    for name in ("short", "long"):
        (suite / f"{name}.j2").write_text(f"Be {name}.", encoding="utf-8")
    argv = ["run", str(suite / "cases"), "--runs", "2", "-P", str(suite / "short.j2"), "-P", str(suite / "long.j2"),
            "--record", str(suite / "rec"), "--results", str(suite / "results")]
    assert main(argv) == 0
    assert (
        f"recorded 4 runs in {suite / 'rec/cases'}; replay them offline with: tooltrial run {suite / 'rec/cases'} -p scripted\n"
    ) in capsys.readouterr().err
    assert [c.full_id for c in load_cases([suite / "rec/cases"])] == [
        "rec/two-turns.long.run1", "rec/two-turns.long.run2", "rec/two-turns.short.run1", "rec/two-turns.short.run2"
    ]
    assert main(["run", str(suite / "rec/cases"), "-p", "scripted", "--results", str(suite / "results")]) == 0


def test_a_case_repeated_by_its_own_runs_key_is_recorded_once_per_run(tmp_path: Path) -> None:
    path = tmp_path / "cases/again.yml"
    path.parent.mkdir()
    path.write_text("- {id: twice, runs: 2, turns: [Hi.], script: [{content: hi}]}\n", encoding="utf-8")
    (case,) = load_cases([path])
    recorder = Recorder(tmp_path / "rec", [case])
    for number in (1, 2):
        recorder.record(execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(Sandbox()), number))
    assert [(c.full_id, c.runs) for c in load_cases([tmp_path / "rec/cases"])] == [("again/twice.run1", None), ("again/twice.run2", None)]


def test_a_replio_fixture_is_recorded_as_a_case(tmp_path: Path) -> None:
    fixture = tmp_path / "say.json"
    fixture.write_text(json.dumps({"task": "Say {{ hi }}.", "verifier": {"max_calls": 0},
                                   "script": [{"content": "hi"}]}), encoding="utf-8")
    (case,) = load_cases([fixture])
    recorder = Recorder(tmp_path / "rec", [case])
    recorder.record(run(case, resolve_provider("scripted")))
    (again,) = load_cases([tmp_path / "rec/cases/replio.yml"])
    assert (again.full_id, again.turns, again.vars, again.deny) == (case.full_id, case.turns, case.vars, case.deny)
    assert run(again, resolve_provider("scripted")).status == "pass"


def test_a_run_that_never_reached_the_model_records_an_empty_script(tmp_path: Path) -> None:
    path = tmp_path / "cases/bad.yml"
    path.parent.mkdir()
    path.write_text("- {id: setup-fails, setup: [exit 3], turns: [Hi.], script: [{content: hi}]}\n", encoding="utf-8")
    (case,) = load_cases([path])
    recorder = Recorder(tmp_path / "rec", [case])
    recorder.record(run(case, resolve_provider("scripted")))
    (again,) = load_cases([tmp_path / "rec/cases"])
    assert again.script == ()
    assert run(again, resolve_provider("scripted")).error_kind == "setup"


def test_a_run_the_provider_failed_is_left_out_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "cases/mixed.yml"
    path.parent.mkdir()
    path.write_text("- {id: scripted, turns: [Hi.], script: [{content: hi}]}\n- {id: unscripted, turns: [Hi.]}\n",
                    encoding="utf-8")
    cases = load_cases([path])
    recorder = Recorder(tmp_path / "rec", cases)
    records = [run(case, resolve_provider("scripted")) for case in cases]
    assert [r.error_kind for r in records] == [None, "provider_error"]
    for record in records:
        recorder.record(record)
    assert (recorder.recorded, recorder.left_out) == (1, 1)
    assert [c.full_id for c in load_cases([tmp_path / "rec/cases"])] == ["mixed/scripted"]
