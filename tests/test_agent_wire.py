"""The external agents' endpoint on the wire, over real loopback HTTP: OpenAI chat completions and
Anthropic Messages, JSON and server-sent events, exactly as their clients read them; the key; a
provider failure answered with its status; and no request body, however odd, makes it raise."""

from __future__ import annotations

import http.client
import json
import socket
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.endpoint.messages import read_messages
from runner.endpoint.rebuild import tool_names
from runner.endpoint.server import Endpoint
from runner.kinds import ErrorKind, StopReason
from runner.providers.base import Completion, ProviderError, ToolCall, Usage

CALL = ToolCall("call_7", "write_file", {"path": "a.txt", "content": "hi"})
REPLY = Completion("Writing it.", (CALL,), "tool_calls", Usage(11, 5, 16), reasoning="the user wants a file",
                   message={"thinking_blocks": [{"type": "thinking", "thinking": "the user wants a file",
                                                 "signature": "sig-1"}]})


class _Replies:
    """A provider answering with ``replies`` in order (a ProviderError in them is raised), keeping what it got."""

    name = "fake"

    def __init__(self, *replies: Completion | ProviderError) -> None:
        self.replies, self.asked = list(replies), []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None) -> Completion:
        self.asked.append((messages, tools))
        reply = self.replies.pop(0)
        if isinstance(reply, ProviderError):
            raise reply
        return reply


def _post(endpoint: Endpoint, path: str, body: Any, key: str | None = None) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=10)
    headers = {"content-type": "application/json", "x-api-key": key or endpoint.token}
    connection.request("POST", path, json.dumps(body) if not isinstance(body, bytes) else body, headers)
    response = connection.getresponse()
    return response.status, response.getheader("content-type", ""), response.read()


def _events(data: bytes) -> list[Any]:
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:])
            for line in data.decode().splitlines() if line.startswith("data: ")]


def test_a_chat_stream_has_the_role_text_and_call_deltas_with_index_and_id_then_usage_and_done() -> None:
    with Endpoint(_Replies(REPLY)) as endpoint:
        status, kind, data = _post(endpoint, "/v1/chat/completions", {
            "model": "gpt-x", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": [{"type": "text", "text": "make a.txt"}]}]})
    assert (status, kind) == (200, "text/event-stream")
    events = _events(data)
    deltas = [e["choices"][0]["delta"] if e != "[DONE]" and e["choices"] else e for e in events]
    assert deltas[:-2] == [
        {"role": "assistant", "content": ""}, {"reasoning_content": "the user wants a file"},
        {"content": "Writi"}, {"content": "ng it."},
        {"tool_calls": [{"index": 0, "id": "call_7", "type": "function", "function": {"name": "write_file", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "a.txt",'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ' "content": "hi"}'}}]},
        {}]
    assert events[-3]["choices"][0]["finish_reason"] == "tool_calls"
    assert (events[-2]["choices"], events[-2]["usage"], events[-1]) == (
        [], {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}, "[DONE]")
    assert {e["model"] for e in events[:-1]} == {"gpt-x"}
    assert endpoint.exchanges[0].request.messages == [{"role": "user", "content": [{"type": "text", "text": "make a.txt"}]}]


def test_a_messages_stream_is_the_anthropic_event_sequence_with_thinking_text_and_tool_use() -> None:
    with Endpoint(_Replies(REPLY)) as endpoint:
        status, kind, data = _post(endpoint, "/v1/messages?beta=true", {
            "model": "claude-x", "max_tokens": 100, "stream": True, "messages": [{"role": "user", "content": "make a.txt"}]})
    assert (status, kind) == (200, "text/event-stream")
    names = [line[7:] for line in data.decode().splitlines() if line.startswith("event: ")]
    assert names == ["message_start", *["content_block_start", "content_block_delta", "content_block_delta",
                                        "content_block_stop"], *["content_block_start", "content_block_delta",
                                                                 "content_block_stop"] * 2, "message_delta", "message_stop"]
    events = _events(data)
    assert events[0]["message"]["usage"] == {"input_tokens": 11, "output_tokens": 0}
    assert [e["content_block"] for e in events if e["type"] == "content_block_start"] == [
        {"type": "thinking", "thinking": "", "signature": ""}, {"type": "text", "text": ""},
        {"type": "tool_use", "id": "call_7", "name": "write_file", "input": {}}]
    assert [e["delta"] for e in events if e["type"] == "content_block_delta"] == [
        {"type": "thinking_delta", "thinking": "the user wants a file"}, {"type": "signature_delta", "signature": "sig-1"},
        {"type": "text_delta", "text": "Writing it."},
        {"type": "input_json_delta", "partial_json": '{"path": "a.txt", "content": "hi"}'}]
    assert events[-2] == {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                          "usage": {"output_tokens": 5}}


def test_a_messages_request_reads_into_chat_shapes_and_its_reply_is_a_message_object() -> None:
    provider = _Replies(Completion("Done.", (), "stop", None))
    body = {"model": "claude-x", "max_tokens": 100, "system": [{"type": "text", "text": "Be brief."}],
            "tools": [{"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "read a"},
                         {"role": "assistant", "content": [
                             {"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "Reading."},
                             {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}]},
                         {"role": "user", "content": [
                             {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                              "content": [{"type": "text", "text": "no file a"}]},
                             {"type": "text", "text": "go on"}]}]}
    with Endpoint(provider) as endpoint:
        status, _, data = _post(endpoint, "/v1/messages", body)
    assert (status, json.loads(data)) == (200, {
        "id": "msg_tooltrial1", "type": "message", "role": "assistant", "model": "claude-x",
        "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0}})
    messages, tools = provider.asked[0]
    assert messages == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "read a"},
        {"role": "assistant", "content": "Reading.", "thinking_blocks": [{"type": "thinking", "thinking": "hm", "signature": "s"}],
         "tool_calls": [{"id": "toolu_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "tool_call_id": "toolu_1", "content": "no file a"}, {"role": "user", "content": "go on"}]
    assert tools == [{"type": "function", "function": {"name": "read_file", "description": "Read.",
                                                       "parameters": {"type": "object"}}}]
    assert endpoint.exchanges[0].request.failed_results == frozenset({"toolu_1"})


def test_the_key_is_required_and_models_are_listed() -> None:
    with Endpoint(_Replies(), model="my-model") as endpoint:
        status, _, data = _post(endpoint, "/v1/chat/completions", {"messages": []}, key="guess")
        connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=10)
        connection.request("GET", "/v1/models", headers={"Authorization": f"Bearer {endpoint.token}"})
        listed = json.loads(connection.getresponse().read())
    assert (status, json.loads(data)["error"]["type"]) == (401, "authentication_error")
    assert (endpoint.refused, endpoint.exchanges) == (1, [])
    assert [m["id"] for m in listed["data"]] == ["my-model"]
    assert endpoint.env()["OPENAI_BASE_URL"] == f"http://127.0.0.1:{endpoint.port}/v1"
    assert endpoint.env()["ANTHROPIC_API_KEY"] == endpoint.env()["OPENAI_API_KEY"] == endpoint.token


def test_a_provider_failure_is_answered_with_its_status_and_ends_the_run() -> None:
    failure = ProviderError("rate limited: slow down", ErrorKind.RATE_LIMIT, status=429)
    with Endpoint(_Replies(failure, REPLY)) as endpoint:
        first = _post(endpoint, "/v1/messages", {"messages": [{"role": "user", "content": "hi"}]})
        again = _post(endpoint, "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]})
    assert (first[0], json.loads(first[2])) == (429, {"type": "error", "error": {"type": "rate_limit_error",
                                                                                 "message": "rate limited: slow down"}})
    assert (again[0], json.loads(again[2])["error"]["message"]) == (429, "rate limited: slow down")
    assert (endpoint.stop, endpoint.stopped.is_set()) == (StopReason.RATE_LIMIT, True)
    assert [e.status for e in endpoint.exchanges] == [429, 429]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["messages", "role", "content", "type", "tools", "name", "stream", "system",
                                         "tool_use_id", "input", "text", "id", "function", "arguments"]), inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(body=JSON, api=st.sampled_from(["chat", "messages"]))
@example(body={"messages": [], "tools": [0]}, api="chat")
@example(body={"messages": [{"role": "tool", "tool_call_id": [1]}], "tools": [{"function": "x"}]}, api="chat")
@example(body={"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": [], "content": 3}]}],
               "tools": [{"name": 1}], "system": [1]}, api="messages")
def test_no_request_body_makes_the_endpoint_raise(body: Any, api: str) -> None:
    endpoint = Endpoint(_Replies(*[Completion("ok", (CALL,))] * 2), tell=lambda event: None)
    endpoint.answer(api, json.dumps({"messages": []}).encode())  # a reply whose call is pending
    status, chunks, _ = endpoint.answer(api, json.dumps(body).encode())
    b"".join(chunks)
    assert status in (200, 400)
    if status == 400:
        assert endpoint.exchanges[-1].error.startswith("tooltrial's endpoint could not read the request: ")
    tool_names(endpoint.exchanges[-1].request.tools if endpoint.exchanges[-1].request else [])


def test_read_messages_keeps_a_tool_result_before_the_text_of_its_message() -> None:
    request = read_messages({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "and now?"}, {"type": "tool_result", "tool_use_id": "t1", "content": "42"}]}]})
    assert request.messages == [{"role": "tool", "tool_call_id": "t1", "content": "42"},
                                {"role": "user", "content": "and now?"}]


def test_a_body_length_that_does_not_read_is_refused_and_recorded() -> None:
    with Endpoint(_Replies()) as endpoint, socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as raw:
        raw.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: lots\r\nx-api-key: "
                    + endpoint.token.encode() + b"\r\n\r\n")
        answer = raw.recv(4096).decode()
    assert answer.startswith("HTTP/1.1 400 ")
    assert [(e.status, e.error) for e in endpoint.exchanges] == [
        (400, "tooltrial's endpoint could not read the request: its Content-Length 'lots' is not a number of bytes")]
