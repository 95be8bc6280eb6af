"""The per-request record: what each model request got back, and which request each traced call came from.

A case runs through the CLI against a loopback OpenAI fake (JSON and SSE), litellm for real; the
assertions read the run file and report.json that tooltrial wrote.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.providers.textcalls import find_text_calls
from tests.fake_servers import OpenAIServer, Reply, openai_reply
from tests.fake_wire import GEMINI_MODEL, GeminiServer, gemini_reply, openai_stream
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HI = {"path": "out.txt", "content": "hi"}
TWO_TURNS = """\
- id: two-turns
  turns: [Write hi to out.txt, Now say done]
  expect:
    files: {out.txt: {equals: hi}}
"""


def _replies() -> list[Reply]:
    """Text, reasoning and two parallel calls; then one call; then the first turn's answer; then the second's."""
    first = openai_reply("Let me look.", [("list_dir", {}), ("read_file", {"path": "missing.txt"})],
                         ids=["call_a", "call_b"])
    first.body["choices"][0]["message"]["reasoning_content"] = "I should list first."
    return [first, openai_reply(tool_calls=[("write_file", HI)], ids=["call_c"]), openai_reply("Wrote it."),
            openai_reply("done")]


def _streamed(reply: Reply) -> Reply:
    """``reply`` as SSE, its reasoning (which tests.fake_wire.openai_stream leaves out) as a delta of its own."""
    stream = openai_stream(reply)
    reasoning = reply.body["choices"][0]["message"].get("reasoning_content")
    if reasoning is None or stream.chunks is None:
        return stream
    head = json.loads(stream.chunks[0].removeprefix("data: "))
    head["choices"][0]["delta"] = {"reasoning_content": reasoning}
    return dataclasses.replace(stream, chunks=(stream.chunks[0], f"data: {json.dumps(head)}\n\n", *stream.chunks[1:]))


@pytest.mark.parametrize("streamed", [False, True])
def test_each_request_keeps_its_reply_and_each_call_names_its_request(tmp_path: Path, streamed: bool) -> None:
    with OpenAIServer() as server:
        server.push(*(_streamed(r) if streamed else r for r in _replies()))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", case=TWO_TURNS,
                                     stream="stream: true" if streamed else "")
    assert code == 0, err
    requests = run["model_requests"]
    assert [(r["index"], r["turn"], r["outcome"], r["text"]) for r in requests] == [
        (0, 0, "reply", "Let me look."), (1, 0, "reply", None), (2, 0, "reply", "Wrote it."), (3, 1, "reply", "done")]
    assert [r["reasoning"] for r in requests] == ["I should list first.", None, None, None]
    assert run["final_reply"] == "done"  # the reasoning is never the reply
    assert [(c["id"], c["name"], c["status"]) for r in requests for c in r["tool_calls"]] == [
        ("call_a", "list_dir", "executed"), ("call_b", "read_file", "executed"), ("call_c", "write_file", "executed")]
    assert requests[1]["tool_calls"][0]["arguments"] == HI
    # two parallel calls share their request; the next call, in the next reply, does not
    assert [(s["call_id"], s["request"], s["turn"]) for s in run["steps"]] == [
        ("call_a", 0, 0), ("call_b", 0, 0), ("call_c", 1, 0)]
    (results,) = (tmp_path / "try0" / "results").iterdir()
    (reported,) = json.loads((results / "report.json").read_text(encoding="utf-8"))["runs"]
    assert [(t["call_id"], t["request"], t["status"]) for t in reported["trace"]] == [
        ("call_a", 0, "executed"), ("call_b", 0, "executed"), ("call_c", 1, "executed")]
    assert reported["model_requests"][0]["tool_calls"][1]["id"] == "call_b"


TAGGED = '<tool_call>{"name": "write_file", "arguments": {"path": "out.txt", "content": "hi"}}</tool_call>'


def test_calls_written_as_text_are_recorded_never_run_and_explain_the_failure(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply(TAGGED))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 1, err
    assert (run["status"], run["failure"], run["steps"]) == ("fail", "calls_as_text", [])
    assert run["changes"] == {"added": [], "changed": [], "deleted": []}
    assert run["model_requests"][0]["text_calls"] == [{"name": "write_file", "arguments": HI}]


@pytest.mark.parametrize(("text", "found"), [
    (TAGGED, [("write_file", HI)]),
    (('I will.\n<tool_call>\n{"name": "list_dir", "arguments": "{}"}\n</tool_call>\n<tool_call>{"name": "nope", '
      '"arguments": {}}</tool_call>'), [("list_dir", {})]),  # a tool not offered is no call
    ('<function=read_file>{"path": "a.py"}</function>', [("read_file", {"path": "a.py"})]),
    ('```json\n{"name": "bash", "parameters": {"command": "ls"}}\n```', [("bash", {"command": "ls"})]),
    ('[{"name": "bash", "arguments": {"command": "ls"}}, {"name": "list_dir", "arguments": {"path": "."}}]',
     [("bash", {"command": "ls"}), ("list_dir", {"path": "."})]),
    ('{"name": "bash"}', []),  # no arguments: an object that happens to have a name
    ('Use {"name": "bash", "arguments": {}} like this.', []),  # JSON inside prose is an example, not a call
    ('<tool_call>{"name": "bash", "arguments": {"a": {"b": [1, {"c": "}"}]}}}</tool_call>',
     [("bash", {"a": {"b": [1, {"c": "}"}]}})]),
    ("<tool_call>{not json</tool_call>", []),
    # vLLM's shape, written in the content by a server with no tool parser
    ('{"type": "function", "function": {"name": "read_file", "parameters": {"path": "a.py"}}}',
     [("read_file", {"path": "a.py"})]),
    ('<tool_call>{"type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}</tool_call>',
     [("bash", {"command": "ls"})]),
])
def test_text_call_forms(text: str, found: list[tuple[str, Any]]) -> None:
    calls = find_text_calls(text, ["write_file", "list_dir", "read_file", "bash"])
    assert [(c.name, c.arguments) for c in calls] == found
    assert [c.id for c in calls] == [f"text_{n}" for n in range(1, len(found) + 1)]


@given(st.text(alphabet=st.sampled_from('<>/{}[]"\\:,=`\n tool_callfunctionamesrgb0123'), max_size=300))
@settings(max_examples=300, deadline=None)
def test_finding_text_calls_never_raises(text: str) -> None:
    for call in find_text_calls(text, ["bash", "b"]):
        assert call.name in {"bash", "b"} and (call.arguments is None) == (call.error is not None)


def test_a_long_gemini_call_id_is_kept_whole_in_the_record_and_shown_nowhere_in_ci_output(tmp_path: Path) -> None:
    signature = "CiQB" + "s" * 400  # litellm folds Gemini's thought signature into the call id
    junit = tmp_path / "junit.xml"
    with GeminiServer() as server:
        server.push(gemini_reply([{"functionCall": {"name": "list_dir", "args": {}}, "thoughtSignature": signature}]),
                    gemini_reply([{"text": "Nothing written."}]))
        code, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}", flags=["--junit", str(junit)])
    assert code == 1, err  # out.txt was never written: the failure is printed and in the JUnit file
    call_id = run["steps"][0]["call_id"]
    assert call_id.endswith("__thought__" + signature) and len(call_id) > 400
    (results,) = (tmp_path / "try0" / "results").iterdir()
    (reported,) = json.loads((results / "report.json").read_text(encoding="utf-8"))["runs"]
    assert reported["trace"][0]["call_id"] == reported["model_requests"][0]["tool_calls"][0]["id"] == call_id
    assert signature not in junit.read_text(encoding="utf-8") and signature not in err


def test_calls_written_as_text_run_when_the_alias_recovers_them(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply(TAGGED), openai_reply("Done."))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="recover_text_calls: true")
    assert code == 0, err
    assert [(s["call_id"], s["status"], s["request"], s["result"]) for s in run["steps"]] == [
        ("text_0_1", "recovered", 0, "wrote 2 bytes to out.txt")]
    second = server.chats[1].body["messages"]
    assert second[-2] == {"role": "assistant", "content": TAGGED}  # as the model wrote it, no invented tool_calls
    assert second[-1] == {"role": "user", "content": "Results of the tool calls in your last message:\n\n"
                                                     "write_file: wrote 2 bytes to out.txt"}
    assert (run["status"], run["failure"]) == ("pass", None)
