"""What a failing run leaves to read: every setup and verify command's exit, output and duration in the
run record (``commands``), the first lines of a failed one under its run's line, and an ERROR's failed checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.output.load import read_results
from tests.helpers import run_cli

CASES = """\
- id: setup-fails
  setup: ["echo prepared", "echo one; echo two >&2; printf 'three\\\\x1b[2Jfour\\\\n'; exit 3", "echo never"]
  turns: [hi]
  script: [{content: done}]
- id: verify-fails
  setup: ["head -c 9000 /dev/zero | tr '\\\\0' x"]
  turns: [hi]
  expect:
    verify: ["seq 1 8; echo bad >&2; exit 1", "true"]
  script: [{content: done}]
- id: passes
  turns: [hi]
  expect:
    verify: "echo fine"
  script: [{content: done}]
- id: setup-slow
  command_timeout: 0.5
  setup: ["echo started; sleep 30"]
  turns: [hi]
  script: [{content: done}]
- id: runs-out
  turns: [Write out.txt]
  expect:
    files: {out.txt: {contains: [hello]}}
    response_contains: [done]
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: bye}}]
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, dict[str, dict[str, Any]]]:
    """The cases run once: the results folder, the CLI's output, each run file's document by case id."""
    tmp_path = tmp_path_factory.mktemp("failures")
    (tmp_path / "t.yml").write_text(CASES)
    done = run_cli("run", str(tmp_path / "t.yml"), "--results", str(tmp_path / "r"))
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "r").glob("*/runs/*.json"))]
    return tmp_path / "r", done, {r["case"].split("/")[1]: r for r in records}


def test_every_setup_and_verify_command_is_on_the_record_with_its_streams_apart(suite: tuple[Path, Any, dict[str, dict[str, Any]]]) -> None:
    _, _, runs = suite
    setup = runs["setup-fails"]["commands"]
    assert [(c["phase"], c["command"], c["exit_code"], c["timed_out"]) for c in setup] == [
        ("setup", "echo prepared", 0, False),
        ("setup", "echo one; echo two >&2; printf 'three\\x1b[2Jfour\\n'; exit 3", 3, False),
    ]  # the command after the failing one never ran
    assert (setup[0]["stdout"], setup[0]["stderr"]) == ("prepared\n", "")
    assert (setup[1]["stdout"], setup[1]["stderr"]) == ("one\nthree\x1b[2Jfour\n", "two\n")
    assert all(0 < c["duration"] < 30 for c in setup)
    passing = runs["passes"]["commands"]
    assert [(c["phase"], c["command"], c["exit_code"], c["stdout"]) for c in passing] == [("verify", "echo fine", 0, "fine\n")]
    verify = runs["verify-fails"]["commands"]
    assert [(c["phase"], c["exit_code"], c["stderr"]) for c in verify] == [("setup", 0, ""), ("verify", 1, "bad\n"),
                                                                          ("verify", 0, "")]
    assert verify[1]["stdout"] == "".join(f"{n}\n" for n in range(1, 9))
    assert runs["runs-out"]["commands"] == []
    (slow,) = runs["setup-slow"]["commands"]
    assert (slow["exit_code"], slow["timed_out"], slow["stdout"]) == (None, True, "started\n")
    assert 0.5 <= slow["duration"] < 10


def test_a_long_stream_keeps_4_kib_of_head_and_of_tail_around_a_marker(suite: tuple[Path, Any, dict[str, dict[str, Any]]]) -> None:
    _, _, runs = suite
    stdout = runs["verify-fails"]["commands"][0]["stdout"]
    assert stdout == "x" * 4096 + "\n[... 808 bytes left out ...]\n" + "x" * 4096


def test_the_record_reads_back_and_the_report_carries_the_commands(suite: tuple[Path, Any, dict[str, dict[str, Any]]]) -> None:
    results = suite[0]
    records = {r.case: r for r in read_results(next(results.iterdir())).records}
    command = records["t/setup-fails"].commands[1]
    assert (command.phase, command.exit_code, command.stderr, command.failed) == ("setup", 3, "two\n", True)
    report = json.loads(next(results.glob("*/report.json")).read_text())
    by_case = {r["case"]: r for r in report["runs"]}
    assert by_case["t/passes"]["commands"][0]["stdout"] == "fine\n"
    long = by_case["t/verify-fails"]["commands"][0]["stdout"]
    assert long.startswith("x" * 1000) and "characters cut" in long and len(long) < 2100


def test_a_failed_command_shows_its_first_lines_escaped_under_its_run(suite: tuple[Path, Any, dict[str, dict[str, Any]]]) -> None:
    _, done, _ = suite
    lines = done.stdout.splitlines()
    start = lines.index("ERROR t/setup-fails: setup command failed (exit 3): "
                        "echo one; echo two >&2; printf 'three\\x1b[2Jfour\\n'; exit 3")
    assert lines[start + 1:start + 5] == ["    | one", "    | three\\x1b[2Jfour", "    | two", "FAIL t/verify-fails"]
    start = lines.index("FAIL t/verify-fails")
    assert lines[start + 1:start + 9] == [
        "  verify failed (exit 1): seq 1 8; echo bad >&2; exit 1",
        "    | 1", "    | 2", "    | 3", "    | 4", "    | 5",
        "    (4 more lines in the run record's commands)",
        "PASS t/passes",
    ]


def test_an_error_line_lists_the_checks_that_did_run_and_fail(suite: tuple[Path, Any, dict[str, dict[str, Any]]]) -> None:
    _, done, runs = suite
    lines = done.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ERROR t/runs-out: script exhausted"))
    assert lines[start:start + 4] == [
        "ERROR t/runs-out: script exhausted: the model was asked for reply 2 but the case's script has 1 (the case has 1 turn; each ends at a reply without tool calls)",
        '  out.txt missing "hello"', '  response missing "done"', "1/5 passed"]
    assert runs["runs-out"]["status"] == "error"


def test_an_exhausted_script_says_how_many_turns_the_case_has(tmp_path: Path) -> None:
    # a comma in a flow list makes two turns of what was meant as one
    (tmp_path / "t.yml").write_text("- id: split\n  turns: [Close ticket 42 if it is open, and tell me its title.]\n"
                                    "  script: [{content: Closed.}]\n")
    done = run_cli("run", str(tmp_path / "t.yml"), "--results", str(tmp_path / "r"))
    assert "ERROR t/split: script exhausted: the model was asked for reply 2 but the case's script has 1 " \
           "(the case has 2 turns; each ends at a reply without tool calls)" in done.stdout.splitlines()


@pytest.mark.parametrize(("script", "said"), [
    ('[{content: ""}]', ("reply 2 but the case's script has 1 (the case has 1 turn; each ends at a reply without tool "
                        "calls; reply 1 was empty and asked again")),
    ('[{content: ""}, {content: " "}]', ("reply 3 but the case's script has 2 (the case has 1 turn; each ends at a "
                                        "reply without tool calls; replies 1 and 2 were empty and asked again")),
], ids=["one", "two"])
def test_an_exhausted_script_names_the_empty_replies_that_were_asked_again(tmp_path: Path, script: str, said: str) -> None:
    (tmp_path / "t.yml").write_text(f"- id: empty\n  turns: [Say hi]\n  script: {script}\n")
    done = run_cli("run", str(tmp_path / "t.yml"), "--results", str(tmp_path / "r"))
    assert done.stdout.splitlines()[0] == (f"ERROR t/empty: script exhausted: the model was asked for {said}: a reply "
                                           "with no text and no tool call is no answer and ends no turn)")
