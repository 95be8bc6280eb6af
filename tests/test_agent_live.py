"""An external agent against a live litellm provider (a fake OpenAI-compatible server): what the agent
sends in Anthropic's format reaches the provider as chat messages with the agent's own tools, the
provider's usage is the run's, and the provider's failure goes back to the agent with its status and
ends the run as an infrastructure error, as with the built-in loop."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fake_servers import OpenAIServer, error_reply, openai_reply
from tests.helpers import ROOT, config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

CASE = """\
- id: note
  agent: msg
  turns: [Write ok to note.txt.]
  expect:
    files: {note.txt: {equals: ok}}
"""


def _run(tmp_path: Path, server: OpenAIServer) -> tuple[int, str, dict]:
    agent = {"command": f"{sys.executable} {ROOT / 'tests' / 'agents' / 'messages_agent.py'}", "input": "stdin"}
    path = config(tmp_path, openai_base=server.api_base, extra="agents: " + json.dumps({"msg": agent}) + "\n")
    (tmp_path / "note.yml").write_text(CASE)
    results = tmp_path / "results"
    done = run_cli("run", str(tmp_path / "note.yml"), "--config", str(path), "-p", "local-openai", "--sandbox", "none",
                   "--results", str(results), env={"TOOLTRIAL_TEST_LOCAL_KEY": "k"})
    return done.returncode, done.stdout + done.stderr, json.loads(next(results.glob("*/runs/*.json")).read_text())


def test_the_agents_requests_reach_the_live_provider_as_chat_with_its_own_tools(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("write_file", {"path": "note.txt", "content": "ok"})], usage=(20, 4)),
                    openai_reply("Wrote it.", usage=(30, 2)))
        code, output, run = _run(tmp_path, server)
        chats = server.chats
    assert (code, run["status"]) == (0, "pass"), output
    assert (run["tokens"]["prompt"], run["tokens"]["completion"], run["tokens"]["total"]) == (50, 6, 56)
    assert [(s["name"], s["result"]) for s in run["steps"]] == [("write_file", "wrote note.txt")]
    first, second = (c.body for c in chats)
    assert [t["function"]["name"] for t in first["tools"]] == ["read_file", "write_file"]
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["messages"][0]["content"] == "Be brief."
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_0", "content": "wrote note.txt"}


def test_a_provider_failure_reaches_the_agent_with_its_status_and_is_the_infrastructures(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(error_reply(401, "bad key for the fake"))
        code, output, run = _run(tmp_path, server)
    assert (code, run["status"], run["error_kind"]) == (6, "error", "auth"), output
    assert [(w["status"], w["api"]) for w in run["agent"]["wire"]] == [(401, "messages")]
    assert run["commands"][0]["stderr"].startswith("model error 401: ")
    assert run["failure"] == "run_error"
