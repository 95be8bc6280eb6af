"""OpenTelemetry export: each run a trace, sent over OTLP/HTTP or written as OTLP JSON lines.

A case runs through the CLI against a loopback OpenAI fake (litellm for real); a small OTLP/HTTP
receiver started here parses what tooltrial sends with opentelemetry-proto, and the ``--otel``
file is read back line by line.
"""

from __future__ import annotations

import base64
import gzip
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest
from google.protobuf.json_format import MessageToDict, ParseDict
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from runner.output.otel import OtelTarget, provider_and_model, run_spans
from runner.output.otlp import json_lines
from runner.run.record import RunRecord
from runner.run.requests import RequestStats
from runner.run.transcript import TEXT_LIMIT, bounded
from tests.fake_servers import OpenAIServer, error_reply, openai_reply
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")

HI = {"path": "out.txt", "content": "hi"}


class Receiver:
    """An OTLP/HTTP traces receiver on 127.0.0.1: each POST's ExportTraceServiceRequest kept as a dict
    (protobuf's JSON mapping, ids as hex) with its path; it answers ``status``."""

    def __init__(self, status: int = 200) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest.FromString(body)
                receiver.requests.append((self.path, _hex(MessageToDict(request))))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _hex(value: Any) -> Any:
    """protobuf's JSON mapping with the ids in hex, as OTLP/JSON writes them."""
    if isinstance(value, dict):
        return {k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex(v)
                for k, v in value.items()}
    return [_hex(v) for v in value] if isinstance(value, list) else value


def _spans(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [span for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]


def _attributes(span: dict[str, Any]) -> dict[str, Any]:
    """A span's attributes as plain values (OTLP's AnyValue unwrapped; int64s come as strings)."""
    def plain(value: dict[str, Any]) -> Any:
        (kind, inner), = value.items()
        if kind == "arrayValue":
            return [plain(v) for v in inner.get("values", [])]
        return int(inner) if kind == "intValue" else inner
    return {a["key"]: plain(a["value"]) for a in span["attributes"]}


def _live_run(tmp_path: Path, flags: list[str]) -> tuple[int, str, dict[str, Any]]:
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("write_file", HI)], ids=["call_w"], usage=(12, 7)),
                    openai_reply("Wrote out.txt.", usage=(30, 4)))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake-model", flags=flags)
    return code, err, run


def _by_name(spans: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    named: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        named.setdefault(span["name"], []).append(span)
    return named


def test_a_live_run_is_one_trace_with_genai_spans_sent_over_otlp_http(tmp_path: Path) -> None:
    with Receiver() as receiver:
        code, err, run = _live_run(tmp_path, ["--otel-endpoint", receiver.url])
    assert code == 0, err
    ((path, document),) = receiver.requests
    assert path == "/v1/traces"  # a bare endpoint gets the traces path, as OTEL_EXPORTER_OTLP_ENDPOINT does
    (resource,) = document["resourceSpans"]
    assert {"key": "service.name", "value": {"stringValue": "tooltrial"}} in resource["resource"]["attributes"]
    spans = _by_name(_spans(document))
    assert sorted(spans) == ["chat fake-model", "execute_tool write_file", "run case/write-hi"]
    (root,) = spans["run case/write-hi"]
    first, second = sorted(spans["chat fake-model"], key=lambda s: int(s["startTimeUnixNano"]))
    (tool,) = spans["execute_tool write_file"]
    assert "parentSpanId" not in root
    assert {s["traceId"] for s in (root, first, second, tool)} == {root["traceId"]}
    assert [s["parentSpanId"] for s in (first, second, tool)] == [root["spanId"]] * 3
    assert (first["kind"], tool["kind"], root["kind"]) == ("SPAN_KIND_CLIENT", "SPAN_KIND_INTERNAL", "SPAN_KIND_INTERNAL")
    assert _attributes(first) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.system": "openai",
        "gen_ai.request.model": "fake-model", "gen_ai.request.stream": False,
        "gen_ai.response.finish_reasons": ["tool_calls"], "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 7, "tooltrial.request.index": 0, "tooltrial.request.turn": 0,
        "tooltrial.request.outcome": "reply", "tooltrial.request.attempts": 1}
    assert _attributes(second)["gen_ai.response.finish_reasons"] == ["stop"]
    assert (_attributes(second)["gen_ai.usage.input_tokens"], _attributes(second)["tooltrial.request.index"]) == (30, 1)
    assert _attributes(tool) == {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "write_file", "gen_ai.tool.call.id": "call_w",
        "gen_ai.tool.type": "function", "tooltrial.tool.status": "executed", "tooltrial.tool.is_error": False,
        "tooltrial.request.index": 0, "tooltrial.turn": 0}
    run_attributes = _attributes(root)
    assert {k: run_attributes[k] for k in ("tooltrial.case", "tooltrial.arm", "tooltrial.status", "tooltrial.outcome",
                                           "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")} == {
        "tooltrial.case": run["case"], "tooltrial.arm": "fake · default", "tooltrial.status": "pass",
        "tooltrial.outcome": 1.0, "gen_ai.usage.input_tokens": 42, "gen_ai.usage.output_tokens": 11}
    # the times are the record's: the request's start and latency, the call's start and duration
    request, step = run["model_requests"][0], run["steps"][0]
    for nanoseconds, seconds in ((first["startTimeUnixNano"], request["started"]),
                                 (first["endTimeUnixNano"], request["started"] + request["latency"]),
                                 (tool["startTimeUnixNano"], step["started"]),
                                 (tool["endTimeUnixNano"], step["started"] + step["duration"]),
                                 (root["startTimeUnixNano"], run["started"]),
                                 (root["endTimeUnixNano"], run["started"] + run["duration"])):
        assert abs(int(nanoseconds) - seconds * 1e9) < 1000  # to the microsecond: a float of epoch ns is coarser
    assert int(root["startTimeUnixNano"]) <= int(first["startTimeUnixNano"]) < int(first["endTimeUnixNano"]) \
        <= int(tool["startTimeUnixNano"]) <= int(second["startTimeUnixNano"]) <= int(root["endTimeUnixNano"])
    content = ("gen_ai.output", "gen_ai.input", "gen_ai.system_instructions", "gen_ai.tool.call.a", "gen_ai.tool.def")
    assert not any(k.startswith(content) for s in (first, second, tool) for k in _attributes(s))


def test_the_otel_file_holds_one_otlp_json_request_per_run_and_content_only_when_asked(tmp_path: Path) -> None:
    lines = tmp_path / "traces.jsonl"
    code, err, run = _live_run(tmp_path, ["--otel", str(lines), "--otel-content"])
    assert code == 0, err
    (line,) = lines.read_text(encoding="utf-8").splitlines()
    document = json.loads(line)
    spans = _by_name(_spans(document))
    (root,) = spans[f"run {run['case']}"]
    assert len(root["traceId"]) == 32 and len(root["spanId"]) == 16 and int(root["traceId"], 16)  # hex, not base64
    first = min(spans["chat fake-model"], key=lambda s: int(s["startTimeUnixNano"]))
    assert first["kind"] == 3 and first["parentSpanId"] == root["spanId"]  # OTLP/JSON: enums as integers
    assert json.loads(_attributes(first)["gen_ai.output.messages"]) == [{"role": "assistant", "finish_reason": "tool_calls",
        "parts": [{"type": "tool_call", "id": "call_w", "name": "write_file", "arguments": HI}]}]
    (tool,) = spans["execute_tool write_file"]
    assert (json.loads(_attributes(tool)["gen_ai.tool.call.arguments"]), _attributes(tool)["gen_ai.tool.call.result"]) \
        == (HI, run["steps"][0]["result"])
    assert _attributes(root)["tooltrial.final_reply"] == "Wrote out.txt."
    # the line is the protobuf message, once its ids go back to protobuf's base64
    message = ParseDict(_base64(document), ExportTraceServiceRequest())
    assert len(message.resource_spans[0].scope_spans[0].spans) == 4


def test_with_content_each_chat_span_holds_the_input_it_carried_as_sent(tmp_path: Path) -> None:
    lines = tmp_path / "traces.jsonl"
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("write_file", HI)], ids=["call_w"], usage=(12, 7)),
                    openai_reply("Wrote out.txt.", usage=(30, 4)))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake-model", flags=["--otel", str(lines), "--otel-content"])
        sent = [chat.body for chat in server.chats]
    assert code == 0, err
    spans = _by_name(_spans(json.loads(lines.read_text(encoding="utf-8"))))
    first, second = (_attributes(s) for s in sorted(spans["chat fake-model"], key=lambda s: int(s["startTimeUnixNano"])))
    system = sent[0]["messages"][0]
    assert system["role"] == "system" and system == run["messages"][0]
    for span in (first, second):  # the rendered system prompt, apart from the conversation
        assert json.loads(span["gen_ai.system_instructions"]) == [{"type": "text", "content": system["content"]}]
    assert json.loads(first["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Write hi to out.txt"}]}]
    assert json.loads(second["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Write hi to out.txt"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_w", "name": "write_file", "arguments": HI}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_w", "response": run["steps"][0]["result"]}]}]
    assert sent[1]["messages"][3] == {"role": "tool", "tool_call_id": "call_w", "name": "write_file", "content": run["steps"][0]["result"]}
    offered = sent[0]["tools"]
    assert sent[1]["tools"] == offered and "write_file" in [t["function"]["name"] for t in offered]
    definitions = [{"type": "function", "name": t["function"]["name"], "description": t["function"]["description"],
                    "parameters": t["function"]["parameters"]} for t in offered]
    assert json.loads(first["gen_ai.tool.definitions"]) == json.loads(second["gen_ai.tool.definitions"]) == definitions


MESSAGES_AGENT = """\
- id: look
  agent: {command: "PYTHON AGENT", input: stdin}
  files: {name.txt: Ada}
  turns: [Read name.txt.]
  script:
    - tool_calls: [{name: read_file, arguments: {path: name.txt}}]
    - content: It says Ada.
"""


def test_an_external_agents_anthropic_messages_requests_are_its_chat_spans_input(tmp_path: Path) -> None:
    from tests.helpers import ROOT, run_cli

    agent = ROOT / "tests" / "agents" / "messages_agent.py"
    (tmp_path / "look.yml").write_text(MESSAGES_AGENT.replace("PYTHON", sys.executable).replace("AGENT", str(agent)))
    lines, results = tmp_path / "traces.jsonl", tmp_path / "results"
    done = run_cli("run", str(tmp_path / "look.yml"), "-p", "scripted", "--sandbox", "none", "--results", str(results),
                   "--otel", str(lines), "--otel-content")
    assert done.returncode == 0, done.stdout + done.stderr
    run = json.loads(next(results.glob("*/runs/*.json")).read_text(encoding="utf-8"))
    call = run["steps"][0]["call_id"]
    spans = _by_name(_spans(json.loads(lines.read_text(encoding="utf-8"))))
    first, second = (_attributes(s) for s in sorted(spans["chat scripted"], key=lambda s: int(s["startTimeUnixNano"])))
    asked = {"role": "user", "parts": [{"type": "text", "content": run["messages"][1]["content"]}]}
    assert run["messages"][1]["content"].startswith("Read name.txt.")
    assert json.loads(first["gen_ai.input.messages"]) == [asked]
    assert json.loads(second["gen_ai.input.messages"]) == [
        asked,
        {"role": "assistant", "parts": [{"type": "tool_call", "id": call, "name": "read_file", "arguments": {"path": "name.txt"}}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": call, "response": "Ada"}]}]
    assert json.loads(second["gen_ai.system_instructions"]) == [{"type": "text", "content": "Be brief."}]
    assert [(d["type"], d["name"], sorted(d["parameters"]["properties"]))
            for d in json.loads(second["gen_ai.tool.definitions"])] == [
        ("function", "read_file", ["path"]), ("function", "write_file", ["content", "path"])]


def _chat_content(record: RunRecord) -> dict[str, Any]:
    """The content attributes of the one chat span of ``record``'s trace, exported with content, JSON decoded."""
    (line,) = json_lines(run_spans([record], OtelTarget(content=True))).splitlines()
    (chat,) = [s for s in _spans(json.loads(line)) if s["name"].startswith("chat ")]
    return {k: json.loads(v) for k, v in _attributes(chat).items()
            if k in ("gen_ai.system_instructions", "gen_ai.input.messages", "gen_ai.tool.definitions")}


def test_an_external_agents_anthropic_messages_request_is_read_into_the_conventions_parts() -> None:
    sent = [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "text", "text": "Look"},
                                         {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}]},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "a file", "signature": "s1"},
                                              {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x", "is_error": False}]}]
    tools = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}},
             {"type": "web_search_20250305", "name": "web_search"}]
    record = RunRecord(case="g/c", provider="scripted", prompt="default", started=1.0, messages=sent, tools=tools,
                       model_requests=[RequestStats(started=1.0, finish_reason="stop", messages=[0, 4])])
    assert _chat_content(record) == {
        "gen_ai.system_instructions": [{"type": "text", "content": "Be brief."}],
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": "Look"},
                                       {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "iVBO"}]},
            {"role": "assistant", "parts": [{"type": "reasoning", "content": "a file"},
                                            {"type": "tool_call", "id": "toolu_1", "name": "read", "arguments": {"path": "a"}}]},
            {"role": "user", "parts": [{"type": "tool_call_response", "id": "toolu_1", "response": "x"}]}],
        "gen_ai.tool.definitions": [
            {"type": "function", "name": "read", "description": "Read a file", "parameters": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"}]}


def test_openai_reasoning_images_unparsed_arguments_and_cut_texts_go_as_recorded() -> None:
    long = "a" * (TEXT_LIMIT + 5)
    sent, cuts = bounded([
        {"role": "user", "content": [{"type": "text", "text": long},
                                     {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}},
                                     {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]},
        {"role": "assistant", "reasoning_content": "think", "content": "Calling.",
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{not json"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "run", "content": "ok"}])
    record = RunRecord(case="g/c", provider="scripted", prompt="default", started=1.0, messages=sent, message_cuts=cuts,
                       model_requests=[RequestStats(started=1.0, finish_reason="stop", messages=[0, 3])])
    assert cuts[0].left_out == 5
    assert _chat_content(record) == {"gen_ai.input.messages": [
        {"role": "user", "parts": [{"type": "text", "content": sent[0]["content"][0]["text"]},
                                   {"type": "blob", "modality": "image", "mime_type": "image/jpeg", "content": "/9j/"},
                                   {"type": "uri", "modality": "image", "uri": "https://example.com/a.png"}]},
        {"role": "assistant", "parts": [{"type": "reasoning", "content": "think"}, {"type": "text", "content": "Calling."},
                                        {"type": "tool_call", "id": "c1", "name": "run", "arguments": "{not json"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}]}
    assert "[... 5 characters left out ...]" in sent[0]["content"][0]["text"]


@settings(max_examples=40, deadline=None)
@given(st.text(), st.text())
def test_any_text_sent_comes_back_from_the_input_messages_as_sent(system: str, said: str) -> None:
    record = RunRecord(case="g/c", provider="scripted", prompt="default", started=1.0,
                       messages=[{"role": "system", "content": system}, {"role": "user", "content": said}],
                       model_requests=[RequestStats(started=1.0, finish_reason="stop", messages=[0, 2])])
    content = _chat_content(record)  # JSON escapes what UTF-8 cannot hold (a lone surrogate), so it comes back whole
    assert content["gen_ai.input.messages"] == [{"role": "user", "parts": [{"type": "text", "content": said}] if said else []}]
    assert content.get("gen_ai.system_instructions") == ([{"type": "text", "content": system}] if system else None)


def test_a_request_the_record_does_not_place_carries_no_input() -> None:
    record = RunRecord(case="g/c", provider="scripted", prompt="default", started=1.0,
                       messages=[{"role": "user", "content": "hi"}],
                       model_requests=[RequestStats(started=1.0, finish_reason="stop")])
    assert _chat_content(record) == {}


def _base64(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: base64.b64encode(bytes.fromhex(v)).decode() if k in ("traceId", "spanId", "parentSpanId") else
                _base64(v) for k, v in value.items()}
    return [_base64(v) for v in value] if isinstance(value, list) else value


def test_a_collector_that_refuses_the_spans_is_an_error_line_and_the_results_stay(tmp_path: Path) -> None:
    with Receiver(status=400) as receiver:
        code, err, run = _live_run(tmp_path, ["--otel-endpoint", f"{receiver.url}/custom/path"])
    assert receiver.requests[0][0] == "/custom/path"  # a URL with a path is used as given
    assert code == 2 and run["status"] == "pass"
    assert f"error: cannot export the traces to {receiver.url}/custom/path: Failed to export spans batch code: 400, " \
           "reason: Bad Request" in err


@pytest.mark.parametrize(("flags", "message"), [
    (["--otel-endpoint", "localhost:4318"], ("error: --otel-endpoint 'localhost:4318' is not an http(s) URL "
                                             "(give the collector's OTLP/HTTP address, e.g. http://localhost:4318)")),
    (["--otel-content"], ("error: --otel-content needs --otel FILE or --otel-endpoint URL "
                          "(add one, or leave --otel-content out)")),
])
def test_bad_otel_options_are_usage_errors_before_any_run(tmp_path: Path, flags: list[str], message: str) -> None:
    from tests.helpers import run_cli

    done = run_cli("run", "cases/fix.yml", "--results", str(tmp_path / "results"), *flags)
    assert (done.returncode, done.stderr) == (4, message + "\n")
    assert not (tmp_path / "results").exists()


def test_without_the_otel_extra_the_error_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.helpers import run_cli

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # import fails as if not installed
    done = run_cli("run", "cases/fix.yml", "--results", str(tmp_path / "results"), "--otel", str(tmp_path / "t.jsonl"))
    assert (done.returncode, done.stderr) == (4, ("error: --otel needs OpenTelemetry, which is not installed "
                                                  "(opentelemetry.sdk.trace) (install tooltrial's otel extra: "
                                                  "pip install 'tooltrial[otel]')\n"))
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("model", "expected"), [
    ("openai/gpt-4o", ("openai", "gpt-4o")), ("ollama_chat/qwen3", ("ollama", "qwen3")),
    ("ollama/qwen3", ("ollama", "qwen3")), ("gemini/gemini-2.5-flash", ("gcp.gemini", "gemini-2.5-flash")),
    ("openrouter/meta/llama-3", ("openrouter", "meta/llama-3")), ("gpt-4o", ("litellm", "gpt-4o")),
    ("scripted", ("scripted", "scripted"))])
def test_genai_provider_and_model_of_a_litellm_model_string(model: str, expected: tuple[str, str]) -> None:
    assert provider_and_model(model) == expected


@settings(max_examples=60, deadline=None)
@given(st.text())
def test_any_reply_text_survives_the_json_lines_as_utf8(text: str) -> None:
    record = RunRecord(case="g/c", provider="scripted", prompt="default", started=1_700_000_000.25, duration=1.5,
                       final_reply=text)
    (line,) = json_lines(run_spans([record], OtelTarget(content=True))).splitlines()
    (root,) = _spans(json.loads(line))
    assert _attributes(root).get("tooltrial.final_reply", "") == text.encode("utf-8", "replace").decode("utf-8")
    assert (root["startTimeUnixNano"], root["endTimeUnixNano"]) == ("1700000000250000000", "1700000001750000000")


def test_a_record_without_start_times_gives_no_trace() -> None:
    old = RunRecord(case="g/c", provider="scripted", prompt="default")
    assert json_lines(run_spans([old], OtelTarget())) == ""


def test_a_failed_request_a_failed_tool_call_and_an_errored_run_are_error_spans(tmp_path: Path) -> None:
    lines = tmp_path / "traces.jsonl"
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("read_file", {"path": "missing.txt"})], ids=["call_r"]),
                    *[error_reply(500, "upstream broke")] * 3)
        _code, err, (run,) = run_case(tmp_path, server, "openai/fake-model", flags=["--otel", str(lines)])
    assert run["status"] == "error" and run["error_kind"] == "server_error", err
    spans = _by_name(_spans(json.loads(lines.read_text(encoding="utf-8"))))
    (root,) = spans["run case/write-hi"]
    answered, failed = sorted(spans["chat fake-model"], key=lambda s: int(s["startTimeUnixNano"]))
    (tool,) = spans["execute_tool read_file"]
    assert root["status"] == {"code": 2, "message": run["cause"].splitlines()[0]}
    assert (_attributes(root)["error.type"], _attributes(root)["tooltrial.status"]) == ("server_error", "error")
    assert _attributes(root)["tooltrial.checks.failed"] == ["files.exists"]  # out.txt was never written
    assert answered["status"] == {} and "error.type" not in _attributes(answered)
    assert failed["status"]["code"] == 2 and "upstream broke" in failed["status"]["message"]
    assert (_attributes(failed)["error.type"], _attributes(failed)["tooltrial.request.attempts"]) == ("server_error", 3)
    assert "gen_ai.response.finish_reasons" not in _attributes(failed)
    assert tool["status"] == {"code": 2} and _attributes(tool)["error.type"] == "tool_error"  # no result text without --otel-content


def test_a_collector_that_is_down_is_named_with_the_last_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from runner.output import otlp

    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(otlp, "EXPORT_TIMEOUT", 2.5)  # one retry after about a second, then the next wait is too long
    traces = run_spans([RunRecord(case="g/c", provider="scripted", prompt="default", started=1.0)], OtelTarget())
    said = otlp.send(traces, f"http://127.0.0.1:{port}/v1/traces")
    assert said is not None and said.startswith(
        f"cannot export the traces to http://127.0.0.1:{port}/v1/traces: Failed to export spans batch due to timeout, "
        "max retries or shutdown. (the last error: ")
    assert "Connection refused" in said
