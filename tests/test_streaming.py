"""Streamed replies over loopback fakes: every stream shape, end to end through the CLI, against litellm for real.

What is asserted is what tooltrial recorded (the run files) and what it sent back to
the provider. The same conversation served once as JSON and once as a stream gives
the same record apart from timing.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import UserErrors
from runner.providers.stream import fill_missing_ids
from runner.spec.config import read_config
from tests.fake_servers import OllamaServer, OpenAIServer, Reply, ollama_reply, openai_reply
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
    sse,
    text,
    thinking,
    tool_use,
)
from tests.helpers import load_litellm_once
from tests.wire_runs import run_case, untimed

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HI = {"path": "out.txt", "content": "hi"}
STREAM = "stream: true"


def _chunk(delta: dict, finish: str | None = None, **extra) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_openai_stream_of_fragments_is_one_reply_with_usage_and_ttft(tmp_path: Path) -> None:
    first = openai_reply("Let me look.", [("list_dir", {}), ("write_file", HI)], usage=(11, 7))
    with OpenAIServer() as server:
        server.push(openai_stream(first), openai_stream(openai_reply("Wrote out.txt.", usage=(30, 4))))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream=STREAM)
    assert code == 0, err
    assert [(s["name"], s["arguments"], s["call_id"]) for s in run["steps"]] == [
        ("list_dir", {}, "call_0"), ("write_file", HI, "call_1")]
    assert run["final_reply"] == "Wrote out.txt."
    request = run["model_requests"][0]
    assert (request["prompt"], request["completion"], request["total"]) == (11, 7, 18)
    assert request["streamed"] is True and 0 < request["ttft"] <= request["latency"]
    assert run["tokens"]["total"] == 18 + 34 and run["tokens"]["unreported"] == 0
    sent = server.chats[0].body
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    echoed = server.chats[1].body["messages"][2]
    assert echoed == {"role": "assistant", "content": "Let me look.", "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}},
        {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(HI)}}]}


def test_one_chunk_with_the_whole_call_the_finish_and_the_usage(tmp_path: Path) -> None:
    whole = _chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_w", "type": "function", "function": {
        "name": "write_file", "arguments": json.dumps(HI)}}]}, "tool_calls",
        usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12})
    with OpenAIServer() as server:
        server.push(sse([whole, "[DONE]"]), openai_stream(openai_reply("done")))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream=STREAM)
    assert code == 0, err
    assert [(s["call_id"], s["arguments"]) for s in run["steps"]] == [("call_w", HI)]
    assert [(r["prompt"], r["completion"], r["finish_reason"]) for r in run["model_requests"]] == [
        (9, 3, "tool_calls"), (10, 5, "stop")]


def test_a_stream_without_usage_records_none_not_litellms_estimate(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_stream(openai_reply(tool_calls=[("write_file", HI)], usage=None)),
                    openai_stream(openai_reply("done", usage=(40, 2))))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream=STREAM)
    assert code == 0, err
    assert [(r["prompt"], r["completion"], r["total"]) for r in run["model_requests"]] == [
        (None, None, None), (40, 2, 42)]
    assert [r["usage_reported"] for r in run["model_requests"]] == [False, True]
    assert (run["tokens"]["prompt"], run["tokens"]["total"], run["tokens"]["unreported"]) == (40, 42, 1)


def test_anthropic_stream_with_ping_thinking_and_a_call_without_arguments(tmp_path: Path) -> None:
    blocks = [thinking("I should look first.", "SIG123=="), text("Listing."), tool_use("toolu_A", "list_dir", {}),
              tool_use("toolu_B", "write_file", HI)]
    with AnthropicServer() as server:
        server.push(anthropic_stream(anthropic_reply(blocks)), anthropic_stream(anthropic_reply([text("Done.")])))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", stream=STREAM)
    assert code == 0, err
    assert [(s["call_id"], s["name"], s["arguments"]) for s in run["steps"]] == [
        ("toolu_A", "list_dir", {}), ("toolu_B", "write_file", HI)]
    assert run["final_reply"] == "Done."
    # the thinking block and its signature (from the signature_delta) go back first, as Anthropic requires
    assistant = server.chats[1].body["messages"][1]
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["thinking", "text", "tool_use", "tool_use"]
    assert assistant["content"][0]["thinking"] == "I should look first."
    assert assistant["content"][0]["signature"] == "SIG123=="
    assert assistant["content"][2]["input"] == {} and assistant["content"][3]["input"] == HI


def test_ollama_ndjson_stream_keeps_calls_that_came_without_an_id(tmp_path: Path) -> None:
    reply = ollama_reply("On it.", [("list_dir", {}), ("write_file", HI)], usage=(30, 12))
    with OllamaServer() as server:
        server.push(ollama_stream(reply), ollama_stream(ollama_reply("Wrote it.")))
        code, err, (run,) = run_case(tmp_path, server, "ollama_chat/fake", stream=STREAM)
    assert code == 0, err
    assert [(s["name"], s["arguments"]) for s in run["steps"]] == [("list_dir", {}), ("write_file", HI)]
    assert run["steps"][0]["call_id"] == "call_1"  # Ollama sent none: tooltrial's id, sent back with the result
    assert run["model_requests"][0]["prompt"] == 30 and run["model_requests"][0]["streamed"] is True
    assert server.chats[0].body["stream"] is True


def test_fragments_that_repeat_the_name_without_the_id_are_one_call(tmp_path: Path) -> None:
    """Some OpenAI-compatible servers send the function name again on every fragment of one call, with
    the id on the first only: one call, run once, its id and whole arguments sent back."""
    fragments = [{"index": 0, "id": "call_r1", "type": "function", "function": {"name": "write_file", "arguments": ""}},
                 {"index": 0, "function": {"name": "write_file", "arguments": '{"path": "out.txt", '}},
                 {"index": 0, "function": {"name": "write_file", "arguments": '"content": "hi"}'}}]
    stream = sse([_chunk({"role": "assistant", "content": ""}), *[_chunk({"tool_calls": [f]}) for f in fragments],
                  _chunk({}, "tool_calls"), "[DONE]"])
    with OpenAIServer() as server:
        server.push(stream, openai_stream(openai_reply("Wrote out.txt.")))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream=STREAM)
    assert code == 0, err
    assert [(s["call_id"], s["name"], s["arguments"], s["status"]) for s in run["steps"]] == [
        ("call_r1", "write_file", HI, "executed")]
    assert server.chats[1].body["messages"][2]["tool_calls"] == [
        {"id": "call_r1", "type": "function", "function": {"name": "write_file", "arguments": json.dumps(HI)}}]
    assert server.chats[1].body["messages"][3]["tool_call_id"] == "call_r1"


@pytest.mark.parametrize("broken", [
    sse([_chunk({"role": "assistant", "content": "Hel"}), {"error": {"message": "upstream overloaded", "type": "server_error"}}]),
    sse([_chunk({"role": "assistant", "content": "Hel"})]),  # the stream ends with no finish reason
], ids=["error-event", "cut-off"])
def test_an_openai_stream_that_fails_after_200_is_retried(tmp_path: Path, broken: Reply) -> None:
    with OpenAIServer() as server:
        server.push(broken, openai_stream(openai_reply(tool_calls=[("write_file", HI)])), openai_stream(openai_reply("ok")))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake", stream=STREAM)
    assert code == 0, err
    assert len(server.chats) == 3 and run["status"] == "pass" and run["requests"] == 3
    assert [len(r["attempts"]) for r in run["model_requests"]] == [2, 1]  # the retry is inside the first request
    assert run["model_requests"][0]["attempts"][0]["error_kind"] == "server_error"


def test_an_anthropic_error_event_after_200_is_retried(tmp_path: Path) -> None:
    broken = anthropic_stream(anthropic_reply([text("Hello there.")]))
    broken = Reply(chunks=(*broken.chunks[:4], ('event: error\ndata: {"type": "error", "error": '
                                                '{"type": "overloaded_error", "message": "Overloaded"}}\n\n')),
                   content_type=broken.content_type)
    with AnthropicServer() as server:
        server.push(broken, anthropic_stream(anthropic_reply([tool_use("toolu_1", "write_file", HI)])),
                    anthropic_stream(anthropic_reply([text("ok")])))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}", stream=STREAM)
    assert code == 0, err
    assert len(server.chats) == 3 and run["final_reply"] == "ok"


def test_a_stream_still_coming_at_the_run_deadline_is_cut_there(tmp_path: Path) -> None:
    words = sse([_chunk({"role": "assistant", "content": "word "}) for _ in range(10)] + ["[DONE]"])
    slow = Reply(chunks=words.chunks, content_type=words.content_type, pause=0.4)  # each chunk in time, not the whole
    case = "- id: slow\n  timeout: 1.5\n  turns: [Say something]\n"
    with OpenAIServer() as server:
        server.push(slow)
        _, err, (run,) = run_case(tmp_path, server, "openai/fake", case=case, stream=STREAM)
    assert (run["status"], run["error_kind"]) == ("error", "timeout"), err
    assert run["cause"] == "run timed out after 1.5s, waiting for the model fake (1 attempt)"
    assert run["duration"] < 3.5  # a hang guard: the stream (4 s) is not read to its end


def _conversation(kind: str) -> tuple[type, str, list[Reply]]:
    """The same two-request conversation (text + two calls, then a final reply) in one provider's JSON shape."""
    if kind == "openai":
        return OpenAIServer, "openai/fake", [
            openai_reply("Let me look.", [("list_dir", {}), ("write_file", HI)], usage=(11, 7)),
            openai_reply("Wrote out.txt.", usage=(30, 4))]
    if kind == "anthropic":
        usage = {"input_tokens": 20, "output_tokens": 42, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}
        return AnthropicServer, f"anthropic/{ANTHROPIC_MODEL}", [
            anthropic_reply([thinking("Look first.", "SIG=="), text("Let me look."), tool_use("toolu_A", "list_dir", {}),
                             tool_use("toolu_B", "write_file", HI)], usage),
            anthropic_reply([text("Wrote out.txt.")])]
    metadata = {"promptTokenCount": 132, "candidatesTokenCount": 15, "thoughtsTokenCount": 49, "totalTokenCount": 196,
                "cachedContentTokenCount": 100}
    return GeminiServer, f"gemini/{GEMINI_MODEL}", [
        gemini_reply([{"text": "Let me look."}, {"functionCall": {"name": "list_dir", "args": {}}, "thoughtSignature": "GSIG"},
                      {"functionCall": {"name": "write_file", "args": HI}}], metadata),
        gemini_reply([{"text": "Wrote out.txt."}])]


STREAMS = {"openai": openai_stream, "anthropic": anthropic_stream, "gemini": gemini_stream}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_streamed_and_json_replies_give_the_same_record(tmp_path: Path, kind: str) -> None:
    server_type, model, replies = _conversation(kind)
    records, sent = [], []
    for streamed in (False, True):
        with server_type() as server:
            server.push(*(STREAMS[kind](r) if streamed else r for r in replies))
            code, err, (run,) = run_case(tmp_path, server, model, flags=["--stream"] if streamed else [])
        assert code == 0, err
        assert [r["streamed"] for r in run["model_requests"]] == [streamed, streamed]
        records.append(run)
        # the second request as sent (key order aside: a JSON reply goes back in the order the server wrote it),
        # less the stream keys, the workspace's name (in the system prompt) made one
        body = {k: v for k, v in server.chats[1].body.items() if k not in ("stream", "stream_options")}
        sent.append(re.sub(r"tooltrial-\w+", "tooltrial-X", json.dumps(body, sort_keys=True)))
    plain, streamed_run = records
    assert streamed_run["model_requests"][0]["ttft"] > 0 and plain["model_requests"][0]["ttft"] is None
    for run in records:  # the messages as sent: the workspace's name made one, key order aside (as above)
        messages = re.sub(r"tooltrial-\w+", "tooltrial-X", json.dumps(run["messages"], sort_keys=True))
        if kind == "gemini":  # litellm makes up Gemini's call ids (call_<uuid>): only their order is the provider's
            calls = [c for r in run["model_requests"] for c in r["tool_calls"]]
            for n, (step, call) in enumerate(zip(run["steps"], calls, strict=True)):
                messages = messages.replace(step["call_id"].split("__")[0], f"id{n}")
                step["call_id"] = step["call_id"].replace(step["call_id"].split("__")[0], f"id{n}")
                call["id"] = call["id"].replace(call["id"].split("__")[0], f"id{n}")
        # litellm's own note on an Anthropic reply (provider_specific_fields) differs streamed and not; the
        # provider gets the thinking blocks either way (test_history.py)
        run["messages"] = [{k: v for k, v in m.items() if k != "provider_specific_fields"} for m in json.loads(messages)]
    assert untimed(streamed_run) == untimed(plain)
    assert sent[0] == sent[1]  # what went back to the provider, too
    assert len(plain["steps"]) == 2 and plain["status"] == "pass"


def test_stream_in_params_is_refused_with_the_key_to_use(tmp_path: Path) -> None:
    path = tmp_path / "tooltrial.yml"
    path.write_text("providers:\n  x:\n    model: openai/x\n    params: {stream: true}\n", encoding="utf-8")
    with pytest.raises(UserErrors) as caught:
        read_config(path)
    assert [e.render() for e in caught.value.errors] == [
        f"{path}:4:14: providers.x.params.stream: 'stream' cannot be set in params (use the provider's 'stream' key)"]
    path.write_text("providers:\n  x:\n    model: openai/x\n    stream: yes please\n", encoding="utf-8")
    with pytest.raises(UserErrors) as caught:
        read_config(path)
    assert "providers.x.stream" in caught.value.errors[0].render()


NAMES = st.sampled_from(["list_dir", "read_file", "write_file"])
ARGUMENTS = st.dictionaries(st.sampled_from(["path", "content", "n"]), st.text(max_size=6) | st.integers(), max_size=3)


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.tuples(NAMES, ARGUMENTS, st.booleans()), min_size=1, max_size=4),
       cuts=st.lists(st.integers(0, 30), max_size=3), whole=st.booleans(), named=st.booleans())
def test_every_streamed_call_survives_assembly_whatever_its_fragments_and_ids(calls, cuts, whole, named) -> None:
    """Calls streamed OpenAI-style (split at ``cuts``, the name repeated on every fragment when ``named``) or
    Ollama-style (``whole``: each in one chunk, all at index 0), with or without ids, come out of litellm's
    builder as the same calls, each with an id of its own."""
    load_litellm_once()
    from litellm import stream_chunk_builder
    from litellm.types.utils import ModelResponseStream

    def chunk(delta: dict, finish: str | None = None) -> ModelResponseStream:
        return ModelResponseStream(id="c", created=1, model="m", choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    chunks = [chunk({"role": "assistant", "content": ""})]
    for index, (name, arguments, has_id) in enumerate(calls):
        text = json.dumps(arguments)
        ident = {"id": f"given_{index}"} if has_id else {}
        if whole:
            chunks.append(chunk({"tool_calls": [{"index": 0, **ident, "function": {"name": name, "arguments": text}}]}))
            continue
        chunks.append(chunk({"tool_calls": [{"index": index, **ident, "function": {"name": name, "arguments": ""}}]}))
        bounds = [0, *sorted({min(c, len(text)) for c in cuts}), len(text)]
        again = {"name": name} if named else {}
        chunks += [chunk({"tool_calls": [{"index": index, "function": {**again, "arguments": text[a:b]}}]})
                   for a, b in itertools.pairwise(bounds) if b > a]
    chunks.append(chunk({}, "tool_calls"))
    fill_missing_ids(chunks)
    built = stream_chunk_builder(chunks).choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in built] == [(n, a) for n, a, _ in calls]
    ids = [c.id for c in built]
    assert len(set(ids)) == len(ids) and all(ids)
    assert [i for i, (_, _, has_id) in zip(ids, calls) if has_id] == [f"given_{n}" for n, c in enumerate(calls) if c[2]]
