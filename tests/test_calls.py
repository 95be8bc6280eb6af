"""``expect.trace.calls`` and the matchers under it: the matching is maximum, ordered matching and
``extra_calls`` hold, the new matchers say what differed, and refused calls count for nothing that asks
for a call, through the CLI with scripted runs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.checks.calls import check_calls
from runner.checks.matching import maximum_matching, ordered_matching
from runner.errors import CaseFileError
from runner.run.trajectory import Step
from runner.scoring.trajectorymatch import run_trajectory_match
from runner.spec.casefile import load_file
from runner.spec.jsontypes import TYPE_NAMES, schema_type_mismatch
from runner.spec.matchers import arguments_mismatch, normalize, value_mismatch
from runner.spec.schema import case_schema
from tests.helpers import make_case, run_cli

# --- the matching ---------------------------------------------------------------------------------


def _brute_force(edges: list[list[int]], right: int) -> int:
    """The size of a maximum matching, by trying every assignment of left vertices to distinct right ones."""
    size = max(len(edges), right)
    best = 0
    for order in itertools.permutations(range(size)):
        best = max(best, sum(order[i] < right and order[i] in edges[i] for i in range(len(edges))))
    return best


_GRAPHS = st.integers(0, 5).flatmap(lambda right: st.tuples(
    st.lists(st.lists(st.integers(0, right - 1), unique=True).map(sorted) if right else st.just([]), max_size=5),
    st.just(right)))


@settings(max_examples=150, deadline=None)
@given(graph=_GRAPHS)
def test_the_matching_is_as_large_as_brute_force_finds_and_pairs_only_along_edges(graph: tuple[list[list[int]], int]) -> None:
    edges, right = graph
    partner = maximum_matching(edges, right)
    paired = [(i, j) for i, j in enumerate(partner) if j is not None]
    assert all(j in edges[i] for i, j in paired)
    assert len({j for _, j in paired}) == len(paired)  # one to one
    assert len(paired) == _brute_force(edges, right)


@settings(max_examples=150, deadline=None)
@given(graph=_GRAPHS)
def test_the_ordered_matching_pairs_everything_whenever_a_rising_assignment_exists(graph: tuple[list[list[int]], int]) -> None:
    edges, right = graph
    partner = ordered_matching(edges)
    rising = any(all(j in edges[i] for i, j in enumerate(chosen))
                 for chosen in itertools.combinations(range(right), len(edges)))
    assert (None not in partner) == rising
    found = [j for j in partner if j is not None]
    assert found == sorted(set(found))


def test_a_greedy_first_fit_would_miss_the_pairing_the_matching_finds() -> None:
    # expected #1 fits calls 0 and 1, expected #2 only call 0: BFCL's greedy order pairs #1 with 0 and fails #2
    assert maximum_matching([[0, 1], [0]], 2) == [1, 0]


# --- the matchers ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "actual", "reason"), [
    ({"type": "integer"}, 5, None),
    ({"type": "integer"}, 5.0, "value: expected integer, got 5.0"),
    ({"type": "integer"}, True, "value: expected integer, got true"),
    ({"type": "number"}, 5, None),
    ({"type": ["string", "null"]}, None, None),
    ({"type": ["string", "null"]}, 1, "value: expected string or null, got 1"),
    ({"normalized": "San Francisco, CA"}, "san francisco ca", None),
    ({"normalized": "it's"}, 'IT"S', None),
    ({"normalized": "a-b"}, "ab c", 'value: expected "a-b" (normalized), got "ab c"'),
    ({"normalized": "1"}, 1, 'value: expected "1" (normalized), got 1'),
    ({"all_of": [{"type": "string"}, {"matches": "py$"}]}, "a.py", None),
    ({"all_of": [{"type": "string"}, {"matches": "py$"}]}, "a.js", 'value: "a.js" does not match /py$/'),
    ({"optional": {"any_of": [1, 2]}}, 3, "value: expected one of [1, 2], got 3"),
    ({"exact": {"a": 1}}, {"a": 1, "b": 2}, "unexpected parameter value.b"),
    ({"exact": {"type": "file"}}, {"type": "file"}, None),
    ({"exact": {"o": {"k": 1}}}, {"o": {"k": 1, "j": 2}}, "unexpected parameter value.o.j"),
    ({"any_of": [{"absent": True}, 4]}, 4, None),
])
def test_each_new_matcher_says_what_differed(spec: Any, actual: Any, reason: str | None) -> None:
    assert value_mismatch(spec, actual) == reason


def test_absence_is_accepted_by_absent_and_optional_at_every_depth() -> None:
    spec = {"unit": {"any_of": [{"absent": True}, "km"]}, "o": {"k": {"all_of": [{"optional": 1}, {"absent": True}]}},
            "n": {"optional": {"type": "integer"}}}
    assert arguments_mismatch(spec, {"o": {}}) is None
    assert arguments_mismatch(spec, {"unit": "km", "o": {}, "n": 2}) is None
    assert arguments_mismatch(spec, {"unit": "mi", "o": {}}) == 'unit: expected one of [{"absent": true}, "km"], got "mi"'
    assert arguments_mismatch(spec, {"o": {}, "n": 2.0}) == "n: expected integer, got 2.0"
    assert arguments_mismatch(spec, {"o": {"k": 1}}) == "o.k: expected absent, got 1"
    assert arguments_mismatch({"u": {"any_of": ["km", {"present": True}]}}, {}) == "u: missing"


def test_normalize_is_bfcls_standardize_string() -> None:
    assert normalize("April 1, 2024") == normalize("april 1 2024") == "april12024"
    assert normalize("x*y^z_w/v.u-t") == "xyzwvut"
    assert normalize("'q'") == '"q"'


@settings(max_examples=200, deadline=None)
@given(text=st.text(st.characters(codec="ascii", categories=("L", "N")), max_size=12),
       noise=st.lists(st.tuples(st.integers(0, 12), st.sampled_from(" ,./-_*^")), max_size=6))
def test_normalized_ignores_case_and_bfcls_noise_characters_anywhere(text: str, noise: list[tuple[int, str]]) -> None:
    noisy = text.swapcase()
    for at, char in noise:
        noisy = noisy[:at] + char + noisy[at:]
    assert value_mismatch({"normalized": text}, noisy) is None
    assert value_mismatch({"normalized": text + "x"}, noisy) == (
        f'value: expected {json.dumps(text + "x")} (normalized), got {json.dumps(noisy)}')


def test_strict_types_hold_values_to_the_schema_at_every_depth() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"},
                                               "o": {"type": "object", "properties": {"k": {"type": "integer"}}},
                                               "l": {"type": "array", "items": {"type": "integer"}}}}
    assert schema_type_mismatch(schema, {"n": 1, "x": 2, "o": {"k": 3, "z": 1.5}, "l": [1, 2], "free": 0.5}) is None
    assert schema_type_mismatch(schema, {"o": {"k": 3.0}}) == "o.k: expected integer, got 3.0 (the tool's parameter type)"
    assert schema_type_mismatch(schema, {"l": [1, 2.5]}) == "l[1]: expected integer, got 2.5 (the tool's parameter type)"
    assert schema_type_mismatch(None, {"n": 1.0}) is None


def test_the_schemas_type_names_are_the_matchers() -> None:
    assert tuple(case_schema()["$defs"]["jsonType"]["enum"]) == TYPE_NAMES


# --- one rule for every user: the trace.calls check and the trajectory match pair calls alike ---------

_TYPED = {"name": "t", "description": "T.", "responses": [{"result": "ok"}],
          "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}
_SPECS = st.sampled_from([1, 2, {"type": "integer"}, {"any_of": [1, "1"]}, {"absent": True}, {"optional": 2}])
_EXPECTED = st.fixed_dictionaries({"name": st.sampled_from(["t", "u"])},
                                  optional={"args": st.dictionaries(st.sampled_from(["x", "y"]), _SPECS, max_size=2),
                                            "exact_args": st.booleans(), "strict_types": st.booleans()})
_RAN = st.builds(lambda name, arguments: Step(0, "c", name, arguments, "ok", False, 0.0), st.sampled_from(["t", "u"]),
                 st.dictionaries(st.sampled_from(["x", "y", "z"]), st.sampled_from([1, 1.0, 2, "1", True]), max_size=2))


@settings(max_examples=300, deadline=None)
@given(expected=st.lists(_EXPECTED, min_size=1, max_size=3), steps=st.lists(_RAN, max_size=4),
       ordered=st.booleans(), exact=st.booleans(), strict=st.booleans())
def test_the_calls_check_passes_exactly_when_the_trajectory_match_pairs_every_reference_call(
        expected: list[dict[str, Any]], steps: list[Step], ordered: bool, exact: bool, strict: bool) -> None:
    trace = {"calls": expected, "calls_ordered": ordered, "exact_args": exact, "strict_types": strict}
    case = make_case(mocks=[_TYPED], expect={"trace": trace})
    assert case.expect.trace is not None
    passed = check_calls(case.expect.trace, list(enumerate(steps, 1)), case, "").passed
    match = run_trajectory_match(case, steps)
    assert match is not None
    if any("args" in call for call in expected):  # else the trajectory pairs by name alone
        assert passed == (match.in_order if ordered else match.any_order)


# --- through the CLI --------------------------------------------------------------------------------

LOOKUP = {"name": "lookup", "description": "Look a key up.", "responses": [{"result": "found"}],
          "parameters": {"type": "object", "properties": {"key": {"type": "string"}, "limit": {"type": "integer"}},
                         "required": ["key"], "additionalProperties": False}}


def _case(case_id: str, trace: dict[str, Any], *calls: dict[str, Any], **more: Any) -> dict[str, Any]:
    script = [{"tool_calls": [call]} for call in calls] + [{"content": "done"}]
    return {"id": case_id, "mocks": [LOOKUP], "turns": ["Look it up."], "expect": {"trace": trace},
            "script": script, **more}


def _lookup(arguments: Any, name: str = "lookup") -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


CASES = [
    _case("ordered-pass", {"calls": [{"name": "lookup", "args": {"key": "a"}}, {"name": "lookup", "args": {"key": "b"}}],
                           "calls_ordered": True}, _lookup({"key": "a"}), _lookup({"key": "c"}), _lookup({"key": "b"})),
    _case("ordered-fail", {"calls": [{"name": "lookup", "args": {"key": "a"}}, {"name": "lookup", "args": {"key": "b"}}],
                           "calls_ordered": True}, _lookup({"key": "b"}), _lookup({"key": "a"})),
    _case("per-call-exact", {"calls": [{"name": "lookup", "args": {"key": "a"}, "exact_args": True},
                                       {"name": "lookup", "args": {"key": "b"}}], "extra_calls": False},
          _lookup({"key": "b", "limit": 2}), _lookup({"key": "a", "limit": 1})),
    _case("refused-only", {"must_include": ["lookup"], "min_calls": 1, "args": {"lookup": {"key": "a"}},
                           "calls": [{"name": "lookup"}], "exact": ["lookup"], "max_calls": 1},
          _lookup({"key": "a", "limit": 1.5})),
    _case("quotes", {"must_include": ["read_file"]}, _lookup("{'path': 'a.txt'}", "read_file"),
          files={"a.txt": "x"}),
    _case("denied", {"avoid": ["bash"], "order": ["lookup"]}, _lookup({"command": "ls"}, "bash"), deny=["bash"]),
    _case("unordered", {"exact_unordered": ["lookup", "lookup", "read_file"]}, _lookup({"key": "a"}),
          _lookup({"path": "a.txt"}, "read_file"), _lookup({"path": "a.txt"}, "read_file"), files={"a.txt": "x"}),
    _case("unordered-pass", {"exact_unordered": ["read_file", "lookup"]}, _lookup({"key": "a"}),
          _lookup({"path": "a.txt"}, "read_file"), files={"a.txt": "x"}),
]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Case id -> its run record, from one CLI run of CASES."""
    root = tmp_path_factory.mktemp("calls")
    (root / "calls.yml").write_text(json.dumps(CASES), encoding="utf-8")
    done = run_cli("run", str(root / "calls.yml"), "--results", str(root / "results"))
    assert done.returncode == 1, done.stdout + done.stderr
    found = [json.loads(p.read_text(encoding="utf-8")) for p in (root / "results").glob("*/runs/*.json")]
    return {run["case"].removeprefix("calls/"): run for run in found}


def _checks(run: dict[str, Any]) -> list[tuple[str, bool, str]]:
    return [(c["check"], c["passed"], c["message"]) for c in run["checks"]]


def test_ordered_calls_need_their_partners_in_order(runs: dict[str, dict[str, Any]]) -> None:
    assert _checks(runs["ordered-pass"]) == [
        ("trace.calls", True, "2 expected call(s) paired one to one in order: #1 lookup = call #1, #2 lookup = call #3")]
    assert _checks(runs["ordered-fail"]) == [
        ("trace.calls", False, ('expected call #2 lookup {"key": "b"} found no partner: call #1 {"key": "b"} fits but '
                                "comes before the partner of an earlier one"))]


def test_exact_args_per_call_and_no_extra_calls(runs: dict[str, dict[str, Any]]) -> None:
    assert _checks(runs["per-call-exact"]) == [
        ("trace.calls", False, ('expected call #1 lookup {"key": "a"} found no partner: nearest call #2 '
                                '{"key": "a", "limit": 1} (unexpected parameter limit)'))]


def test_a_refused_call_is_recorded_and_satisfies_no_check_that_asks_for_a_call(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["refused-only"]
    assert [(s["name"], s["status"], s["is_error"]) for s in run["steps"]] == [("lookup", "refused", True)]
    assert [r["tool_calls"][0]["status"] for r in run["model_requests"][:1]] == ["refused"]
    why = "invalid arguments for lookup: limit: 1.5 is not of type 'integer'"
    assert _checks(run) == [
        ("trace.exact", False, (f"tool calls were [no calls], expected exactly [lookup] (not counted: 1 refused call "
                                f"of lookup: {why})")),
        ("trace.must_include", False, f"never called lookup (1 refused call: {why})"),
        ("trace.max_calls", True, "1 tool call, within the limit of 1"),
        ("trace.min_calls", False, f"0 tool calls, at least 1 required (not counted: 1 refused call of lookup: {why})"),
        ("trace.args", False, (f'no lookup call has arguments matching {{"key": "a"}}: lookup was never called '
                               f"(1 refused call: {why})")),
        ("trace.calls", False, (f"expected call #1 lookup (any arguments) found no partner: lookup was never called "
                                f"(not counted: 1 refused call of lookup: {why})")),
    ]
    assert (run["status"], run["failure"]) == ("fail", "wrong_args")  # lookup was called: its arguments were refused


def test_arguments_that_did_not_parse_count_as_no_call(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["quotes"]
    assert [s["status"] for s in run["steps"]] == ["invalid"]
    assert _checks(run) == [("trace.must_include", False, ("never called read_file (1 invalid call: invalid JSON "
                              "arguments: Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"))]


def test_a_denied_call_breaks_avoid_but_is_no_call(runs: dict[str, dict[str, Any]]) -> None:
    run = runs["denied"]
    assert [s["status"] for s in run["steps"]] == ["refused"]
    assert _checks(run) == [
        ("trace.avoid", False, "called bash 1 time(s), which the case forbids"),
        ("trace.order", False, ("calls [no calls] do not contain [lookup] in that order (not counted: 1 refused call "
                                "of bash: tool 'bash' is denied in this case)")),
    ]


def test_exact_unordered_compares_the_names_as_a_multiset(runs: dict[str, dict[str, Any]]) -> None:
    assert _checks(runs["unordered"]) == [
        ("trace.exact_unordered", False, ("tool calls were [lookup, read_file, read_file], expected [lookup, lookup, "
                                          "read_file] in any order (missing 1 lookup, 1 extra read_file)"))]
    assert _checks(runs["unordered-pass"]) == [
        ("trace.exact_unordered", True, "tool calls [lookup, read_file] are [read_file, lookup] in some order")]


@pytest.mark.parametrize(("trace", "more", "error"), [
    ({"calls": [{"name": "lookpu"}]}, {}, ("cases/c.yml:6:24: expect.trace.calls[0].name: unknown tool 'lookpu'"
                                           " (did you mean 'lookup'?)")),
    ({"calls": [{"name": "bash"}]}, {"tools": ["lookup"]},
     ("cases/c.yml:7:24: expect.trace.calls[0].name: tool 'bash' is not offered by the case"
      " (a call of it is refused and never counts; add it to tools (offered: lookup))")),
    ({"exact_unordered": ["lookup", "bash"]}, {"deny": ["bash"]},
     ("cases/c.yml:7:35: expect.trace.exact_unordered[1]: tool 'bash' is denied by the case"
      " (a call of it is refused and never counts; remove it from deny)")),
    ({"calls": [{"name": "lookup", "args": {"key": {"type": "int"}}}]}, {},
     ("cases/c.yml:6:59: expect.trace.calls[0].args.key.type: 'int' is not one of 'string', 'integer', 'number',"
      " 'boolean', 'array', 'object', 'null' (did you mean 'integer'?)")),
])
def test_calls_name_offered_tools_and_matchers_are_checked_when_loading(
        tmp_path: Path, trace: dict[str, Any], more: dict[str, Any], error: str) -> None:
    case = {"id": "c", **more, "mocks": [{**LOOKUP, "parameters": {"type": "object"}}], "turns": ["t"],
            "expect": {"trace": trace}}
    path = tmp_path / "cases" / "c.yml"
    path.parent.mkdir()
    path.write_text(_yaml(case), encoding="utf-8")
    with pytest.raises(CaseFileError) as caught:
        load_file(path)
    assert str(caught.value).replace(str(tmp_path) + "/", "") == error


def _yaml(case: dict[str, Any]) -> str:
    """``case`` as one YAML list item, a key a line, so an error's position is known."""
    lines = ["- id: " + case["id"]]
    lines += [f"  {key}: {json.dumps(value)}" for key, value in case.items() if key not in ("id", "expect")]
    lines += ["  expect:", "    trace:"] + [f"      {k}: {json.dumps(v)}" for k, v in case["expect"]["trace"].items()]
    return "\n".join(lines) + "\n"


def test_the_new_skeleton_passes_because_its_read_file_call_ran(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    assert run_cli("new", "demo/one", cwd=tmp_path).returncode == 0
    done = run_cli("run", "cases", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = (tmp_path / "r").glob("*/runs/*.json")
    run = json.loads(path.read_text(encoding="utf-8"))
    assert [(s["name"], s["status"], s["is_error"]) for s in run["steps"]] == [("read_file", "executed", False)]
    assert ("trace.must_include", True, "called read_file 1 time(s)") in _checks(run)
