"""Declarative mock tools: response selection, results, errors, schema refusal, replacing builtins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.sandbox.command import Sandbox, scrubbed_env
from runner.spec.case import Case
from runner.tools.base import ToolContext
from runner.tools.mocks import mock_tools
from runner.tools.toolbox import Toolbox, build_toolbox
from tests.helpers import make_case

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "responses": [
        {"when": {"city": "Paris", "unit": "f"}, "result": "64F"},
        {"when": {"city": "Paris"}, "result": {"temp": 18, "sky": "clear"}},
        {"result": "no data for that city"},
        {"when": {"city": {"matches": "^Atl"}}, "error": "Atlantis is offline"},
    ],
}


def _box(tmp_path: Path, *mocks: dict[str, Any], **fields: Any) -> Toolbox:
    case = make_case(mocks=list(mocks), **fields)
    context = ToolContext(tmp_path, Sandbox(), scrubbed_env(tmp_path), 5.0)
    return build_toolbox(case, context, mock_tools(case.mocks))


def test_first_matching_when_wins_and_json_results_are_serialised(tmp_path: Path) -> None:
    box = _box(tmp_path, WEATHER)
    assert box.call("get_weather", {"city": "Paris", "unit": "f"}).content == "64F"
    paris = box.call("get_weather", {"city": "Paris", "unit": "c"})
    assert (paris.content, paris.is_error) == ('{"temp": 18, "sky": "clear"}', False)


def test_the_fallback_answers_only_when_no_when_matches_wherever_it_stands(tmp_path: Path) -> None:
    box = _box(tmp_path, WEATHER)
    assert box.call("get_weather", {"city": "Oslo"}).content == "no data for that city"
    atlantis = box.call("get_weather", {"city": "Atlantis"})
    assert (atlantis.content, atlantis.is_error) == ("Error: Atlantis is offline", True)


def test_no_match_without_fallback_is_an_error_result(tmp_path: Path) -> None:
    strict = {**WEATHER, "responses": [{"when": {"city": "Paris"}, "result": "sunny"}]}
    result = _box(tmp_path, strict).call("get_weather", {"city": "Rome"})
    assert (result.content, result.is_error) == ("Error: no mock response for these arguments", True)


def test_arguments_violating_the_declared_schema_are_refused_with_the_violation(tmp_path: Path) -> None:
    box = _box(tmp_path, WEATHER)
    missing = box.call("get_weather", {})
    assert missing.is_error and missing.content == "Error: invalid arguments for get_weather: 'city' is a required property"
    wrong = box.call("get_weather", {"city": "Paris", "unit": "k"})
    assert wrong.is_error and "unit: 'k' is not one of ['c', 'f']" in wrong.content
    extra = box.call("get_weather", {"city": "Paris", "when": "now"})
    assert extra.is_error and "'when' was unexpected" in extra.content


def test_non_string_results_including_null_and_numbers(tmp_path: Path) -> None:
    calc = {
        "name": "calculate",
        "description": "",
        "parameters": {"type": "object", "properties": {}},
        "responses": [{"when": {"expression": "6 * 7"}, "result": 42}, {"result": None}],
    }
    box = _box(tmp_path, calc)
    assert box.call("calculate", {"expression": "6 * 7"}).content == "42"
    assert box.call("calculate", {"expression": "x"}).content == "null"


def test_mocks_are_offered_after_builtins_and_a_mock_replaces_a_builtin_by_name(tmp_path: Path) -> None:
    fake_read = {
        "name": "read_file",
        "description": "Read a file (mocked).",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        "responses": [{"result": "mocked content"}],
    }
    box = _box(tmp_path, fake_read, WEATHER)
    assert box.offered[0] == "read_file" and box.offered[-1] == "get_weather"
    assert box.offered.count("read_file") == 1
    (tmp_path / "a.txt").write_text("real content")
    assert box.call("read_file", {"path": "a.txt"}).content == "mocked content"
    assert box.specs()[0]["function"]["description"] == "Read a file (mocked)."


def test_case_tools_can_offer_only_the_mocks(tmp_path: Path) -> None:
    box = _box(tmp_path, WEATHER, tools=["get_weather"])
    assert box.offered == ["get_weather"]
    assert "unknown tool 'bash'" in box.call("bash", {"command": "ls"}).content


def test_loaded_case_mocks_build_tools(tmp_path: Path) -> None:
    from runner.spec.casefile import load_file

    path = tmp_path / "cases" / "w.yml"
    path.parent.mkdir()
    path.write_text(
        "- id: w\n  turns: [hi]\n  mocks:\n    - name: ping\n      responses:\n        - result: {ok: true}\n"
    )
    [case] = load_file(path)
    assert isinstance(case, Case)
    tools = mock_tools(case.mocks)
    assert tools["ping"].run({}, None) == '{"ok": true}'  # type: ignore[arg-type]
