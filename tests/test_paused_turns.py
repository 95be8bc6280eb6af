"""A turn the provider paused (Anthropic's ``stop_reason: "pause_turn"``): not a reply, continued.

The paused assistant content goes back as it came and the provider is asked again; each part is a
model request of its own on the record, and the turn's reply is the continuation. Run through the CLI
against the Anthropic fake, JSON and streamed, litellm for real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.run.agent import PAUSE_RETRIES
from tests.fake_servers import Reply
from tests.fake_wire import ANTHROPIC_MODEL, AnthropicServer, anthropic_reply, anthropic_stream, text
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

FIND = """\
- id: find
  turns: [Find the release date]
  expect: {response_contains: March}
"""
SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "release date"}}
PAUSED = [text("Searching the web."), SEARCH]


def _served(reply: Reply, streamed: bool) -> Reply:
    return anthropic_stream(reply) if streamed else reply


def _outcomes(run: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["index"], r["turn"], r["outcome"], r["finish_reason"], r["native_finish_reason"], r["text"])
            for r in run["model_requests"]]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
def test_a_paused_turn_is_sent_back_as_it_came_and_continued(tmp_path: Path, streamed: bool) -> None:
    with AnthropicServer() as server:
        server.push(_served(anthropic_reply(PAUSED, stop_reason="pause_turn"), streamed),
                    _served(anthropic_reply([text("It came out in March.")]), streamed))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", case=FIND,
                                     stream="stream: true" if streamed else "")
    assert code == 0, err
    assert (run["status"], run["final_reply"], run["requests"]) == ("pass", "It came out in March.", 2)
    assert _outcomes(run) == [(0, 0, "paused", "length", "pause_turn", "Searching the web."),
                              (1, 0, "reply", "stop", "end_turn", "It came out in March.")]
    assert len(server.chats) == 2
    assert server.chats[1].body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Find the release date"}]},
        {"role": "assistant", "content": PAUSED},  # the paused content as it came, the last message
    ]


def test_a_paused_reply_of_server_work_alone_goes_back_too(tmp_path: Path) -> None:
    """A paused reply with no text (only the server's tool use) is still sent back, not dropped."""
    with AnthropicServer() as server:
        server.push(anthropic_reply([SEARCH], stop_reason="pause_turn"), anthropic_reply([text("March.")]))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", case=FIND)
    assert code == 0, err
    assert _outcomes(run) == [(0, 0, "paused", "length", "pause_turn", None), (1, 0, "reply", "stop", "end_turn", "March.")]
    assert server.chats[1].body["messages"][1:] == [{"role": "assistant", "content": [SEARCH]}]


def test_a_turn_paused_again_and_again_stops_the_run(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        server.push(*[anthropic_reply(PAUSED, stop_reason="pause_turn") for _ in range(PAUSE_RETRIES + 1)])
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", case=FIND)
    assert code == 1, err
    assert (run["status"], run["requests"], run["final_reply"]) == ("error", 4, "")
    assert (run["error_kind"], run["failure"]) == ("truncated", "truncated")
    assert run["cause"] == "4 replies in a row were paused by the provider (pause_turn) and never finished"
    assert [r["outcome"] for r in run["model_requests"]] == ["paused"] * 4
    # each continuation ends in the paused parts so far (litellm joins them into one assistant message)
    assert server.chats[1].body["messages"][1:] == [{"role": "assistant", "content": PAUSED}]
    assert [[m["role"] for m in chat.body["messages"]] for chat in server.chats] == [["user"]] + [["user", "assistant"]] * 3
    assert [sum(b["type"] == "text" for b in chat.body["messages"][-1]["content"]) for chat in server.chats[1:]] == [1, 2, 3]
