"""An agent program built on the official ``openai`` SDK (tests/agents/openai_agent.py), unchanged, under
test through the endpoint: the SDK reads the JSON replies and the streamed ones (every other request
streams), and its own tools' calls and results are the trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli

CASE = """\
- id: greet
  agent: {agent}
  files: {{name.txt: Ada}}
  turns: [Greet the person named in name.txt in hello.txt.]
  expect:
    files: {{hello.txt: {{equals: "Hello, Ada!"}}}}
    response_contains: [Ada]
    trace: {{calls: [{{name: read_file, args: {{path: name.txt}}}}, {{name: write_file, args: {{path: hello.txt}}}}]}}
  script:
    - tool_calls: [{{name: read_file, arguments: {{path: name.txt}}}}]
    - tool_calls: [{{name: write_file, arguments: {{path: hello.txt, content: "Hello, Ada!"}}}}]
    - content: I greeted Ada in hello.txt.
      usage: {{prompt_tokens: 30, completion_tokens: 8, total_tokens: 38}}
"""


@pytest.mark.slow
def test_an_openai_sdk_agent_reading_json_and_streamed_replies_passes_with_its_trace(tmp_path: Path) -> None:
    command = f"{sys.executable} {ROOT / 'tests' / 'agents' / 'openai_agent.py'}"
    (tmp_path / "tooltrial.yml").write_text(json.dumps({"agents": {"sdk": {"command": command,
                                                                           "env": {"AGENT_STREAM": "alternate"}}}}))
    (tmp_path / "sdk.yml").write_text(CASE.format(agent="sdk"))
    results = tmp_path / "results"
    done = run_cli("run", str(tmp_path / "sdk.yml"), "--config", str(tmp_path / "tooltrial.yml"),
                   "-p", "scripted", "--sandbox", "none", "--results", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads(next(results.glob("*/runs/*.json")).read_text())
    assert [(s["name"], s["arguments"], s["result"], s["status"]) for s in run["steps"]] == [
        ("read_file", {"path": "name.txt"}, "Ada", "executed"),
        ("write_file", {"path": "hello.txt", "content": "Hello, Ada!"}, "wrote 11 characters to hello.txt", "executed")]
    assert (run["final_reply"], run["tokens"]["total"], run["tokens"]["unreported"]) == ("I greeted Ada in hello.txt.", 38, 2)
    assert run["trajectory_match"]["exact"] is True
    assert [(c["check"], c["passed"]) for c in run["checks"]] == [("files", True), ("response_contains", True),
                                                                   ("trace.calls", True)]
    assert [r["streamed"] for r in run["model_requests"]] == [False, False, False]  # the provider's, not the agent's
    assert [(w["api"], w["stream"], w["status"]) for w in run["agent"]["wire"]] == [
        ("chat", False, 200), ("chat", True, 200), ("chat", False, 200)]
