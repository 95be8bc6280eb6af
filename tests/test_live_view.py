"""``run --live`` (each model request and tool call printed as it happens, escaped; labelled by run when runs
go at once) and ``run -q`` (only the runs that did not pass, and the summary), through the real CLI."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.run.events import CallDone
from runner.terminal.live import describe
from tests.fake_servers import OpenAIServer, script_replies
from tests.helpers import config, run_cli

CASES = """\
- id: writes
  turns: [Write hello to out.txt]
  mocks:
    - name: lookup
      description: Look a word up.
      parameters: {type: object, properties: {word: {type: string}}, required: [word]}
      responses: [{result: found}]
  expect:
    files: {out.txt: {equals: hello}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hello}}]
    - tool_calls:
        - {name: bash, arguments: {command: "printf 'a\\\\033[2Jb'; cat missing\\nexit 1"}}
        - {name: lookup, arguments: {word: 7}}
        - {name: read_file, arguments: {path: missing.txt}}
    - content: Done.
- id: answers
  turns: [Say hi]
  expect: {response_contains: [hi]}
  script: [{content: hi}]
"""

_SECONDS = re.compile(r"\d+\.\d\ds$")


def _lines(text: str) -> list[str]:
    """The lines with their durations (which vary) written as ``Ns``."""
    return [_SECONDS.sub("Ns", line) for line in text.splitlines()]


def test_one_run_at_a_time_shows_each_request_and_call_under_its_run(tmp_path: Path) -> None:
    (tmp_path / "t.yml").write_text(CASES)
    done = run_cli("run", str(tmp_path / "t.yml"), "--live", "-j", "1", "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    assert _lines(done.stdout)[:13] == [
        "▶ t/writes",
        "  model request 1 (turn 1): tool_calls, 1 call, tokens not reported, Ns",
        '  -> write_file {"path":"out.txt","content":"hello"}: ok, Ns',
        "  model request 2 (turn 1): tool_calls, 3 calls, tokens not reported, Ns",
        r'''  -> bash {"command":"printf 'a\\033[2Jb'; cat missing\nexit 1"}: ok, Ns''',
        '''  -> lookup {"word":7}: refused: Error: invalid arguments for lookup: word: 7 is not of type 'string', Ns''',
        '  -> read_file {"path":"missing.txt"}: error: Error: file not found: missing.txt, Ns',
        "  model request 3 (turn 1): stop, 0 calls, tokens not reported, Ns",
        "PASS t/writes",
        "▶ t/answers",
        "  model request 1 (turn 1): stop, 0 calls, tokens not reported, Ns",
        "PASS t/answers",
        "2/2 passed",
    ]


def test_runs_at_once_label_every_line_with_their_run(tmp_path: Path) -> None:
    (tmp_path / "t.yml").write_text(CASES)
    done = run_cli("run", str(tmp_path / "t.yml"), "-c", "t/answers", "--runs", "2", "--live", "-j", "2",
                   "--results", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    lines = _lines(done.stdout)
    for run in ("#1", "#2"):
        assert [line for line in lines if line.startswith(f"[t/answers {run}]")] == [
            f"[t/answers {run}] started", f"[t/answers {run}] model request 1 (turn 1): stop, 0 calls, tokens not reported, Ns"]
    assert lines[4:7] == ["PASS t/answers #1", "PASS t/answers #2", "2/2 passed"]


@pytest.mark.usefixtures("litellm_loaded")
def test_a_live_model_shows_its_finish_reason_tokens_and_latency(tmp_path: Path) -> None:
    (tmp_path / "t.yml").write_text(CASES)
    with OpenAIServer() as server:
        server.push(*script_replies([{"content": "hi there"}], usage=(120, 30)))
        done = run_cli("run", str(tmp_path / "t.yml"), "-c", "t/answers", "-p", "local-openai", "--live",
                       "--config", str(config(tmp_path, server.api_base)), "--results", str(tmp_path / "r"),
                       env={"TOOLTRIAL_TEST_LOCAL_KEY": "sk-x"})
    assert done.returncode == 0, done.stderr
    assert _lines(done.stdout)[:3] == ["▶ t/answers", "  model request 1 (turn 1): stop, 0 calls, 120+30 tokens, Ns",
                                       "PASS t/answers"]


def test_quiet_prints_only_what_did_not_pass_and_the_summary(tmp_path: Path) -> None:
    (tmp_path / "t.yml").write_text(CASES.replace("response_contains: [hi]", "response_contains: [bye]"))
    done = run_cli("run", str(tmp_path / "t.yml"), "-q", "--results", str(tmp_path / "r"))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[:3] == ["FAIL t/answers", '  response missing "bye"', "1/2 passed"]
    assert [line.split() for line in lines[4:6]] == [["scripted", "·", "default"], ["group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"]]
    assert len(list((tmp_path / "r").glob("*/runs/*.json"))) == 2  # the passing run is recorded, only not printed


@given(name=st.text(), arguments=st.one_of(st.none(), st.dictionaries(st.text(), st.text())), result=st.text(),
       status=st.sampled_from(["executed", "recovered", "invalid", "truncated", "refused"]), is_error=st.booleans())
def test_a_call_is_one_line_without_control_characters_whatever_the_model_sent(
        name: str, arguments: dict[str, str] | None, result: str, status: str, is_error: bool) -> None:
    line = describe(CallDone(name, arguments, status, is_error, result, 0.5))
    assert "\n" not in line and not any(unicodedata.category(c) in ("Cc", "Cs") for c in line)
    assert line.endswith(", 0.50s") and len(line) < 8 * (len(name) + 200)
