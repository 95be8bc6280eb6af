"""What a run file says about each model request's attempts, over loopback fakes through the CLI: the
provider's HTTP status of an error sent in the body of a 200 (its own code apart), the request the run's
deadline cut short, and the provider's own finish reason of a streamed reply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fake_servers import OpenAIServer, Reply, openai_reply
from tests.fake_wire import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    AnthropicServer,
    GeminiServer,
    anthropic_reply,
    anthropic_stream,
    gemini_reply,
    gemini_stream,
    openai_stream,
    sse,
    text,
    tool_use,
)
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")

HI = {"path": "out.txt", "content": "hi"}
KEPT = ("number", "error_kind", "status", "error_code", "message", "wait", "wait_source")


def _attempts(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: a[k] for k in KEPT} for a in request["attempts"]]


def _answered(number: int) -> dict[str, Any]:
    return {"number": number, "error_kind": None, "status": None, "error_code": None, "message": None, "wait": None,
            "wait_source": None}


def _write_then_done() -> tuple[Reply, Reply]:
    return openai_reply(tool_calls=[("write_file", HI)]), openai_reply("Wrote out.txt.")


def test_an_error_body_under_http_200_keeps_status_200_and_its_own_code_apart(tmp_path: Path) -> None:
    body = {"error": {"message": "Rate limit exceeded: free-models-per-min", "code": 429}}
    with OpenAIServer() as server:
        server.push(Reply(body), *_write_then_done())
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    first = run["model_requests"][0]
    assert _attempts(first) == [
        {"number": 1, "error_kind": "rate_limit", "status": 200, "error_code": 429,
         "message": "litellm.RateLimitError: RateLimitError: OpenAIException - Rate limit exceeded: free-models-per-min",
         "wait": first["attempts"][0]["wait"], "wait_source": "backoff"},
        _answered(2)]
    assert run["requests"] == 3 and len(server.chats) == 3


def test_an_error_event_in_a_stream_keeps_status_200_and_its_own_code_apart(tmp_path: Path) -> None:
    event = {"error": {"message": "Upstream error from the provider", "code": 502}}
    write, done = _write_then_done()
    with OpenAIServer() as server:
        server.push(sse([event]), openai_stream(write), openai_stream(done))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="stream: true")
    assert code == 0, err
    (failed, answered) = _attempts(run["model_requests"][0])
    assert (failed["number"], failed["error_kind"], failed["status"], failed["error_code"], failed["wait"],
            failed["wait_source"]) == (1, "server_error", 200, 502, 0.0, "backoff")
    assert failed["message"].endswith("Upstream error from the provider")
    assert answered == _answered(2)
    assert run["requests"] == 3


def test_an_error_status_sent_as_such_has_no_error_code(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(Reply({"error": {"message": "overloaded", "code": 503}}, status=503), *_write_then_done())
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    assert [(a["status"], a["error_code"], a["error_kind"]) for a in run["model_requests"][0]["attempts"]] == [
        (503, None, "server_error"), (None, None, None)]


def test_a_stream_the_deadline_cuts_short_is_a_request_with_its_attempt(tmp_path: Path) -> None:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake"}
    chunks = [{**head, "choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": None}]}] * 40
    with OpenAIServer() as server:
        server.push(Reply(chunks=sse(chunks).chunks, content_type="text/event-stream", pause=0.1))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="stream: true", flags=["--timeout", "1"])
    assert code == 1, err
    assert (run["status"], run["error_kind"], run["requests"], len(server.chats)) == ("error", "timeout", 1, 1)
    (cut,) = run["model_requests"]
    assert (cut["index"], cut["finish_reason"], _attempts(cut)) == (0, None, [
        {"number": 1, "error_kind": "timeout", "status": 200, "error_code": None,
         "message": "cut short by the run's deadline", "wait": None, "wait_source": None}])
    assert cut["latency"] == cut["attempts"][0]["duration"] > 0.5  # sent early in the run's one second


@pytest.mark.parametrize("stream", ["", "stream: true"])
def test_anthropic_max_tokens_beside_a_call_is_its_native_finish_reason(tmp_path: Path, stream: str) -> None:
    cut = anthropic_reply([tool_use("toolu_1", "write_file", HI)], stop_reason="max_tokens")
    done = anthropic_reply([text("Wrote out.txt.")])
    wrap = anthropic_stream if stream else (lambda reply: reply)
    with AnthropicServer() as server:
        server.push(wrap(cut), wrap(done), wrap(done))
        _, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", stream=stream)
    assert [(r["finish_reason"], r["native_finish_reason"], r["outcome"], r["streamed"])
            for r in run["model_requests"]] == [
        ("length", "max_tokens", "truncated", bool(stream)), ("stop", "end_turn", "reply", bool(stream))], err


@pytest.mark.parametrize("stream", ["", "stream: true"])
def test_gemini_finish_reason_is_its_native_one_streamed_or_not(tmp_path: Path, stream: str) -> None:
    malformed = gemini_reply([], finish="MALFORMED_FUNCTION_CALL")
    call = gemini_reply([{"functionCall": {"name": "write_file", "args": HI}}])
    done = gemini_reply([{"text": "Wrote out.txt."}])
    wrap = gemini_stream if stream else (lambda reply: reply)
    with GeminiServer() as server:
        server.push(sse([malformed.body]) if stream else malformed, wrap(call), wrap(done))  # no part to stream
        code, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}", stream=stream)
    assert code == 0, err
    assert [(r["native_finish_reason"], r["outcome"]) for r in run["model_requests"]] == [
        ("MALFORMED_FUNCTION_CALL", "malformed_call"), ("STOP", "reply"), ("STOP", "reply")]


def test_openai_last_finish_reason_beside_streamed_calls_is_its_native_one(tmp_path: Path) -> None:
    call = openai_reply(tool_calls=[("write_file", HI)])
    call.body["choices"][0]["finish_reason"] = "stop"  # some servers say stop beside calls; litellm says tool_calls
    with OpenAIServer() as server:
        server.push(openai_stream(call), openai_stream(openai_reply("Wrote out.txt.")))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream="stream: true")
    assert code == 0, err
    assert [(r["finish_reason"], r["native_finish_reason"]) for r in run["model_requests"]] == [
        ("tool_calls", "stop"), ("stop", "stop")]
