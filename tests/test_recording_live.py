"""--record against a live provider (litellm over HTTP to a loopback fake OpenAI server), replayed offline.

The whole CLI runs twice in this process: one run talks to the server and records,
a second replays the recording with ``-p scripted`` and no server at all. Both
JSON reports must agree on everything but timings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

CASES = """\
- id: count-and-report
  description: Count the notes, fail once on the way, then write the count.
  files:
    notes/a.md: "one\\n"
    notes/b.md: "two\\n"
  turns:
    - How many notes are in notes/?
    - Write that number to count.txt.
  expect:
    files:
      count.txt: {equals: "2\\n"}
    response_contains: [count.txt]
    trace:
      expected: [list_dir, read_file, read_file, bash, write_file]
      must_include: [write_file]
"""

# What the "live" model answers, request by request: text beside calls, two calls in one reply,
# arguments that are not valid JSON, a failing command, and a truncated last reply.
REPLIES = [
    openai_reply("Let me look.", [("list_dir", {"path": "notes"})], usage=(200, 20)),
    openai_reply(None, [("read_file", {"path": "notes/a.md"}), ("read_file", '{"path": notes/b.md')], usage=(260, 30)),
    openai_reply(None, [("bash", {"command": "ls notes | wc -l && exit 2"})], usage=(300, 15)),
    openai_reply("There are 2 notes.", usage=(320, 8)),
    openai_reply(None, [("write_file", {"path": "count.txt", "content": "2\n"})], usage=(350, 25)),
    openai_reply("Wrote the count to count.txt.", usage=(380, 9), finish_reason="length"),
]


def comparable(run: dict[str, Any]) -> dict[str, Any]:
    """A run of the JSON report without what differs between a live run and its replay: timings, the provider,
    the tries it took (a scripted reply takes none), call ids (the scripted provider makes its own) and the
    provider's native finish reason (a script has none)."""
    run = {k: v for k, v in run.items() if k not in ("provider", "duration", "latency", "queued", "workspace", "started")}
    run["trace"] = [{k: v for k, v in step.items() if k not in ("duration", "call_id", "started")} for step in run["trace"]]
    run["model_requests"] = [{**{k: v for k, v in r.items()
                                 if k not in ("latency", "native_finish_reason", "attempts", "started")},
                              "tool_calls": [{k: v for k, v in c.items() if k != "id"} for c in r["tool_calls"]]}
                             for r in run["model_requests"]]
    return run


def test_a_live_run_recorded_then_replayed_offline_is_the_same_run(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases/notes.yml").write_text(CASES, encoding="utf-8")
    with OpenAIServer() as server:
        server.push(*REPLIES)
        (tmp_path / "tooltrial.yml").write_text(
            f"providers:\n  live:\n    model: openai/fake\n    api_base: {server.api_base}\n"
            "    retries: {attempts: 1}\n", encoding="utf-8")
        live = run_cli("run", "cases", "-p", "live", "--record", "recorded", "--output", "json", cwd=tmp_path)
    assert live.returncode == 0, live.stderr
    assert live.stderr.splitlines()[-1] == (
        "recorded 1 run in recorded/cases; replay it offline with: tooltrial run recorded/cases -p scripted"
    )
    replay = run_cli("run", "recorded/cases", "-p", "scripted", "--output", "json", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr

    (live_run,) = json.loads(live.stdout)["runs"]
    (replayed_run,) = json.loads(replay.stdout)["runs"]
    assert [(s["name"], s["is_error"]) for s in live_run["trace"]] == [
        ("list_dir", False), ("read_file", False), ("read_file", True), ("bash", False), ("write_file", False)
    ]
    assert live_run["tokens"] == {"prompt": 1810, "completion": 107, "total": 1917, "reasoning": None, "cached": None, "cache_write": None, "unreported": 0}
    assert live_run["model_requests"][-1]["finish_reason"] == "length"
    assert (live_run["provider"], replayed_run["provider"]) == ("live", "scripted")
    assert comparable(replayed_run) == comparable(live_run)
