"""Call shapes real providers send that tooltrial repairs, end to end over the loopback OpenAI fake: what
the run records and what goes back to the provider on the next request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_servers import OpenAIServer, openai_reply
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HI = {"path": "out.txt", "content": "hi"}


def test_null_double_encoded_and_repeated_calls(tmp_path: Path) -> None:
    first = openai_reply("Working.", [("list_dir", {}), ("write_file", HI), ("write_file", HI)])
    calls = first.body["choices"][0]["message"]["tool_calls"]
    calls[0]["function"]["arguments"] = "null"
    calls[1]["function"]["arguments"] = json.dumps(json.dumps(HI))  # a JSON string holding the object
    calls[2] = dict(calls[1])  # the same call again, id and all
    with OpenAIServer() as server:
        server.push(first, openai_reply("Wrote out.txt."))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    assert [(s["name"], s["arguments"], s["status"], s["repaired"]) for s in run["steps"]] == [
        ("list_dir", {}, "executed", "null"), ("write_file", HI, "executed", "double_encoded")]
    echoed = server.chats[1].body["messages"]
    assert [(c["id"], c["function"]["arguments"]) for c in echoed[2]["tool_calls"]] == [
        (calls[0]["id"], "{}"), (calls[1]["id"], json.dumps(HI))]
    assert [(m["role"], m.get("tool_call_id")) for m in echoed[3:]] == [
        ("tool", calls[0]["id"]), ("tool", calls[1]["id"])]


@pytest.mark.parametrize("unwrap", [True, False])
def test_a_call_wrapped_in_a_nameless_call_is_unwrapped_only_when_the_alias_says_so(tmp_path: Path,
                                                                                     unwrap: bool) -> None:
    first = openai_reply("", [("write_file", HI)])
    (call,) = first.body["choices"][0]["message"]["tool_calls"]
    call["function"] = {"name": "", "arguments": json.dumps({"name": "write_file", "arguments": HI})}
    with OpenAIServer() as server:
        server.push(first, openai_reply("Wrote out.txt."))
        _, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="unwrap_calls: true" if unwrap else "")
    (step,) = run["steps"]
    if unwrap:
        assert (step["name"], step["arguments"], step["status"], step["repaired"]) == (
            "write_file", HI, "executed", "unwrapped"), err
        assert server.chats[1].body["messages"][2]["tool_calls"] == [
            {"id": call["id"], "type": "function", "function": {"name": "write_file", "arguments": json.dumps(HI)}}]
        assert run["status"] == "pass"
    else:  # as sent: a call of no tool, refused
        assert (step["name"], step["status"], step["repaired"]) == ("", "refused", None)
