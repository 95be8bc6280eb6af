"""Per-turn checks: ``{content, expect}`` turns are checked on their own reply and calls."""

from __future__ import annotations

from pathlib import Path

from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import FAIL, PASS
from runner.sandbox.command import Sandbox
from runner.spec.casefile import load_file, validate_file
from runner.spec.expect import TurnExpect

CASE = """\
- id: two-steps
  turns:
    - content: Write notes.txt
      expect:
        response_contains: notes.txt
        trace: {exact: [write_file]}
    - Now something else
    - content: Count the notes
      expect:
        response_matches: ['\\A1 note\\z']
        trace: {must_include: [read_file], avoid: [write_file]}
  expect:
    response_contains: note
  script:
{script}
"""

GOOD = """\
    - tool_calls: [{name: write_file, arguments: {path: notes.txt, content: "a\\n"}}]
    - content: wrote notes.txt
    - content: ok
    - tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
    - content: 1 note"""

BAD = """\
    - tool_calls: [{name: write_file, arguments: {path: notes.txt, content: "a\\n"}}]
    - content: done
    - tool_calls: [{name: write_file, arguments: {path: x.txt, content: "b"}}]
    - content: ok
    - content: 2 notes"""


def _run(tmp_path: Path, script: str):
    path = tmp_path / "turns.yml"
    path.write_text(CASE.replace("{script}", script))
    (case,) = load_file(path, fixtures_dir=tmp_path)
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    return case, execute(case, arm, RunOptions(sandbox=Sandbox()))


def test_turns_load_as_text_with_their_checks(tmp_path: Path) -> None:
    case, _ = _run(tmp_path, GOOD)
    assert case.turns == ("Write notes.txt", "Now something else", "Count the notes")
    assert case.turn_expect[1] == TurnExpect()
    assert case.turn_expect[0].response_contains == ("notes.txt",)  # one string, loaded as a list


def test_each_turn_sees_only_its_reply_and_calls(tmp_path: Path) -> None:
    _, record = _run(tmp_path, GOOD)
    assert record.status == PASS, [c.message for c in record.failed_checks]
    names = [c.check for c in record.checks]
    assert names[:5] == [
        "turns[0].response_contains",
        "turns[0].trace.exact",
        "turns[2].response_matches",
        "turns[2].trace.must_include",
        "turns[2].trace.avoid",  # the write_file of turn 1 does not count against turn 3
    ]
    assert names[5:] == ["response_contains"]


def test_failed_turn_checks_name_the_turn(tmp_path: Path) -> None:
    _, record = _run(tmp_path, BAD)
    assert record.status == FAIL
    assert [c.message for c in record.failed_checks] == [
        'turn 1: response missing "notes.txt"',
        "turn 3: response does not match /\\A1 note\\z/",
        "turn 3: never called read_file (calls: no calls)",
    ]


def test_turn_never_finished_fails_its_checks(tmp_path: Path) -> None:
    _, record = _run(tmp_path, GOOD.rsplit("\n", 2)[0])  # the script stops before turn 3 ends
    assert record.error_kind == "script_exhausted"
    assert "turn 3: never finished" in [c.message for c in record.failed_checks]


def test_turn_checks_are_validated_where_written(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(
        "- id: a\n"
        "  turns:\n"
        "    - content: hi\n"
        "      expect: {response_matches: ['(open'], trace: {avoidd: [bash]}}\n"
        "    - {contnt: x}\n"
    )
    assert [e.render().split(": ", 1)[1] for e in validate_file(path, tmp_path)] == [
        "turns[0].expect.response_matches[0]: invalid regex '(open': missing ) at position 5",
        "turns[0].expect.trace: unknown key 'avoidd' (did you mean 'avoid'?)",
        "turns[1]: unknown key 'contnt' (did you mean 'content'?)",
    ]
