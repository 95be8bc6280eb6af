"""Runs at -j 16 against one loopback OpenAI server that rate-limits, through the CLI in this process:
the suite's runs share the provider's rate limiter (runner.providers.ratelimit), so a 429 pauses them
all for the cool-down it asked for, fewer requests go at once, the requests sent stay bounded, every run
passes once the limit lifts, and the time waited is recorded apart from the runs' durations.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fake_servers import OpenAIServer, Received, Reply, error_reply, openai_reply
from tests.helpers import config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

ONE = """\
- id: hello
  turns: [Say done]
  expect: {response_contains: [done]}
"""

TWO = """\
- id: look
  turns: ["List the files, then say done"]
  expect: {response_contains: [done], trace: {must_include: [list_dir]}}
"""


def _run(tmp_path: Path, server: OpenAIServer, cases: str, retries: str) -> tuple[Any, dict[str, Any], list[dict]]:
    """Run ``cases`` 16 times at -j 16 with alias local-openai (16 at once, ``retries``); (the finished
    process, report.json, the run files)."""
    path = config(tmp_path, openai_base=server.api_base)
    text = path.read_text().replace("retries: {attempts: 3, backoff: 0.05, max_backoff: 0.1}\n",
                                    f"retries: {retries}\n    max_concurrency: 16\n")
    path.write_text(text)
    (tmp_path / "rl.yml").write_text(cases)
    results = tmp_path / "results"
    done = run_cli("run", "rl.yml", "-p", "local-openai", "-j", "16", "--runs", "16", "--sandbox", "none",
                   "--results", str(results), cwd=tmp_path)
    (folder,) = results.iterdir()
    runs = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    return done, json.loads((folder / "report.json").read_text()), runs


class _Crowded:
    """Answers 429 at once (no Retry-After) to a request that finds ``most`` others in flight, else
    ``done`` after 0.4 s; counts the 429s."""

    def __init__(self, most: int) -> None:
        self.most, self.lock = most, threading.Lock()
        self.now = self.refused = 0

    def __call__(self, request: Received) -> Reply:
        with self.lock:
            if self.now >= self.most:
                self.refused += 1
                return error_reply(429, "Rate limit reached: too many requests at once")
            self.now += 1
        time.sleep(0.4)
        with self.lock:
            self.now -= 1
        return openai_reply("done")


def test_a_crowded_provider_gets_fewer_requests_at_once_and_every_run_passes(tmp_path: Path) -> None:
    crowded = _Crowded(4)
    with OpenAIServer(responder=crowded) as server:
        done, _report, runs = _run(tmp_path, server, ONE, "{attempts: 6, backoff: 0.05, max_backoff: 0.4}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["status"] for r in runs] == ["pass"] * 16
    # each overload halves the window (16, 8, 4), so few tries meet a full server: 16 answers and few 429s
    assert len(server.chats) == 16 + crowded.refused
    # without the limiter each run retries on its own: about 43 refused; with it, about 17: the first burst's
    # 12 (16 sent, 4 served), a few while the window halves to 4, one when it grows past 4 again
    assert 1 <= crowded.refused <= 20, crowded.refused
    assert sum(r["requests"] for r in runs) == len(server.chats)
    tries = [a for r in runs for m in r["model_requests"] for a in m["attempts"]]
    assert sum(a["error_kind"] == "rate_limit" for a in tries) == crowded.refused
    assert all(a["wait_source"] == "backoff" for a in tries if a["error_kind"])


HOLD = 0.4  # seconds after the 429 before the other runs get their first reply


def _first_refused(seen: list[tuple[float, bool]], lock: threading.Lock) -> Any:
    """Answers the first request 429 with a 1 s retry-after-ms, holds every other run's first reply until
    HOLD seconds after that (so their next requests come when tooltrial knows of the 429), then
    answers a list_dir call and, once its result came, ``done``; ``seen`` gets (time received, whether
    the request carries a tool result) for each."""
    def respond(request: Received) -> Reply:
        messages = (request.body or {}).get("messages", [])
        second = any(m.get("role") == "tool" for m in messages)
        with lock:
            seen.append((time.monotonic(), second))
            refused_at = seen[0][0]
        if len(seen) == 1:
            return error_reply(429, "slow down", {"retry-after-ms": "1000"})
        if second:
            return openai_reply("done")
        time.sleep(max(0.0, refused_at + HOLD - time.monotonic()))
        return openai_reply(tool_calls=[("list_dir", {})])
    return respond


def test_a_retry_after_pauses_every_run_and_the_wait_is_recorded_apart_from_duration(tmp_path: Path) -> None:
    seen: list[tuple[float, bool]] = []
    with OpenAIServer(responder=_first_refused(seen, threading.Lock())) as server:
        done, report, runs = _run(tmp_path, server, TWO, "{attempts: 3, backoff: 0.05, max_backoff: 0.1}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["status"] for r in runs] == ["pass"] * 16
    assert len(server.chats) == 16 * 2 + 1  # two requests a run, and the one retry of the request refused
    # every run's second request waited out the 1 s cool-down, though its first reply came 0.4 s after the 429
    refused_at = seen[0][0]
    seconds = [round(t - refused_at, 3) for t, second in seen if second]
    assert len(seconds) == 16 and min(seconds) >= 0.99, seconds
    waited = [r for r in runs if r["rate_limited"] > 0]
    assert len(waited) >= 2  # the refused run and every run whose request came in the cool-down
    (refused,) = [r for r in runs if any(a["status"] == 429 for m in r["model_requests"] for a in m["attempts"])]
    first, retry = refused["model_requests"][0]["attempts"]
    assert (first["wait"], first["wait_source"], first["rate_limited"]) == (1.0, "retry-after-ms", 0.0)
    assert retry["rate_limited"] >= 0.95
    assert refused["rate_limited"] == pytest.approx(sum(a["rate_limited"] for m in refused["model_requests"]
                                                        for a in m["attempts"]))
    assert refused["duration"] < 0.95 <= refused["duration"] + refused["rate_limited"]  # the wait is not its time
    assert refused["model_requests"][0]["latency"] < 0.95
    overall = report["overall"]
    assert overall["rate_limited_total"] == pytest.approx(sum(r["rate_limited"] for r in runs))
    assert overall["duration_total"] == pytest.approx(sum(r["duration"] for r in runs))
    note = re.search(r"note: requests waited (\d+\.\d)s in all for the rate limit of local-openai "
                     r"\(not counted in time\)", done.stdout)
    assert note and float(note[1]) == round(overall["rate_limited_total"], 1), done.stdout
