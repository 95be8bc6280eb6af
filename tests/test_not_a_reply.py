"""An HTML page sent with status 200 where a reply should be (a proxy's own error page).

It is a ``malformed_response`` attempt with the page's status and content type, retried with the same
request, and never a model reply or a turn. Run through the CLI against the loopback fakes, JSON and
streamed, litellm for real.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.providers.page import title_of
from tests.fake_servers import FakeServer, OllamaServer, OpenAIServer, Reply, ollama_reply, openai_reply
from tests.fake_wire import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    AnthropicServer,
    GeminiServer,
    anthropic_reply,
    anthropic_stream,
    gemini_reply,
    gemini_stream,
    ollama_stream,
    openai_stream,
    text,
    tool_use,
)
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HTML = ("<html><head><title>502 Bad Gateway</title></head>"
        "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>")
PAGE = Reply(HTML, status=200, content_type="text/html")
HI = {"path": "out.txt", "content": "hi"}
WRITE_IN_TWO = """\
- id: write-hi
  turns: [Write hi to out.txt]
  expect:
    files: {out.txt: {equals: hi}}
    max_turns: 2
"""
NOT_A_REPLY = "HTTP 200 text/html, not a reply: 502 Bad Gateway"

Kind = tuple[type[FakeServer], str, Callable[[], Reply], Callable[[], Reply], Callable[[Reply], Reply]]
KINDS: dict[str, Kind] = {
    "openai": (OpenAIServer, "openai/fake", lambda: openai_reply(tool_calls=[("write_file", HI)]),
               lambda: openai_reply("Wrote it."), openai_stream),
    "anthropic": (AnthropicServer, f"anthropic/{ANTHROPIC_MODEL}",
                  lambda: anthropic_reply([tool_use("toolu_1", "write_file", HI)]),
                  lambda: anthropic_reply([text("Wrote it.")]), anthropic_stream),
    "gemini": (GeminiServer, f"gemini/{GEMINI_MODEL}",
               lambda: gemini_reply([{"functionCall": {"name": "write_file", "args": HI}}]),
               lambda: gemini_reply([{"text": "Wrote it."}]), gemini_stream),
    "ollama": (OllamaServer, "ollama_chat/fake", lambda: ollama_reply(tool_calls=[("write_file", HI)]),
               lambda: ollama_reply("Wrote it."), ollama_stream),
}


def _attempts(request: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(a["number"], a["error_kind"], a["status"], a["message"]) for a in request["attempts"]]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_page_with_status_200_is_a_retried_malformed_response(tmp_path: Path, kind: str, streamed: bool) -> None:
    server_class, model, call, done, stream = KINDS[kind]
    served = stream if streamed else (lambda reply: reply)
    with server_class() as server:
        server.push(PAGE, served(call()), served(done()))
        code, err, (run,) = run_case(tmp_path, server, model, case=WRITE_IN_TWO,
                                     stream="stream: true" if streamed else "")
    assert code == 0, err
    # two model turns within max_turns: 2; the page is an attempt of the first, not a turn of its own
    assert (run["status"], run["final_reply"], run["requests"], len(run["model_requests"])) == ("pass", "Wrote it.", 3, 2)
    assert _attempts(run["model_requests"][0]) == [(1, "malformed_response", 200, NOT_A_REPLY), (2, None, None, None)]
    assert run["model_requests"][0]["attempts"][0]["wait_source"] == "backoff"
    assert [r["outcome"] for r in run["model_requests"]] == ["reply", "reply"]
    assert len(server.chats) == 3
    assert server.chats[1].body == server.chats[0].body  # the same request sent again


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
def test_pages_on_every_attempt_end_the_run_as_malformed_response(tmp_path: Path, streamed: bool) -> None:
    with OpenAIServer(fallback=PAGE) as server:
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="stream: true" if streamed else "")
    assert code != 0, err
    assert (run["status"], run["error_kind"], run["requests"]) == ("error", "malformed_response", 3)
    assert run["cause"] == f"fake: malformed_response (HTTP 200) after 3 attempts: {NOT_A_REPLY}"
    (request,) = run["model_requests"]
    assert _attempts(request) == [(n, "malformed_response", 200, NOT_A_REPLY) for n in (1, 2, 3)]
    assert request["outcome"] is None and request["turn"] is None


@pytest.mark.parametrize(("page", "title"), [
    (HTML, "502 Bad Gateway"),
    ("<HTML><TITLE lang=en>\n  Sign in &amp;\n  continue </TITLE>", "Sign in & continue"),
    ("<html><body>Service unavailable</body></html>", "no title"),
    (f"<title>{'x' * 300}</title>", "x" * 200),
])
def test_a_pages_title_is_its_text_joined_and_capped(page: str, title: str) -> None:
    assert title_of(page) == title
