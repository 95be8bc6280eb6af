"""The conversation as sent, in the run file: the run's messages once each, the tools offered once, and per
model request the range it carried. Over the loopback OpenAI server the messages each request carried, rebuilt
from the run file, are the messages the server received, streamed or not; an external agent's are those it sent;
Anthropic Messages requests keep their system first; a long text is kept as its head and tail with the cut
recorded."""

from __future__ import annotations

import http.client
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.endpoint.server import Endpoint
from runner.providers.limits import TurnLimited
from runner.providers.scripted import ScriptedProvider
from runner.run.transcript import TEXT_LIMIT, Cut, bounded
from tests.fake_servers import OpenAIServer, Reply, openai_reply
from tests.fake_wire import openai_stream
from tests.helpers import ROOT, run_cli
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")

TWO_TURNS = """\
- id: notes
  system: "You keep notes in {{ case.id }}."
  turns: [Write hi to a.txt, "Now read it back"]
"""


def _carried(run: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """Each model request's messages, rebuilt from the run file."""
    return [run["messages"][start:end] for start, end in (r["messages"] for r in run["model_requests"])]


def _replies() -> list[Reply]:
    return [openai_reply("Writing.", tool_calls=[("write_file", {"path": "a.txt", "content": "hi"})]),
            openai_reply("Wrote a.txt."),
            openai_reply(None, tool_calls=[("read_file", {"path": "a.txt"}), ("list_dir", {"path": "."})]),
            openai_reply("It says hi.")]


@pytest.mark.parametrize("streamed", [False, True])
def test_each_requests_messages_rebuilt_from_the_run_file_are_those_the_server_got(tmp_path: Path,
                                                                                   streamed: bool) -> None:
    with OpenAIServer() as server:
        server.push(*[openai_stream(r) if streamed else r for r in _replies()])
        code, err, (run,) = run_case(tmp_path, server, "openai/gpt-4o-mini", TWO_TURNS,
                                     stream="stream: true" if streamed else "")
        got = [chat.body for chat in server.chats]
    assert code == 0, err
    assert json.dumps(_carried(run)) == json.dumps([body["messages"] for body in got])
    assert [r["messages"] for r in run["model_requests"]] == [[0, 2], [0, 4], [0, 6], [0, 9]]
    assert run["tools"] == got[0]["tools"] == got[3]["tools"]
    assert [t["function"]["name"] for t in run["tools"]] == ["read_file", "write_file", "edit_file", "list_dir",
                                                             "glob", "grep", "bash"]
    assert [(m["role"], m.get("content")) for m in run["messages"]] == [
        ("system", "You keep notes in notes."), ("user", "Write hi to a.txt"), ("assistant", "Writing."),
        ("tool", "wrote 2 bytes to a.txt"), ("assistant", "Wrote a.txt."), ("user", "Now read it back"),
        ("assistant", None), ("tool", "     1\thi"), ("tool", "a.txt"), ("assistant", "It says hi.")]
    assert run["message_cuts"] == []  # the final reply is the last message: no request carried it


def test_an_external_agents_requests_are_recorded_as_it_sent_them_the_history_kept_once(tmp_path: Path) -> None:
    log = tmp_path / "sent.jsonl"
    command = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'openai_agent.py'}"
    (tmp_path / "tooltrial.yml").write_text(json.dumps({"agents": {"sdk": {
        "command": command, "env": {"AGENT_STREAM": "alternate", "AGENT_LOG": str(log)}}}}))
    (tmp_path / "sdk.yml").write_text("""\
- id: greet
  agent: sdk
  files: {name.txt: Ada}
  turns: [Greet the person named in name.txt in hello.txt., Say goodbye.]
  script:
    - tool_calls: [{name: read_file, arguments: {path: name.txt}}]
    - tool_calls: [{name: write_file, arguments: {path: hello.txt, content: "Hello, Ada!"}}]
    - content: I greeted Ada.
    - content: Goodbye.
""")
    results = tmp_path / "results"
    done = run_cli("run", str(tmp_path / "sdk.yml"), "--config", str(tmp_path / "tooltrial.yml"),
                   "-p", "scripted", "--sandbox", "none", "--results", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads(next(results.glob("*/runs/*.json")).read_text())
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    assert _carried(run) == [request["messages"] for request in sent]
    assert [w["messages"] for w in run["agent"]["wire"]] == [[0, 2], [0, 4], [0, 6], [6, 8]]
    assert len(run["messages"]) == 8  # the second invocation starts a conversation of its own
    assert run["tools"] == sent[0]["tools"]


def test_a_text_over_the_limit_keeps_its_head_and_tail_and_says_what_was_cut() -> None:
    long = "a" * TEXT_LIMIT + "b" * 10
    kept, cuts = bounded([{"role": "tool", "content": long}, {"role": "user", "content": "short"},
                          {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": long}]}])
    cut = "a" * (TEXT_LIMIT // 2) + "\n[... 10 characters left out ...]\n" + "a" * (TEXT_LIMIT // 2 - 10) + "b" * 10
    assert kept == [{"role": "tool", "content": cut}, {"role": "user", "content": "short"},
                    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": cut}]}]
    assert cuts == [Cut(0, None, TEXT_LIMIT + 10, 10), Cut(2, 1, TEXT_LIMIT + 10, 10)]


def _post(endpoint: Endpoint, path: str, body: dict[str, Any]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=10)
    connection.request("POST", path, json.dumps(body), {"content-type": "application/json", "x-api-key": endpoint.token})
    response = connection.getresponse()
    response.read()
    return response.status


def test_anthropic_requests_keep_their_system_first_and_a_history_that_does_not_continue_starts_anew() -> None:
    provider = TurnLimited(ScriptedProvider([{"content": "ok"}] * 3), 2)
    tools = [{"name": "look", "description": "Look.", "input_schema": {"type": "object"}}]
    first = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
    with Endpoint(provider) as endpoint:
        statuses = [_post(endpoint, "/v1/messages", {"model": "m", "max_tokens": 9, "system": "Be brief.",
                                                      "messages": messages, "tools": tools})
                    for messages in (first, second, [{"role": "user", "content": "again"}])]
    system = {"role": "system", "content": "Be brief."}
    assert statuses == [200, 200, 400]  # the third passes the turn limit: refused before it is sent
    assert endpoint.transcript.messages == [system, *second, system, {"role": "user", "content": "again"}]
    assert [e.messages for e in endpoint.exchanges] == [(0, 2), (0, 4), (4, 6)]
    assert endpoint.transcript.spans == [(0, 2), (0, 4)]  # the requests that went to the model
    assert endpoint.transcript.tools == tools
