"""BFCL's checker rules, one by one, on small hand-written BFCL-shaped entries run through the CLI.

Each entry is a function doc (a mock with its JSON Schema), an answer key translated into
``expect.trace.calls`` the way BFCL's ``ast_checker`` reads it (a list of acceptable values per
parameter, ``""`` among them for optional; strings compared by ``standardize_string``; no
parameter the answer does not name), and a scripted model call: the accepted call passes, the
mutation BFCL rejects fails with the exact message. All cases run in one ``tooltrial run``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import run_cli


def _doc(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": f"BFCL function {name}.", "parameters": parameters,
            "responses": [{"result": "ok"}]}


NUMBER, INTEGER, STRING = {"type": "number"}, {"type": "integer"}, {"type": "string"}
DOCS = {
    "calc_area": _doc("calc_area", {"base": NUMBER, "height": NUMBER, "unit": STRING}, ["base", "height"]),
    "calc_perimeter": _doc("calc_perimeter", {"base": NUMBER, "height": NUMBER}, ["base", "height"]),
    "count_items": _doc("count_items", {"n": INTEGER, "scale": NUMBER}, ["n"]),
    "get_weather": _doc("get_weather", {"city": STRING, "unit": STRING, "precision": INTEGER}, ["city"]),
    "plan_route": _doc("plan_route", {"cities": {"type": "array", "items": STRING}}, ["cities"]),
    "register": _doc("register", {"person": {"type": "object", "properties": {"name": STRING, "age": INTEGER}}},
                     ["person"]),
    "quadratic_roots": _doc("quadratic_roots", {"a": INTEGER, "b": INTEGER, "c": INTEGER}, ["a", "b", "c"]),
}

AREA = [{"name": "calc_area", "args": {"base": 10, "height": 5}}]  # BFCL: {"calc_area": {"base": [10], "height": [5]}}
WEATHER = [{"name": "get_weather", "args": {
    "city": {"normalized": "San Francisco, CA"},                    # "city": ["San Francisco, CA"]
    "unit": {"any_of": [{"normalized": "celsius"}, {"normalized": "c"}, {"absent": True}]},  # ["celsius", "c", ""]
    "precision": {"optional": 2}}}]                                 # "precision": [2, ""]
ROUTE = [{"name": "plan_route", "args": {"cities": [{"normalized": "New York"}, {"normalized": "Paris"}]}}]
PERSON = [{"name": "register", "args": {"person": {"exact": {"name": {"normalized": "Bob"}, "age": {"optional": 30}}}}}]
ROOTS = [{"name": "quadratic_roots", "args": {"a": 3, "b": 4, "c": 2}},
         {"name": "quadratic_roots", "args": {"a": 5, "b": -7, "c": 3}}]


WEATHER_SHOWN = ('expected call #1 get_weather {"city": {"normalized": "San Francisco, CA"}, "precision": {"optional": 2}, '
                 '"unit": {"any_of": [{"normalized": "celsius"}, {"normalized": "c"}, {"absent": tr... found no partner: ')


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


# case id -> (expected calls, script calls, the trace.calls result's (passed, message))
ENTRIES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], tuple[bool, str]]] = {
    "name-right": (AREA, [_call("calc_area", base=10, height=5)],
                   (True, "1 expected call(s) paired one to one: #1 calc_area = call #1")),
    "name-wrong": (AREA, [_call("calc_perimeter", base=10, height=5)],
                   (False, ('expected call #1 calc_area {"base": 10, "height": 5} found no partner: calc_area was '
                            'never called; call #1 calc_perimeter {"base": 10, "height": 5} is no expected call '
                            "(extra_calls: false)"))),
    "required-missing": (AREA, [_call("calc_area", base=10)],
                         (False, ('expected call #1 calc_area {"base": 10, "height": 5} found no partner: calc_area '
                                  "was never called (not counted: 1 refused call of calc_area: invalid arguments for "
                                  "calc_area: 'height' is a required property)"))),
    "unexpected-param": (AREA, [_call("calc_area", base=10, height=5, unit="cm")],
                         (False, ('expected call #1 calc_area {"base": 10, "height": 5} found no partner: nearest '
                                  'call #1 {"base": 10, "height": 5, "unit": "cm"} (unexpected parameter unit)'))),
    "int-for-float": ([{"name": "count_items", "args": {"n": 5, "scale": 2.0}}], [_call("count_items", n=5, scale=2)],
                      (True, "1 expected call(s) paired one to one: #1 count_items = call #1")),
    "float-for-int": ([{"name": "count_items", "args": {"n": 5}}], [_call("count_items", n=5.0)],
                      (False, ('expected call #1 count_items {"n": 5} found no partner: nearest call #1 {"n": 5.0} '
                               "(n: expected integer, got 5.0 (the tool's parameter type))"))),
    "acceptable-value": (WEATHER, [_call("get_weather", city="san francisco ca", unit="C", precision=2)],
                         (True, "1 expected call(s) paired one to one: #1 get_weather = call #1")),
    "unacceptable-value": (WEATHER, [_call("get_weather", city="San Francisco, CA", unit="kelvin")],
                           (False, WEATHER_SHOWN + 'nearest call #1 {"city": "San Francisco, CA", "unit": "kelvin"} (unit: expected '
                                   'one of [{"normalized": "celsius"}, {"normalized": "c"}, {"absent": true}], got '
                                   '"kelvin")')),
    "optional-left-out": (WEATHER, [_call("get_weather", city="San-Francisco CA")],
                          (True, "1 expected call(s) paired one to one: #1 get_weather = call #1")),
    "optional-wrong": (WEATHER, [_call("get_weather", city="San Francisco, CA", precision=3)],
                       (False, WEATHER_SHOWN + 'nearest call #1 {"city": "San Francisco, CA", "precision": 3} (precision: expected 2, got 3)')),
    "string-other": (WEATHER, [_call("get_weather", city="San Jose, CA")],
                     (False, WEATHER_SHOWN + 'nearest call #1 {"city": "San Jose, CA"} (city: expected "San Francisco, CA" (normalized), '
                             'got "San Jose, CA")')),
    "list-right": (ROUTE, [_call("plan_route", cities=["new york", "PARIS"])],
                   (True, "1 expected call(s) paired one to one: #1 plan_route = call #1")),
    "list-reordered": (ROUTE, [_call("plan_route", cities=["Paris", "New York"])],
                       (False, ('expected call #1 plan_route {"cities": [{"normalized": "New York"}, {"normalized": '
                                '"Paris"}]} found no partner: nearest call #1 {"cities": ["Paris", "New York"]} '
                                '(cities[0]: expected "New York" (normalized), got "Paris")'))),
    "dict-right": (PERSON, [_call("register", person={"name": "bob"})],
                   (True, "1 expected call(s) paired one to one: #1 register = call #1")),
    "dict-extra-key": (PERSON, [_call("register", person={"name": "Bob", "age": 30, "email": "b@x.org"})],
                       (False, ('expected call #1 register {"person": {"exact": {"age": {"optional": 30}, "name": '
                                '{"normalized": "Bob"}}}} found no partner: nearest call #1 {"person": {"age": 30, '
                                '"email": "b@x.org", "name": "Bob"}} (unexpected parameter person.email)'))),
    "dict-missing-key": (PERSON, [_call("register", person={"age": 30})],
                         (False, ('expected call #1 register {"person": {"exact": {"age": {"optional": 30}, "name": '
                                  '{"normalized": "Bob"}}}} found no partner: nearest call #1 {"person": {"age": 30}} '
                                  "(person.name: missing)"))),
    "parallel-any-order": (ROOTS, [_call("quadratic_roots", a=5, b=-7, c=3), _call("quadratic_roots", a=3, b=4, c=2)],
                           (True, ("2 expected call(s) paired one to one: #1 quadratic_roots = call #2, "
                                   "#2 quadratic_roots = call #1"))),
    "parallel-same-twice": (ROOTS, [_call("quadratic_roots", a=3, b=4, c=2), _call("quadratic_roots", a=3, b=4, c=2)],
                            (False, ('expected call #2 quadratic_roots {"a": 5, "b": -7, "c": 3} found no partner: '
                                     'nearest call #2 {"a": 3, "b": 4, "c": 2} (a: expected 5, got 3, and 2 more '
                                     "difference(s))"))),
}


def _case(case_id: str, expected: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:
    tools = sorted({call["name"] for call in expected} | {call["name"] for call in calls})
    return {"id": case_id, "tools": tools, "mocks": [DOCS[name] for name in tools], "turns": ["Do it."],
            "expect": {"trace": {"calls": expected, "exact_args": True, "strict_types": True, "extra_calls": False}},
            "script": [{"tool_calls": calls}, {"content": "done"}]}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[bool, str]]:
    """Case id -> (passed, message) of its trace.calls result, from the run files of one CLI run."""
    root = tmp_path_factory.mktemp("bfcl")
    cases = [_case(case_id, expected, calls) for case_id, (expected, calls, _) in ENTRIES.items()]
    (root / "bfcl.yml").write_text(json.dumps(cases), encoding="utf-8")  # JSON is YAML
    done = run_cli("run", str(root / "bfcl.yml"), "--results", str(root / "results"))
    assert done.returncode == 1, done.stdout + done.stderr
    found = {}
    for path in (root / "results").glob("*/runs/*.json"):
        run = json.loads(path.read_text(encoding="utf-8"))
        [calls] = [c for c in run["checks"] if c["check"] == "trace.calls"]
        assert run["status"] == ("pass" if calls["passed"] else "fail")
        found[run["case"].removeprefix("bfcl/")] = (calls["passed"], calls["message"])
    return found


@pytest.mark.parametrize("case_id", list(ENTRIES))
def test_each_bfcl_rule_gives_bfcls_verdict(verdicts: dict[str, tuple[bool, str]], case_id: str) -> None:
    assert verdicts[case_id] == ENTRIES[case_id][2]
