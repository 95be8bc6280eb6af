"""``expect.response_json`` (runner.checks.jsonreply) through ``tooltrial run`` with the scripted provider,
and its schema and JMESPath paths checked where they are written when the case is loaded."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli_output

CASE = """\
- id: weather
  turns: [What is the weather in Paris? Answer in JSON.]
  expect:
    response_json:
      schema: {type: object, required: [city, days], properties: {days: {type: array, items: {type: object}}}}
      paths:
        city: {normalized: paris}
        days[0].temp: {type: number}
        "length(days)": 2
        error: {absent: true}
  script:
    - content: REPLY
"""


def _run(tmp_path: Path, reply: str) -> tuple[int, list[str], list[tuple[str, bool, str]]]:
    path = tmp_path / "json.yml"
    path.write_text(CASE.replace("REPLY", json.dumps(reply)))
    code, out, err = cli_output(["run", str(path), "--results", str(tmp_path / "r"), "--output", "json"])
    (run,) = json.loads(out)["runs"]
    return code, err.splitlines(), [(c["check"], c["passed"], c["message"]) for c in run["checks"]]


def test_a_json_reply_in_a_fenced_block_passes_each_check(tmp_path: Path) -> None:
    reply = 'Here it is:\n```json\n{"city": "Paris", "days": [{"temp": 21.5}, {"temp": 19}]}\n```\n'
    code, lines, checks = _run(tmp_path, reply)
    assert (code, lines[:2]) == (0, ["PASS json/weather", "1/1 passed"])
    assert checks == [
        ("response_json", True, "response is JSON (a fenced code block)"),
        ("response_json.schema", True, "response JSON matches the schema"),
        ("response_json.paths", True, 'response JSON city: "Paris"'),
        ("response_json.paths", True, "response JSON days[0].temp: 21.5"),
        ("response_json.paths", True, "response JSON length(days): 2"),
        ("response_json.paths", True, "response JSON error is absent"),
    ]


def test_a_json_reply_that_misses_fails_with_exact_messages(tmp_path: Path) -> None:
    reply = '{"city": "Rome", "days": [{"temp": "hot"}, 3], "error": "none"}'
    code, lines, checks = _run(tmp_path, reply)
    failed = [
        "response JSON does not match the schema at $.days[1]: 3 is not of type 'object'",
        'response JSON city: expected "paris" (normalized), got "Rome"',
        'response JSON days[0].temp: expected number, got "hot"',
        'response JSON error: expected absent, got "none"',
    ]
    assert (code, lines[:6]) == (1, ["FAIL json/weather", *(f"  {line}" for line in failed), "0/1 passed"])
    assert [c for c in checks if not c[1]] == [(name, False, m) for name, m in zip(
        ["response_json.schema", "response_json.paths", "response_json.paths", "response_json.paths"], failed, strict=True)]


def test_a_reply_that_is_not_json_fails_once(tmp_path: Path) -> None:
    code, lines, checks = _run(tmp_path, "It is sunny in Paris.")
    assert (code, lines[:3]) == (1, ["FAIL json/weather", "  response is not JSON: Expecting value (line 1, column 1)",
                                     "0/1 passed"])
    assert checks == [("response_json", False, "response is not JSON: Expecting value (line 1, column 1)")]


def test_a_bad_schema_path_or_pattern_is_an_error_where_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("- id: b\n  turns: [Hi.]\n  expect:\n    response_json:\n      schema: {type: objekt}\n"
                    "      paths:\n        items[: 1\n        foo(a): 1\n        name: {matches: '(x'}\n")
    code, _, err = cli_output(["validate", str(path)])
    hint = "write a JMESPath expression: items[0].name, data.\"odd-key\", length(items)"
    assert (code, err.splitlines()) == (4, [
        (f"error: {path}:5:15: expect.response_json.schema: invalid JSON Schema at 'type': "
         "'objekt' is not valid under any of the given schemas"),
        f"error: {path}:7:9: expect.response_json.paths.items[: invalid JMESPath 'items[': the expression ends too early ({hint})",
        f"error: {path}:8:9: expect.response_json.paths.foo(a): invalid JMESPath 'foo(a)': Unknown function: foo() ({hint})",
        f"error: {path}:9:25: expect.response_json.paths.name.matches: invalid regex '(x': missing ) at position 2",
    ])
