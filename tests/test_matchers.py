"""Argument matchers (BFCL-style) and the ``expect.trace.args`` check built on them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runner.checks.base import CheckContext
from runner.checks.trace import check_trace
from runner.run.trajectory import Step, Trajectory
from runner.spec.matchers import arguments_mismatch, is_matcher, value_mismatch
from tests.helpers import make_case


@pytest.mark.parametrize(
    ("spec", "actual"),
    [
        (2, 2.0),
        (2.0, 2),
        (0.5, 0.5),
        ("a", "a"),
        (None, None),
        ({"depth": 1, "opts": {"x": [1, 2.0]}}, {"depth": 1.0, "opts": {"x": [1.0, 2], "y": 3}, "z": 0}),
        ([{"a": 1}], [{"a": 1, "b": 2}]),
        ({"any_of": ["a.txt", "./a.txt"]}, "./a.txt"),
        ({"any_of": [1, {"matches": "^v"}]}, "v2"),
        ({"matches": r"\Aconfig/.*\.toml\z"}, "config/settings.toml"),
        ({"contains": "settings"}, "config/settings.toml"),
        ({"contains": "b"}, ["a", "b"]),
        ({"present": True}, None),
        ({"k": {"any_of": [1, 2]}}, {"k": 2.0}),
    ],
)
def test_value_matches(spec: Any, actual: Any) -> None:
    assert value_mismatch(spec, actual) is None


@pytest.mark.parametrize(
    ("spec", "actual", "reason"),
    [
        (2, 2.5, "value: expected 2, got 2.5"),
        (1, True, "value: expected 1, got true"),
        (True, 1, "value: expected true, got 1"),
        ("1", 1, 'value: expected "1", got 1'),
        ({"a": {"b": 1}}, {"a": {"b": 2}}, "value.a.b: expected 1, got 2"),
        ({"a": 1}, "a", 'value: expected an object, got "a"'),
        ([1, 2], [1], "value: expected [1, 2], got [1]"),
        ([1, {"x": 1}], [1, {"x": 0}], "value[1].x: expected 1, got 0"),
        ({"any_of": ["a", "b"]}, "c", 'value: expected one of ["a", "b"], got "c"'),
        ({"matches": "^a$"}, "ab", 'value: "ab" does not match /^a$/'),
        ({"matches": "1"}, 1, "value: 1 does not match /1/"),
        ({"contains": "z"}, "abc", 'value: "abc" does not contain "z"'),
        ({"absent": True}, 3, "value: expected absent, got 3"),
    ],
)
def test_value_mismatch_names_the_difference(spec: Any, actual: Any, reason: str) -> None:
    assert value_mismatch(spec, actual) == reason


def test_partial_by_default_exact_forbids_extra_parameters_at_every_depth() -> None:
    spec = {"path": "a.txt", "opts": {"n": 1}}
    call = {"path": "a.txt", "opts": {"n": 1}}
    assert arguments_mismatch(spec, {**call, "limit": 5}) is None
    assert arguments_mismatch(spec, {**call, "limit": 5}, exact=True) == "unexpected parameter limit"
    nested = {"path": "a.txt", "opts": {"n": 1, "m": 2}}
    assert arguments_mismatch(spec, nested) is None
    assert arguments_mismatch(spec, nested, exact=True) == "unexpected parameter opts.m"
    assert arguments_mismatch(spec, call, exact=True) is None


def test_missing_is_not_absent() -> None:
    assert arguments_mismatch({"limit": 5}, {"path": "a"}) == "limit: missing"
    assert arguments_mismatch({"limit": None}, {"path": "a"}) == "limit: missing"
    assert arguments_mismatch({"limit": None}, {"limit": None}) is None
    assert arguments_mismatch({"limit": {"absent": True}}, {"path": "a"}) is None
    assert arguments_mismatch({"limit": {"absent": True}}, {"limit": None}) == "limit: expected absent, got null"
    assert arguments_mismatch({"limit": {"present": True}}, {}) == "limit: missing"
    assert arguments_mismatch({"limit": {"present": True}}, {"limit": None}) is None
    assert arguments_mismatch({"limit": {"absent": True}}, None) is None


def test_a_mapping_is_a_matcher_only_with_one_matcher_key() -> None:
    assert is_matcher({"any_of": [1]})
    assert not is_matcher({"contains": "a", "other": 1})
    # a two-key mapping is a nested object spec, compared key by key
    assert value_mismatch({"contains": "a", "n": 1}, {"contains": "a", "n": 1}) is None


def _steps(*calls: tuple[str, dict[str, Any] | None]) -> list[Step]:
    return [Step(0, f"c{i}", name, args, "ok", False, 0.0) for i, (name, args) in enumerate(calls)]


def _trace(spec: dict[str, Any], steps: list[Step]):
    case = make_case(expect={"trace": spec})
    ctx = CheckContext(case, Path("."), Trajectory(steps=steps), lambda command: None)  # type: ignore[arg-type]
    return check_trace(case.expect.trace, ctx)


def test_args_check_lists_the_calls_seen_and_the_parameter_that_differed() -> None:
    steps = _steps(("read_file", {"path": "settings.toml"}), ("glob", {"pattern": "*"}), ("read_file", {"path": "b", "limit": 3}))
    [result] = _trace({"args": {"read_file": {"path": "config/settings.toml"}}}, steps)
    assert not result.passed and result.check == "trace.args"
    assert result.message == (
        'no read_file call has arguments matching {"path": "config/settings.toml"}: '
        '#1 {"path": "settings.toml"} (path: expected "config/settings.toml", got "settings.toml"); '
        '#3 {"limit": 3, "path": "b"} (path: expected "config/settings.toml", got "b")'
    )


def test_args_check_passes_when_any_call_matches_and_says_never_called() -> None:
    steps = _steps(("read_file", {"path": "x"}), ("read_file", {"path": "config/settings.toml", "limit": 10}))
    [ok] = _trace({"args": {"read_file": {"path": {"contains": "settings"}}}}, steps)
    assert ok.passed
    [exact] = _trace({"args": {"read_file": {"path": "config/settings.toml"}}, "exact_args": True}, steps)
    assert not exact.passed
    assert "#2 " in exact.message and "(unexpected parameter limit)" in exact.message
    assert "arguments exactly matching" in exact.message
    [never] = _trace({"args": {"grep": {"pattern": "x"}}}, steps)
    assert never.message.endswith("grep was never called")


def test_order_is_a_subsequence_with_gaps() -> None:
    steps = _steps(("bash", {}), ("read_file", {}), ("edit_file", {}), ("bash", {}))
    assert all(r.passed for r in _trace({"order": ["bash", "edit_file", "bash"]}, steps))
    assert not any(r.passed for r in _trace({"order": ["edit_file", "read_file"]}, steps))
