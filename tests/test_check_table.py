"""A check kind in one place: the check table (runner.checks.table) is what the case schema, the
loader's list normalisation, the extra rules' regex compilation, the registry and the scorer know."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runner.checks.base import CheckContext, CheckResult
from runner.checks.registry import CHECKS, FUNCTIONS
from runner.checks.table import KINDS, WHOLE, CheckKind, KeyPath, Points
from runner.errors import CaseFileError
from runner.kinds import Category, FailureCause
from runner.spec import schema
from runner.spec.casefile import load_file
from runner.spec.expect import TraceExpect
from tests.helpers import cli_output

SCHEMA = schema.case_schema()
EXPECT = SCHEMA["properties"]["expect"]["properties"]
TURN_EXPECT = SCHEMA["$defs"]["turn"]["properties"]["expect"]["properties"]


def test_the_schema_names_the_tables_kinds_in_its_order() -> None:
    assert list(EXPECT) == list(KINDS)
    assert list(TURN_EXPECT) == [name for name, kind in KINDS.items() if kind.per_turn]


def test_the_registry_has_a_function_for_each_kind_that_is_a_check() -> None:
    checks = [name for name, kind in KINDS.items() if kind.category is not None]
    # max_turns is a limit the run enforces, attack the attacker's checks (run apart, runner.run.injection)
    assert list(FUNCTIONS) == list(CHECKS) == checks == [name for name in KINDS if name not in ("max_turns", "attack")]


def test_each_cause_is_a_result_of_its_kind() -> None:
    for name, kind in KINDS.items():
        assert all(result == name or result.startswith(f"{name}.") for result in kind.causes), name


def _nest(keys: KeyPath, value: Any) -> Any:
    """``value`` placed at ``keys`` ("*" becoming a file name) inside fresh mappings."""
    return value if not keys else {("a.txt" if keys[0] == "*" else keys[0]): _nest(keys[1:], value)}


def _dig(value: Any, keys: KeyPath) -> Any:
    """What lies at ``keys`` in a typed expectation: a mapping's item ("*": the file name), a field."""
    if not keys:
        return value
    inner = value["a.txt"] if keys[0] == "*" else getattr(value, keys[0])
    return _dig(inner, keys[1:])


def _case_file(tmp_path: Path, expect: dict[str, Any]) -> Path:
    import json  # JSON is YAML: the value is written exactly

    path = tmp_path / "t.yml"
    path.write_text(json.dumps([{"id": "c", "turns": ["Hi."], "expect": expect}]), encoding="utf-8")
    return path


LIST_KEYS = [(name, keys) for name, kind in KINDS.items() for keys in kind.list_keys]
REGEX_KEYS = [(name, keys) for name, kind in KINDS.items() for keys in kind.regex_keys]


@pytest.mark.parametrize(("name", "keys"), LIST_KEYS, ids=[f"{n}{''.join('.' + k for k in p)}" for n, p in LIST_KEYS])
def test_each_list_key_takes_a_string_or_a_list_and_loads_as_a_list(name: str, keys: KeyPath, tmp_path: Path) -> None:
    one, two = ("grep", "bash") if name == "trace" else ("x", "y")  # the trace's lists name tools
    for written in (one, [one, two]):
        (case,) = load_file(_case_file(tmp_path, {name: _nest(keys, written)}))
        assert _dig(case.expect.spec(name), keys) == ((one,) if written == one else (one, two))


@pytest.mark.parametrize(("name", "keys"), REGEX_KEYS, ids=[f"{n}{''.join('.' + k for k in p)}" for n, p in REGEX_KEYS])
def test_each_regex_key_is_compiled_when_the_file_loads(name: str, keys: KeyPath, tmp_path: Path) -> None:
    path = _case_file(tmp_path, {name: _nest(keys, ["ok", "(unclosed"])})
    where = ".".join(["expect", name, *("a.txt" if k == "*" else k for k in keys)])
    with pytest.raises(CaseFileError) as caught:
        load_file(path)
    assert caught.value.path == f"{where}[1]"
    assert caught.value.message == "invalid regex '(unclosed': missing ) at position 9"


def test_a_matcher_key_compiles_every_matcher_below_it(tmp_path: Path) -> None:
    assert [(n, k.matcher_keys) for n, k in KINDS.items() if k.matcher_keys] == [
        ("response_json", (("paths",),)), ("trace", (("args",), ("calls",)))]
    path = _case_file(tmp_path, {"trace": {"args": {"bash": {"command": {"matches": "["}}}}})
    with pytest.raises(CaseFileError) as caught:
        load_file(path)
    assert (caught.value.path, caught.value.message) == ("expect.trace.args.bash.command.matches",
                                                         "invalid regex '[': unterminated character set at position 1")
    calls = {"trace": {"calls": [{"name": "bash", "args": {"command": {"any_of": ["ls", {"matches": "("}]}}}]}}
    with pytest.raises(CaseFileError) as caught:
        load_file(_case_file(tmp_path, calls))
    assert (caught.value.path, caught.value.message) == ("expect.trace.calls[0].args.command.any_of[1].matches",
                                                         "invalid regex '(': missing ) at position 1")


@pytest.fixture
def shout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A made-up check kind ``shout`` (texts the reply must hold in capitals), added to the table,
    the schema and the registry of this process only."""
    def check_shout(spec: Any, ctx: CheckContext) -> list[CheckResult]:
        return [CheckResult("shout", s.upper() in ctx.trajectory.final_reply, f"never shouted {s}") for s in spec]

    kind = CheckKind("shout", Category.OUTCOME, list_keys=(WHOLE,), regex_keys=(WHOLE,),
                     causes={"shout": Points(FailureCause.MISSING_OUTPUT)})
    full = copy.deepcopy(SCHEMA)
    full["properties"]["expect"]["properties"]["shout"] = {"$ref": "#/$defs/stringOrList"}
    monkeypatch.setitem(KINDS, "shout", kind)
    monkeypatch.setitem(FUNCTIONS, "shout", check_shout)
    monkeypatch.setitem(CHECKS, "shout", check_shout)
    monkeypatch.setattr(schema, "case_schema", lambda: copy.deepcopy(full))
    caches = (schema._schemas, schema._validators, schema.compiled)
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:
        cache.cache_clear()


def test_a_kind_added_to_the_table_is_loaded_normalised_compiled_and_run(shout: None, tmp_path: Path) -> None:
    path = _case_file(tmp_path, {"shout": "done"})
    (case,) = load_file(path)
    assert case.expect.spec("shout") == ("done",)
    _case_file(tmp_path, {"shout": ["ok", "(bad"]})
    code, out, err = cli_output(["validate", str(path)])
    assert code == 4
    assert err == (f"error: {path}:1:59: expect.shout[1]: invalid regex '(bad': "
                   "missing ) at position 4\n")
    path.write_text('- {id: c, turns: [Hi.], expect: {shout: done}, script: [{content: "DONE? no: done"}]}\n')
    code, out, err = cli_output(["run", str(path), "--results", str(tmp_path / "r")])
    assert (code, out.splitlines()[:2]) == (0, ["PASS t/c", "1/1 passed"])
    path.write_text('- {id: c, turns: [Hi.], expect: {shout: done}, script: [{content: "", finish_reason: content_filter}]}\n')
    code, out, err = cli_output(["run", str(path), "--output", "json", "--results", str(tmp_path / "r2")])
    assert code == 1
    import json

    (run,) = json.loads(out)["runs"]
    assert (run["failure"], [(c["check"], c["category"]) for c in run["checks"]]) == (
        "missing_output", [("shout", "outcome")])


def test_a_bad_regex_is_shown_as_written_its_backslashes_single(tmp_path: Path) -> None:
    path = tmp_path / "t.yml"
    path.write_text("- id: c\n  turns: [Hi.]\n  expect:\n    response_matches: ['(?<!\\d', \"it's (\"]\n")
    code, _out, err = cli_output(["validate", str(path)])
    assert (code, err.splitlines()) == (4, [
        f"error: {path}:4:24: expect.response_matches[0]: invalid regex '(?<!\\d': missing ) at position 6",
        f"error: {path}:4:34: expect.response_matches[1]: invalid regex \"it's (\": missing ) at position 6",
    ])


def test_response_contains_and_must_include_take_one_string_alike(tmp_path: Path) -> None:
    path = tmp_path / "t.yml"
    path.write_text(
        "- id: c\n  turns: [Find it.]\n"
        "  expect: {response_contains: found, trace: {must_include: grep, avoid: bash}}\n"
        "  script: [{tool_calls: [{name: grep, arguments: {pattern: x}}]}, {content: found}]\n"
        "- id: t\n  turns: [{content: Find it., expect: {response_contains: lost, trace: {must_include: glob}}}]\n"
        "  script: [{tool_calls: [{name: grep, arguments: {pattern: x}}]}, {content: found}]\n")
    (c, t) = load_file(path)
    assert (c.expect.response_contains, c.expect.trace) == (("found",), TraceExpect(must_include=("grep",), avoid=("bash",)))
    assert (t.turn_expect[0].response_contains, t.turn_expect[0].trace) == (("lost",), TraceExpect(must_include=("glob",)))
    code, out, err = cli_output(["run", str(path), "--results", str(tmp_path / "r")])
    assert (code, err.splitlines()[:-1]) == (1, [])
    assert out.splitlines()[:4] == ["PASS t/c", "FAIL t/t", "  turn 1: response missing \"lost\"",
                                    "  turn 1: never called glob (calls: grep)"]
