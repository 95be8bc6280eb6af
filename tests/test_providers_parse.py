"""runner.providers.parse: raw chat-completion shapes -> Completion, without guessing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.providers.base import ProviderError, Usage
from runner.providers.parse import (
    parse_arguments,
    parse_completion,
    parse_tool_calls,
    parse_usage,
)


def body(message: dict, finish_reason: str | None = "stop", **extra) -> dict:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish_reason}], **extra}


def call(name: str, arguments, call_id: str | None = "c1") -> dict:
    raw = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        raw["id"] = call_id
    return raw


def test_plain_reply_with_usage_and_finish_reason() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    completion = parse_completion(body({"role": "assistant", "content": "hi"}, usage=usage), latency=0.25)
    assert completion.content == "hi"
    assert completion.tool_calls == ()
    assert completion.finish_reason == "stop"
    assert completion.usage == Usage(12, 3, 15)
    assert completion.latency == 0.25


def test_arguments_as_string_and_as_object() -> None:
    calls = parse_tool_calls([call("a", '{"path": "x"}', "c1"), call("b", {"path": "y"}, "c2")])
    assert [(c.id, c.name, c.arguments, c.error) for c in calls] == [
        ("c1", "a", {"path": "x"}, None),
        ("c2", "b", {"path": "y"}, None),
    ]
    assert calls[0].raw_arguments == '{"path": "x"}'
    assert calls[1].raw_arguments is None


def test_invalid_json_arguments_become_an_error_call_keeping_the_raw_text() -> None:
    (bad,) = parse_tool_calls([call("write_file", '{"path": "a.txt", "content": ')])
    assert bad.arguments is None
    assert bad.error is not None and bad.error.startswith("invalid JSON arguments: ")
    assert bad.raw_arguments == '{"path": "a.txt", "content": '


@pytest.mark.parametrize("raw, arguments, repaired", [
    ("null", {}, "null"),
    (" null ", {}, "null"),
    ('"{\\"path\\": \\"a.txt\\"}"', {"path": "a.txt"}, "double_encoded"),
    ('{"path": "a.txt"}', {"path": "a.txt"}, None),
])
def test_null_and_a_json_string_of_an_object_are_repaired_and_say_so(raw, arguments, repaired) -> None:
    (parsed,) = parse_tool_calls([call("read_file", raw)])
    assert (parsed.arguments, parsed.error, parsed.raw_arguments, parsed.repaired) == (arguments, None, raw, repaired)


def test_an_exact_repeat_of_a_call_in_one_reply_is_one_call() -> None:
    """The same id, name and arguments twice: one call. The same id with other arguments is two calls
    (the second under a fresh id), as is the same call under another id."""
    twice = [call("read_file", '{"path": "a"}', "c1"), call("read_file", '{"path": "a"}', "c1"),
             call("read_file", '{"path": "b"}', "c1"), call("read_file", '{"path": "a"}', "c2")]
    completion = parse_completion(body({"role": "assistant", "content": None, "tool_calls": twice}, "tool_calls"))
    assert [(c.id, c.arguments) for c in completion.tool_calls] == [
        ("c1", {"path": "a"}), ("call_1", {"path": "b"}), ("c2", {"path": "a"})]


@pytest.mark.parametrize("raw, kind", [("[1, 2]", "list"), ('"text"', "str"), ("3", "int"), (7, "int")])
def test_arguments_that_are_not_an_object_are_an_error(raw, kind) -> None:
    arguments, error, _, repaired = parse_arguments(raw)
    assert arguments is None and repaired is None
    assert error == f"invalid JSON arguments: expected a JSON object, got {kind}"


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_empty_arguments_mean_no_arguments(raw) -> None:
    assert parse_arguments(raw)[:2] == ({}, None)


def test_missing_and_duplicate_ids_are_made_unique() -> None:
    calls = parse_tool_calls([call("a", "{}", None), call("b", "{}", "dup"), call("c", "{}", "dup"),
                              call("d", "{}", ""), call("e", "{}", "call_1")])
    ids = [c.id for c in calls]
    assert len(set(ids)) == 5
    assert ids[1] == "dup" and ids[4] == "call_1"  # ids the provider gave are kept where unique


def test_null_or_empty_content_beside_several_tool_calls() -> None:
    for content in (None, ""):
        message = {"role": "assistant", "content": content,
                   "tool_calls": [call("ls", "{}", "x"), call("read_file", '{"path": "a"}', "y")]}
        completion = parse_completion(body(message, "tool_calls"))
        assert completion.content == content
        assert [c.name for c in completion.tool_calls] == ["ls", "read_file"]
        assert completion.finish_reason == "tool_calls"


def test_content_as_a_list_of_parts_is_joined() -> None:
    message = {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    assert parse_completion(body(message)).content == "ab"


def test_legacy_function_call_is_one_tool_call() -> None:
    message = {"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": "{}"}}
    (only,) = parse_completion(body(message, "function_call")).tool_calls
    assert (only.name, only.arguments) == ("ls", {})


def test_finish_reason_length_is_recorded() -> None:
    assert parse_completion(body({"content": "cut of"}, "length")).finish_reason == "length"


def test_missing_usage_is_none_never_guessed() -> None:
    assert parse_completion(body({"content": "x"})).usage is None
    assert parse_usage({"usage": None}) is None
    assert parse_usage({"usage": {}}) is None


@pytest.mark.parametrize("raw, expected", [
    ({"usage": {"prompt_tokens": 5, "completion_tokens": 2}}, Usage(5, 2, 7)),
    ({"usage": {"input_tokens": 5, "output_tokens": 2}}, Usage(5, 2, 7)),
    ({"usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2, "totalTokenCount": 9}}, Usage(5, 2, 9)),
    ({"prompt_eval_count": 5, "eval_count": 2, "done": True}, Usage(5, 2, 7)),
    ({"prompt_eval_count": 5}, Usage(5, None, None)),
    ({"usage": {"prompt_tokens": -1, "completion_tokens": True}}, None),
])
def test_usage_shapes(raw, expected) -> None:
    assert parse_usage(raw) == expected


def test_explicit_usage_overrides_the_body() -> None:
    completion = parse_completion(body({"content": "x"}, usage={"prompt_tokens": 1}), usage=None)
    assert completion.usage is None


class _Model:
    """Stands in for litellm's pydantic ModelResponse."""

    def __init__(self, data: dict) -> None:
        self.data = data

    def model_dump(self) -> dict:
        return self.data


def test_accepts_objects_with_model_dump() -> None:
    assert parse_completion(_Model(body({"content": "ok"}))).content == "ok"


@pytest.mark.parametrize("raw", [{}, {"choices": [{"message": None}]}, ["x"], "text"])
def test_responses_without_a_message_are_a_provider_error(raw) -> None:
    with pytest.raises(ProviderError):
        parse_completion(raw)


def test_no_choice_at_all_is_an_empty_reply_not_an_error() -> None:
    completion = parse_completion({"choices": []})
    assert (completion.content, completion.tool_calls, completion.finish_reason) == (None, (), None)


_ARGUMENTS = st.sampled_from([None, "", "{}", '{"a": 1}', "[1]", "{bad", "null", 3, [1], {"a": 1}, {}]) | st.text(max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({}, optional={
    "id": st.none() | st.sampled_from(["a", "b", "", "call_1", "call_2"]),
    "function": st.none() | st.fixed_dictionaries({}, optional={
        "name": st.none() | st.sampled_from(["ls", ""]) | st.integers(),
        "arguments": _ARGUMENTS,
    }),
}), max_size=6))
def test_any_tool_call_shape_parses_to_unique_ids_and_arguments_or_error(raw_calls) -> None:
    calls = parse_tool_calls(raw_calls)
    assert len(calls) == len(raw_calls)
    assert len({c.id for c in calls}) == len(calls)
    for c in calls:
        assert isinstance(c.name, str)
        assert (c.arguments is None) == (c.error is not None)
        assert c.arguments is None or isinstance(c.arguments, dict)
