"""What goes back to the provider: its own assistant message, empty content left out, tool names, arguments as sent.

Each test runs a case through the CLI against a loopback fake of that provider's wire
shape, litellm for real, and asserts on the request bodies tooltrial sent back and on
what it recorded.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.providers import echo
from runner.providers.history import provider_message
from runner.providers.litellm import LiteLLMProvider, ModelSettings
from runner.providers.parse import parse_tool_calls
from runner.providers.retry import RetryPolicy
from tests.fake_servers import OllamaServer, OpenAIServer, ollama_reply, openai_reply
from tests.fake_wire import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    AnthropicServer,
    GeminiServer,
    anthropic_reply,
    anthropic_stream,
    gemini_reply,
    ndjson,
    ollama_stream,
    sse,
    text,
    thinking,
    tool_use,
)
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HI = {"path": "out.txt", "content": "hi"}
TWO_TURNS = """\
- id: two-turns
  turns: [Write hi to out.txt, Now say nothing more]
  expect:
    files: {out.txt: {equals: hi}}
"""


def test_anthropic_thinking_and_redacted_thinking_go_back_as_they_came(tmp_path: Path) -> None:
    blocks = [thinking("The user wants a file.", "SIG123=="), {"type": "redacted_thinking", "data": "REDACTED=="},
              text("Writing it."), tool_use("toolu_01A", "write_file", HI)]
    with AnthropicServer() as server:
        server.push(anthropic_reply(blocks), anthropic_reply([text("Done.")]))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}")
    assert code == 0, err
    assistant, result = server.chats[1].body["messages"][1:3]
    assert assistant == {"role": "assistant", "content": blocks}  # byte for byte what the first reply held
    assert result["content"][0]["tool_use_id"] == "toolu_01A"
    assert run["steps"][0]["arguments"] == HI and run["final_reply"] == "Done."


def test_gemini_thought_signature_and_the_function_name_go_back(tmp_path: Path) -> None:
    signature = "CiQB" + "s" * 300  # real ones run to hundreds of characters
    with GeminiServer() as server:
        server.push(gemini_reply([{"functionCall": {"name": "write_file", "args": HI}, "thoughtSignature": signature}]),
                    gemini_reply([{"text": "Done."}]))
        code, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}")
    assert code == 0, err
    model_turn, answer = server.chats[1].body["contents"][1:3]
    assert model_turn["role"] == "model"
    # no empty {"text": ""} part for the reply's missing text
    assert model_turn["parts"] == [{"function_call": {"name": "write_file", "args": HI}, "thoughtSignature": signature}]
    assert answer["parts"][0]["function_response"]["name"] == "write_file"
    assert run["steps"][0]["call_id"].endswith("__thought__" + signature)  # the id is kept whole


def test_extra_content_on_an_openai_compatible_call_goes_back(tmp_path: Path) -> None:
    reply = openai_reply(tool_calls=[("write_file", HI)])
    reply.body["choices"][0]["message"]["tool_calls"][0]["extra_content"] = {"google": {"thought_signature": "TS=="}}
    with OpenAIServer() as server:
        server.push(reply, openai_reply("Done."))
        code, err, _ = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    (call,) = server.chats[1].body["messages"][2]["tool_calls"]
    assert call["extra_content"] == {"google": {"thought_signature": "TS=="}}


def test_an_empty_anthropic_reply_is_not_sent_back_as_invented_text(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        server.push(anthropic_reply([tool_use("toolu_1", "write_file", HI)]), anthropic_reply([]),
                    anthropic_reply([text("Done.")]), anthropic_reply([text("Nothing more.")]))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", case=TWO_TURNS)
    assert code == 0, err
    assert server.chats[2].body == server.chats[1].body  # the empty reply is asked again, nothing added for it
    sent = json.dumps(server.chats[3].body)
    assert "Empty message content" not in sent and "[System:" not in sent
    roles = [m["role"] for m in server.chats[3].body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert server.chats[3].body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": HI}]  # no empty text block either
    assert [m["outcome"] for m in run["model_requests"]] == ["reply", "empty", "reply", "reply"]
    assert run["final_reply"] == "Nothing more."


def test_openai_tool_results_carry_the_name_and_arguments_go_back_as_sent(tmp_path: Path) -> None:
    spaced = '{"content": "hi",   "path":"out.txt"}'  # key order and spacing as the model wrote them
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("write_file", spaced)]), openai_reply("Done."))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    assistant, result = server.chats[1].body["messages"][2:4]
    assert "content" not in assistant  # no "" for a reply that was only a call
    assert assistant["tool_calls"] == [{"id": "call_0", "type": "function",
                                        "function": {"name": "write_file", "arguments": spaced}}]
    assert result == {"role": "tool", "tool_call_id": "call_0", "name": "write_file",
                      "content": "wrote 2 bytes to out.txt"}
    assert run["steps"][0]["arguments"] == HI


def test_invalid_arguments_go_back_as_an_empty_object_so_anthropic_accepts_the_next_request(tmp_path: Path) -> None:
    cut = '{"path": "out.txt", "content": "h'
    with AnthropicServer() as server:
        # a streamed tool_use whose input JSON never closes, then a good call and a final reply
        start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                 "model": ANTHROPIC_MODEL, "content": [], "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}
        events = [("message_start", start),
                  ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                      "type": "tool_use", "id": "toolu_cut", "name": "write_file", "input": {}}}),
                  ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
                      "type": "input_json_delta", "partial_json": cut}}),
                  ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                  ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                     "usage": {"output_tokens": 9}}),
                  ("message_stop", {"type": "message_stop"})]
        server.push(sse(events), anthropic_stream(anthropic_reply([tool_use("toolu_ok", "write_file", HI)])),
                    anthropic_stream(anthropic_reply([text("Done.")])))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", stream="stream: true")
    assert code == 0, err
    assert len(server.chats) == 3  # litellm refuses to convert unparsable arguments: no request would be sent
    first = server.chats[1].body["messages"][1]["content"]
    assert first == [{"type": "tool_use", "id": "toolu_cut", "name": "write_file", "input": {}}]
    assert run["steps"][0]["is_error"] and run["steps"][0]["result"].startswith("Error: invalid JSON arguments")
    assert run["script"][0]["tool_calls"][0]["arguments"] == cut  # the record keeps what the model sent


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=40), st.from_regex(r'\{"[a-z]{1,3}": ?(1|"[^"\\]{0,5}"|\[\])( , "b":2)?\}', fullmatch=True)))
def test_arguments_go_back_as_sent_when_they_are_an_object_else_as_an_empty_one(sent: str) -> None:
    (call,) = parse_tool_calls([{"id": "c", "function": {"name": "write_file", "arguments": sent}}])
    message = provider_message({"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "type": "function", "index": 0, "function": {"name": "write_file", "arguments": sent}}]}, [call])
    assert message is not None and "content" not in message
    (back,) = message["tool_calls"]
    assert "index" not in back and back["id"] == "c"
    arguments = back["function"]["arguments"]
    assert isinstance(json.loads(arguments), dict)  # the next request can always be converted
    if call.arguments is None:
        assert arguments == "{}"
    elif call.repaired is not None:  # "null", a JSON string holding an object: the object they were taken for
        assert arguments == json.dumps(call.arguments)
    elif sent.strip():
        assert arguments == sent  # byte for byte
    else:
        assert arguments == "{}"


def test_sending_the_history_leaves_it_as_it_was() -> None:
    blocks = [thinking("Think.", "SIG=="), text("Writing."), tool_use("toolu_1", "write_file", HI)]
    tools = [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object"}}}]
    with AnthropicServer() as server:
        server.push(anthropic_reply(blocks), anthropic_reply([text("Done.")]))
        provider = LiteLLMProvider(ModelSettings(model=f"anthropic/{ANTHROPIC_MODEL}", api_base=server.api_base,
                                                 retry=RetryPolicy(attempts=1)))
        messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Write hi"}]
        first = provider.complete(messages, tools)
        assert first.message is not None and first.reasoning == "Think."
        messages += [dict(first.message), {"role": "tool", "tool_call_id": "toolu_1", "name": "write_file", "content": "ok"}]
        before = copy.deepcopy(messages)
        provider.complete(messages, tools)
    assert messages == before
    assert server.chats[1].body["messages"][1]["content"] == blocks


def test_an_openrouter_reasoning_reply_goes_back_as_the_server_sent_it(tmp_path: Path) -> None:
    """OpenRouter's ``reasoning`` and ``reasoning_details`` go back where they came, at the top of the
    message; litellm's ``provider_specific_fields`` and its ``reasoning_content`` never reach the server."""
    reply = openai_reply(tool_calls=[("write_file", HI)])
    message = reply.body["choices"][0]["message"]
    message.update(reasoning="I will write.", reasoning_details=[
        {"type": "reasoning.text", "text": "I will write.", "signature": "sig==", "format": "anthropic-claude-v1",
         "index": 0}])
    with OpenAIServer() as server:
        server.push(reply, openai_reply("Done."))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    echoed = server.chats[1].body["messages"][2]
    assert echoed == {key: value for key, value in message.items() if value is not None}
    assert run["model_requests"][0]["reasoning"] == "I will write."


def _ollama_thinking_call() -> dict[str, Any]:
    """An Ollama reasoning reply's message, as a recent Ollama sends it: ``thinking``, an empty ``content``,
    a call with Ollama's own id and ``index``, its arguments an object."""
    return {"role": "assistant", "content": "", "thinking": "I should write the file.",
            "tool_calls": [{"id": "call_x1", "function": {"index": 0, "name": "write_file", "arguments": HI}}]}


def test_an_ollama_reasoning_reply_goes_back_as_ollama_sent_it(tmp_path: Path) -> None:
    """litellm builds Ollama's messages afresh (``images: []`` on each, an id of its own on each call, Ollama's
    ``index`` and id lost); tooltrial edits the body before it goes, so the echo is Ollama's message."""
    sent = _ollama_thinking_call()
    first = ollama_reply()
    first.body["message"] = sent
    with OllamaServer() as server:
        server.push(first, ollama_reply("Done."))
        code, err, (run,) = run_case(tmp_path, server, "ollama/qwen3")
    assert code == 0, err
    messages = server.chats[1].body["messages"]
    assert json.dumps(messages[2]) == json.dumps(sent)  # byte for byte, key order too
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert not any("images" in m for m in messages)
    assert messages[3] == {"role": "tool", "content": "wrote 2 bytes to out.txt",
                           "tool_call_id": run["steps"][0]["call_id"]}
    # the record keeps the OpenAI chat shape litellm takes, the reasoning beside it
    assert run["messages"][2] == {"role": "assistant", "reasoning_content": "I should write the file.", "tool_calls": [
        {"function": {"arguments": json.dumps(HI), "name": "write_file"}, "id": run["steps"][0]["call_id"],
         "type": "function"}]}
    assert run["model_requests"][0]["reasoning"] == "I should write the file."
    assert (run["status"], run["final_reply"]) == ("pass", "Done.")


def test_a_streamed_ollama_reasoning_reply_goes_back_in_ollamas_shape(tmp_path: Path) -> None:
    """A stream keeps no body: the echo is rebuilt in Ollama's shape from the history (content, thinking,
    each call's name and arguments as an object), never litellm's ``images`` or made-up ids."""
    head = {"model": "fake", "created_at": "2024-01-01T00:00:00Z", "done": False}
    first = ndjson([{**head, "message": {"role": "assistant", "content": "", "thinking": "I should "}},
                    {**head, "message": {"role": "assistant", "content": "", "thinking": "write the file."}},
                    {**head, "message": {"role": "assistant", "content": "", "tool_calls": [
                        {"function": {"name": "write_file", "arguments": HI}}]}},
                    {**head, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                     "prompt_eval_count": 10, "eval_count": 5}])
    with OllamaServer() as server:
        server.push(first, ollama_stream(ollama_reply("Done.")))
        code, err, (run,) = run_case(tmp_path, server, "ollama/qwen3", stream="stream: true")
    assert code == 0, err
    messages = server.chats[1].body["messages"]
    assert messages[2] == {"role": "assistant", "content": "", "thinking": "I should write the file.",
                           "tool_calls": [{"function": {"name": "write_file", "arguments": HI}}]}
    assert not any("images" in m for m in messages)
    assert run["model_requests"][0]["reasoning"] == "I should write the file."


def test_ollamas_messages_kept_are_bounded_and_a_body_of_another_shape_is_left_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(echo, "KEPT", 2)
    kept = echo.OllamaEcho()
    entries = [{"role": "assistant", "content": f"reply {n}"} for n in range(3)]
    for n, entry in enumerate(entries):
        kept.keep(entry, {"message": {"role": "assistant", "content": f"reply {n}", "thinking": f"t{n}"}})
    body = {"messages": [{"role": "user", "content": "hi", "images": []},
                         *({"role": "assistant", "content": e["content"], "images": []} for e in entries)]}
    kept.rewrite(body, [{"role": "user", "content": "hi"}, *entries])
    assert body["messages"] == [{"role": "user", "content": "hi"},
                                {"role": "assistant", "content": "reply 0"},  # pushed out: rebuilt
                                {"role": "assistant", "content": "reply 1", "thinking": "t1"},
                                {"role": "assistant", "content": "reply 2", "thinking": "t2"}]
    other = {"messages": [{"role": "assistant", "content": "x", "images": []}]}
    kept.rewrite(other, entries)  # not one wire message per history message: not litellm's Ollama body
    assert other == {"messages": [{"role": "assistant", "content": "x", "images": []}]}
