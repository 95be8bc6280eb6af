"""Provider failures through the real CLI, over loopback fakes of the OpenAI, Anthropic and Gemini wires:
each status and body shape is recorded as its error kind, permanent ones are sent once, transient ones
retried (the POSTs the server saw are counted), every try is on the record with its wait, and the wait
follows what the provider asked for (capped by ``max_retry_after``, so nothing sleeps for seconds).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.providers.errors import classify, retry_hint
from runner.providers.litellm import LiteLLMProvider, ModelSettings
from runner.providers.retry import RetryPolicy
from tests.fake_servers import FakeServer, OllamaServer, OpenAIServer, Received, Reply, error_reply, openai_reply
from tests.fake_wire import ANTHROPIC_MODEL, GEMINI_MODEL, AnthropicServer, GeminiServer
from tests.helpers import cli_output

pytestmark = pytest.mark.usefixtures("litellm_loaded")

ROW = regex.compile(r"ROW-(\w+)")
CAP = 0.05  # max_retry_after of the fakes' aliases: the longest any test waits between tries


def _openai_error(status: int, message: str, kind: str = "server_error", code: Any = None,
                  headers: dict[str, str] | None = None) -> Reply:
    return Reply({"error": {"message": message, "type": kind, "code": code}}, status=status, headers=headers or {})


def _anthropic_error(status: int, kind: str, message: str) -> Reply:
    return Reply({"type": "error", "error": {"type": kind, "message": message}}, status=status)


def _gemini_error(status: int, state: str, message: str, details: list[dict[str, Any]] | None = None) -> Reply:
    return Reply({"error": {"code": status, "message": message, "status": state, "details": details or []}},
                 status=status)


def _quota(quota_id: str, delay: str) -> list[dict[str, Any]]:
    return [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaId": quota_id}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]


GEMINI_QUOTA = "You exceeded your current quota, please check your plan and billing details."
# row: (reply, error kind, POSTs the server sees with attempts: 3)
OPENAI = {
    "ratelimit": (_openai_error(429, "Rate limit reached for gpt-x in organization org-1 on requests per min (RPM)",
                                "requests", "rate_limit_exceeded"), "rate_limit", 3),
    "quota": (_openai_error(429, "You exceeded your current quota, please check your plan and billing details.",
                            "insufficient_quota", "insufficient_quota"), "quota_exhausted", 1),
    "context": (_openai_error(400, "This model's maximum context length is 8192 tokens. However, your messages "
                              "resulted in 9000 tokens.", "invalid_request_error", "context_length_exceeded"),
                "context_overflow", 1),
    "auth": (_openai_error(401, "Incorrect API key provided: sk-x.", "invalid_request_error", "invalid_api_key"),
             "auth", 1),
    "toolarge": (_openai_error(413, "Request too large for gpt-x: limit 30000, requested 90000.",
                               "invalid_request_error"), "bad_request", 1),
    # a 429 for a request over the per-minute token limit on its own can never succeed: the context overflows
    "overlimit": (_openai_error(429, "Request too large for gpt-x in organization org-1 on tokens per min (TPM): "
                                "Limit 30000, Requested 91234. The input or output tokens must be reduced in order "
                                "to run successfully.", "tokens", "rate_limit_exceeded"), "context_overflow", 1),
    "noretry": (_openai_error(429, "Rate limit reached for gpt-x.", "requests", "rate_limit_exceeded",
                              {"x-should-retry": "false"}), "bad_request", 1),
    "retryasked": (_openai_error(400, "Try this one again.", "invalid_request_error", None,
                                 {"x-should-retry": "true"}), "bad_request", 3),
    "internal": (error_reply(500, "upstream exploded"), "server_error", 3),
    "unavailable": (error_reply(503, "model is loading"), "server_error", 3),
}
ANTHROPIC = {
    "overloaded": (_anthropic_error(529, "overloaded_error", "Overloaded"), "server_error", 3),
    "context": (_anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
                "context_overflow", 1),
    "credit": (_anthropic_error(400, "invalid_request_error", "Your credit balance is too low to access the "
                                "Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."),
               "quota_exhausted", 1),
    "toolarge": (_anthropic_error(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."),
                 "bad_request", 1),
    "empty": (Reply({}), "malformed_response", 3),
}
GEMINI = {
    "perday": (_gemini_error(429, "RESOURCE_EXHAUSTED", GEMINI_QUOTA,
                             _quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "0.01s")),
               "quota_exhausted", 3),  # its body asks for a retry: it is tried again, quota or not
    "retryinfo": (_gemini_error(429, "RESOURCE_EXHAUSTED", GEMINI_QUOTA,
                                [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.01s"}]),
                  "rate_limit", 3),
    "perminute": (_gemini_error(429, "RESOURCE_EXHAUSTED", GEMINI_QUOTA,
                                _quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "0.01s")),
                  "rate_limit", 3),
    "denied": (_gemini_error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."), "auth", 1),
    "unavailable": (_gemini_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
                    "server_error", 3),
}


def _suite(rows: list[str]) -> str:
    return "".join(f"- id: {row}\n  turns: [ROW-{row}]\n  expect: {{response_contains: done}}\n" for row in rows)


def _row(received: Received) -> str:
    found = ROW.search(json.dumps(received.body))
    assert found, received.body
    return found.group(1)


def run_suite(tmp_path: Path, providers: dict[str, str], rows: list[str], *flags: str) -> tuple[int, str, list[dict]]:
    """Run one case per row (its prompt ``ROW-<row>``) in every alias of ``providers`` (name -> its YAML
    body, indented by 4) through ``runner.cli.main``: (exit code, stdout, the run files)."""
    (tmp_path / "case.yml").write_text(_suite(rows), encoding="utf-8")
    aliases = "".join(f"  {name}:\n{body}" for name, body in providers.items())
    (tmp_path / "tooltrial.yml").write_text(f"providers:\n{aliases}", encoding="utf-8")
    argv = ["run", str(tmp_path / "case.yml"), "--config", str(tmp_path / "tooltrial.yml"), "--results",
            str(tmp_path / "results"), "--sandbox", "none", "-j", "4", *flags]
    for name in providers:
        argv += ["-p", name]
    code, out, _ = cli_output(argv)
    (results,) = (tmp_path / "results").iterdir()
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((results / "runs").iterdir())]
    return code, out, runs


def alias(model: str, base: str, timeout: float = 10, attempts: int = 3) -> str:
    return (f"    model: {model}\n    api_base: {base}\n    timeout: {timeout}\n"
            f"    retries: {{attempts: {attempts}, backoff: 0, max_retry_after: {CAP}}}\n")


WIRES: dict[str, tuple[Callable[[], FakeServer], str, dict[str, tuple[Reply, str, int]]]] = {
    "openai": (OpenAIServer, "openai/gpt-x", OPENAI),
    "anthropic": (AnthropicServer, f"anthropic/{ANTHROPIC_MODEL}", ANTHROPIC),
    "gemini": (GeminiServer, f"gemini/{GEMINI_MODEL}", GEMINI),
}


@pytest.mark.parametrize("wire", WIRES)
def test_each_failure_is_recorded_as_its_kind_and_only_transient_ones_are_retried(wire: str, tmp_path: Path) -> None:
    make, model, table = WIRES[wire]
    with make() as server:
        server.responder = lambda received: table[_row(received)][0]
        code, _, runs = run_suite(tmp_path, {"fake": alias(model, server.api_base)}, list(table))
        posts = [_row(r) for r in server.chats]
    seen = {run["case"].split("/")[-1]: run for run in runs}
    assert {row: seen[row]["error_kind"] for row in table} == {row: kind for row, (_, kind, _) in table.items()}
    assert {row: posts.count(row) for row in table} == {row: n for row, (_, _, n) in table.items()}
    assert {row: seen[row]["requests"] for row in table} == {row: n for row, (_, _, n) in table.items()}
    for row, (reply, kind, sent) in table.items():
        run = seen[row]
        assert run["status"] == "error" and run["failure"] == "run_error"
        (request,) = run["model_requests"]
        assert [a["error_kind"] for a in request["attempts"]] == [kind] * sent
        assert {a["status"] for a in request["attempts"]} == ({None} if row == "empty" else {reply.status})
        assert run["cause"].startswith(f"fake: {kind}")
    # a context overflow is the agent's doing (exit 1); the rest are the infrastructure's (exit 6)
    assert code == (1 if "context" in table else 6)


def test_no_connection_and_no_answer_in_time_are_connection_and_provider_timeout(tmp_path: Path) -> None:
    with OpenAIServer(fallback=Reply(openai_reply("done").body, delay=1.0)) as slow:
        code, _, runs = run_suite(tmp_path, {
            "down-openai": alias("openai/gpt-x", "http://127.0.0.1:9/v1", attempts=2),
            "down-anthropic": alias(f"anthropic/{ANTHROPIC_MODEL}", "http://127.0.0.1:9", attempts=2),
            "slow": alias("openai/gpt-x", slow.api_base, timeout=0.2, attempts=2),
        }, ["one"])
        assert len(slow.chats) == 2
    assert {r["provider"]: (r["error_kind"], r["requests"]) for r in runs} == {
        "down-openai": ("connection", 2), "down-anthropic": ("connection", 2), "slow": ("provider_timeout", 2)}
    assert all(a["status"] is None for r in runs for a in r["model_requests"][0]["attempts"])
    assert code == 6


HINTS = {  # row: (the 429's headers and message, the wait recorded, its source)
    "ms": ({"retry-after-ms": "30"}, "slow down", 0.03, "retry-after-ms"),
    "seconds": ({"Retry-After": "0.02"}, "slow down", 0.02, "retry-after"),
    "date": ({"Retry-After": "DATE"}, "slow down", CAP, "http-date"),  # 2 s ahead, capped
    "text": ({}, "Rate limit reached. Please try again in 40ms.", 0.04, "text"),
    "long": ({}, "Rate limit reached. Please try again in 4.5s.", CAP, "text"),
    "none": ({}, "slow down", 0.0, "backoff"),
}


def test_the_wait_the_provider_asks_for_is_honoured_capped_and_every_try_recorded(tmp_path: Path) -> None:
    tries: dict[str, int] = {}
    lock = threading.Lock()

    def respond(received: Received) -> Reply:
        row = _row(received)
        with lock:
            tries[row] = tries.get(row, 0) + 1
            first = tries[row] == 1
        if not first:
            return openai_reply("done")
        headers, message, _, _ = HINTS[row]
        headers = {k: formatdate(time.time() + 2, usegmt=True) if v == "DATE" else v
                   for k, v in headers.items()}
        return error_reply(429, message, headers)

    with OpenAIServer(responder=respond) as server:
        code, _, runs = run_suite(tmp_path, {"fake": alias("openai/gpt-x", server.api_base)}, list(HINTS))
    assert code == 0
    seen = {run["case"].split("/")[-1]: run for run in runs}
    for row, (_, _, wait, source) in HINTS.items():
        run = seen[row]
        assert run["status"] == "pass" and run["requests"] == 2
        first, second = run["model_requests"][0]["attempts"]
        assert (first["number"], first["error_kind"], first["status"], first["wait_source"]) == (
            1, "rate_limit", 429, source)
        assert first["wait"] == pytest.approx(wait, abs=1e-9), row
        assert (second["number"], second["error_kind"], second["status"], second["wait"]) == (2, None, None, None)


def test_gemini_retry_info_in_the_body_sets_the_wait(tmp_path: Path) -> None:
    with GeminiServer() as server:
        server.push(GEMINI["perminute"][0], GEMINI["perminute"][0])
        server.fallback = _gemini_error(400, "INVALID_ARGUMENT", "stop here")
        _, _, (run,) = run_suite(tmp_path, {"fake": alias(f"gemini/{GEMINI_MODEL}", server.api_base)}, ["one"])
    waits = [(a["error_kind"], a["wait"], a["wait_source"]) for a in run["model_requests"][0]["attempts"]]
    assert waits == [("rate_limit", 0.01, "retry-info"), ("rate_limit", 0.01, "retry-info"),
                     ("bad_request", None, None)]
    assert run["requests"] == 3 and run["error_kind"] == "bad_request"


class _Failed(Exception):
    def __init__(self, status: int | None, body: str = "") -> None:
        super().__init__(f"failed {status}")
        self.status_code = status
        self.litellm_response_headers = {"retry-after": body} if body else None


def test_a_hint_no_retry_after_can_read_is_no_hint() -> None:
    for value in ("soon", "-3", "Sun, 99 Foo 2026 99:99:99 GMT"):
        error = _Failed(429, value)
        assert retry_hint(error, classify(error)) is None


@settings(max_examples=200, deadline=None)
@given(value=st.text(max_size=40), status=st.one_of(st.none(), st.integers(100, 599)))
def test_any_retry_after_value_is_a_wait_of_zero_or_more_or_none(value: str, status: int | None) -> None:
    error = _Failed(status, value)
    failure = classify(error)
    hint = retry_hint(error, failure, now=0.0)
    assert hint is None or (hint[0] >= 0 and hint[1] in ("retry-after", "http-date"))
    assert failure.retryable == (failure.kind in ("rate_limit", "server_error", "provider_timeout", "connection",
                                                  "malformed_response"))


@settings(max_examples=100, deadline=None)
@given(seconds=st.floats(0, 1e6, allow_nan=False))
def test_retry_after_seconds_are_read_as_sent(seconds: float) -> None:
    error = _Failed(429, repr(seconds))
    assert retry_hint(error, classify(error)) == (seconds, "retry-after")


def test_a_long_asked_wait_is_capped_at_max_retry_after_without_sleeping_for_it() -> None:
    slept: list[float] = []
    with OpenAIServer() as server:
        server.push(error_reply(429, "slow down", {"Retry-After": "120"}), error_reply(429, "slow down", {"Retry-After": "7"}),
                    openai_reply("done"))
        settings = ModelSettings("openai/gpt-x", api_base=server.api_base, retry=RetryPolicy(attempts=3, backoff=0))
        reply = LiteLLMProvider(settings, sleep=slept.append).complete([{"role": "user", "content": "hi"}], [])
    assert slept == [60.0, 7.0]  # the default cap, then the wait as asked
    assert [(a.number, a.error_kind, a.status, a.wait, a.wait_source) for a in reply.attempts] == [
        (1, "rate_limit", 429, 60.0, "retry-after"), (2, "rate_limit", 429, 7.0, "retry-after"), (3, None, None, None, None)]
    assert reply.content == "done"


@pytest.mark.parametrize("model", ["gemini/gemini-2.5-flash", f"anthropic/{ANTHROPIC_MODEL}"])
def test_a_history_litellm_cannot_convert_is_a_bad_request_not_retried(model: str) -> None:
    """litellm refuses, before sending anything, a tool call whose arguments are not JSON; retrying
    the same history cannot help (no server listens on port 9: nothing is sent)."""
    import litellm
    import openai

    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{not json"}}]},
               {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "x"}]
    with pytest.raises(openai.OpenAIError) as raised:
        litellm.completion(model=model, api_base="http://127.0.0.1:9", api_key="x", messages=history,
                           num_retries=0, max_retries=0, timeout=2)
    failure = classify(raised.value)
    assert (failure.kind, failure.retryable) == ("bad_request", False)


def test_an_ollama_call_it_cannot_parse_again_and_again_is_the_agents_malformed_call(tmp_path: Path) -> None:
    """Ollama answers 500 "error parsing tool call" when the model wrote a call its parser cannot read: a
    new sample may read, so it is asked again; when it keeps coming, the run is the agent's failure."""
    bad = Reply({"error": "error parsing tool call: raw='{\"name\": \"write_file\", \"arguments\": {\"path\": ', "
                          "err=unexpected end of JSON input"}, status=500)
    with OllamaServer() as server:
        server.responder = lambda received: bad
        code, _, (run,) = run_suite(tmp_path, {"fake": alias("ollama_chat/fake", server.api_base)}, ["one"])
        posts = len(server.chats)
    assert (run["status"], run["error_kind"], posts, run["requests"]) == ("error", "malformed_call", 3, 3)
    assert [(a["error_kind"], a["status"]) for a in run["model_requests"][0]["attempts"]] == [("malformed_call", 500)] * 3
    assert code == 1  # the agent's, not the infrastructure's (6)
