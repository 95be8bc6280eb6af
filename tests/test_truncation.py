"""Replies that are not answers: cut off at the output limit, empty, or a call the provider could not parse.

Each test runs a case through the CLI against a loopback fake of the provider's wire shape, litellm
for real, and asserts on what tooltrial ran (the workspace's files), what it told the model (the
next request's body) and what it recorded (run files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fake_servers import OpenAIServer, Reply, openai_reply
from tests.fake_wire import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    AnthropicServer,
    GeminiServer,
    anthropic_reply,
    gemini_reply,
    openai_stream,
    text,
    tool_use,
)
from tests.helpers import run_cli
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HI = {"path": "out.txt", "content": "hi"}
CUT_OFF = ("not run: your reply was cut off at the output limit (max_tokens), so this call may be incomplete. "
           "Send it again, shorter, or split the work.")
SAY_DONE = """\
- id: say-done
  turns: [Say done]
  expect: {response_contains: done}
"""


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "tool"]


def test_a_call_from_a_reply_cut_off_in_its_arguments_is_not_run_and_the_model_is_told(tmp_path: Path) -> None:
    cut = '{"path": "out.txt", "content": "def f('  # a streamed reply stopped by max_tokens mid-arguments
    with OpenAIServer() as server:
        server.push(openai_stream(openai_reply(tool_calls=[("write_file", cut)], finish_reason="length")),
                    openai_stream(openai_reply(tool_calls=[("write_file", HI)])), openai_stream(openai_reply("Done.")))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="stream: true")
    assert code == 0, err
    assert [(s["status"], s["request"], s["is_error"]) for s in run["steps"]] == [
        ("truncated", 0, True), ("executed", 1, False)]
    assert run["steps"][0]["result"] == CUT_OFF
    second = server.chats[1].body
    assert second["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{}"  # never the cut-off text
    assert _tool_results(second) == [CUT_OFF]
    (call,) = run["model_requests"][0]["tool_calls"]
    assert (call["status"], call["raw_arguments"], call["arguments"]) == ("truncated", cut, None)
    assert [r["outcome"] for r in run["model_requests"]] == ["truncated", "reply", "reply"]


def test_a_call_that_parses_from_a_truncated_anthropic_reply_is_not_run(tmp_path: Path) -> None:
    truncated = anthropic_reply([tool_use("toolu_1", "write_file", HI)], stop_reason="max_tokens")
    with AnthropicServer() as server:
        server.push(truncated, truncated, anthropic_reply([text("Done.")]))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}")
    assert code == 1, err
    assert run["changes"] == {"added": [], "changed": [], "deleted": []}  # write_file never ran
    assert len(server.chats) == 2  # two truncated replies in a row stop the run: the third is never asked for
    assert (run["error_kind"], run["failure"]) == ("truncated", "truncated")
    assert run["cause"] == "2 replies in a row were cut off at the output limit (finish reason max_tokens)"
    assert [s["status"] for s in run["steps"]] == ["truncated", "truncated"]
    assert [(r["finish_reason"], r["native_finish_reason"]) for r in run["model_requests"]] == [
        ("length", "max_tokens")] * 2
    (result,) = [b for m in server.chats[1].body["messages"] if isinstance(m["content"], list)
                 for b in m["content"] if b["type"] == "tool_result"]
    assert CUT_OFF in json.dumps(result)


def test_a_gemini_max_tokens_call_is_not_run_though_litellm_says_tool_calls(tmp_path: Path) -> None:
    call = {"functionCall": {"name": "write_file", "args": HI}}
    with GeminiServer() as server:
        server.push(gemini_reply([call], finish="MAX_TOKENS"), gemini_reply([call]), gemini_reply([{"text": "Done."}]))
        code, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}")
    assert code == 0, err
    first = run["model_requests"][0]
    assert (first["finish_reason"], first["native_finish_reason"], first["outcome"]) == (
        "tool_calls", "MAX_TOKENS", "truncated")
    assert [s["status"] for s in run["steps"]] == ["truncated", "executed"]
    answer = server.chats[1].body["contents"][2]["parts"][0]["function_response"]
    assert CUT_OFF in json.dumps(answer)


NOT_ANSWERS = {
    "malformed": (gemini_reply([], finish="MALFORMED_FUNCTION_CALL"), "MALFORMED_FUNCTION_CALL", "malformed_call"),
    "unexpected": (gemini_reply([], finish="UNEXPECTED_TOOL_CALL"), "UNEXPECTED_TOOL_CALL", "malformed_call"),
    "no-candidates": (Reply({"candidates": [], "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3}}),
                      None, "empty"),
    "no-parts-max-tokens": (Reply({"candidates": [{"index": 0, "content": {"role": "model"}, "finishReason": "MAX_TOKENS"}],
                                   "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3}}),
                            "MAX_TOKENS", "truncated"),
}


@pytest.mark.parametrize("name", list(NOT_ANSWERS))
def test_a_gemini_reply_that_is_no_answer_is_asked_again(tmp_path: Path, name: str) -> None:
    reply, native, outcome = NOT_ANSWERS[name]
    with GeminiServer() as server:
        server.push(reply, gemini_reply([{"text": "done"}]))
        code, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}", case=SAY_DONE)
    assert code == 0, err
    assert (run["status"], run["requests"], run["final_reply"]) == ("pass", 2, "done")
    first = run["model_requests"][0]
    assert (first["native_finish_reason"], first["outcome"], first["text"]) == (native, outcome, None)
    assert server.chats[1].body["contents"] == server.chats[0].body["contents"]  # asked again, nothing added


@pytest.mark.parametrize(("name", "code", "kind", "failure", "asked"), [
    ("malformed", 1, "malformed_call", "malformed_call", 3),
    ("no-candidates", 6, "empty_reply", "run_error", 3),
    ("no-parts-max-tokens", 1, "truncated", "truncated", 2),
])
def test_a_reply_that_stays_no_answer_stops_the_run_with_its_own_reason(
        tmp_path: Path, name: str, code: int, kind: str, failure: str, asked: int) -> None:
    with GeminiServer(fallback=NOT_ANSWERS[name][0]) as server:
        got, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}", case=SAY_DONE)
    assert got == code, err
    assert len(server.chats) == asked
    assert (run["status"], run["error_kind"], run["failure"], run["requests"]) == ("error", kind, failure, asked)


def test_openai_no_choices_is_an_empty_reply_then_stops_as_empty_reply(tmp_path: Path) -> None:
    nothing = Reply({"id": "x", "object": "chat.completion", "created": 1, "model": "fake", "choices": []})
    with OpenAIServer() as server:
        server.push(nothing, openai_reply("done"))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", case=SAY_DONE)
        assert code == 0, err
        assert [r["outcome"] for r in run["model_requests"]] == ["empty", "reply"]
    with OpenAIServer(fallback=nothing) as server:
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", case=SAY_DONE)
    assert code == 6, err
    assert (run["error_kind"], run["cause"]) == (
        "empty_reply", "3 replies in a row held no text and no tool call (finish reason no choices)")


CUT_SCRIPT = """\
- id: cut
  turns: [Read a.txt]
  files: {a.txt: hello}
  expect: {trace: {must_include: [bash]}}
  script:
%s    - tool_calls: [{name: read_file, arguments: {path: a.txt}}, {name: grep, arguments: {pattern: x}}]
      finish_reason: length
    - content: done
"""


@pytest.mark.parametrize("before, line", [
    ("", "never called bash (2 calls cut off, none ran)"),
    ("    - tool_calls: [{name: nosuch, arguments: {}}]\n", "never called bash (1 call refused, 2 calls cut off, none ran)"),
    ("    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]\n",
     "never called bash (calls: read_file; 2 calls cut off)"),
])
def test_the_run_line_counts_the_calls_cut_off_apart_from_those_that_ran(tmp_path: Path, before: str, line: str) -> None:
    (tmp_path / "cut.yml").write_text(CUT_SCRIPT % before)
    done = run_cli("run", str(tmp_path / "cut.yml"), "--results", str(tmp_path / "r"))
    assert done.returncode == 1
    assert done.stdout.splitlines()[:2] == ["FAIL cut/cut", f"  {line}"]
