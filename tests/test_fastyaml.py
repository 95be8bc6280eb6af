"""The fast path reads a case file exactly as the round-trip parser does, or gives up."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import CaseFileError
from runner.spec.casefile import load_file, validate_file
from runner.spec.fastyaml import fast_load
from runner.spec.source import parse, to_plain
from tests.helpers import BUNDLED_FILES
from tests.strategies import files

ROOT = Path(__file__).resolve().parent.parent


def _slow(text: str) -> Any:
    return to_plain(parse(text, "t.yml"), "t.yml")


@pytest.mark.parametrize(
    "text",
    ["a: 1\na: 2", "- &x 1\n- *x", "a: !!str 3", "%YAML 1.1\n---\na: 1", "a: 1\n---\nb: 2", "? [a]\n: 1",
     "1: one", "a: 0x1F", "a: 1.e5", "a: .inf", "a: 1_000", "a: 010", "a: 2024-01-01", "<<: {a: 1}", "a: [1,",
     "a:\tb", "a: =", "a: '\x85'", "a: b\u2028c", "- a\u2029"],
)  # fmt: skip
def test_gives_up_on_what_only_the_round_trip_parser_reads_exactly(text: str) -> None:
    assert fast_load(text) is None


def test_reads_plain_data_with_yaml_1_2_types_and_mapping_lines() -> None:
    text = "- id: a\n  on: yes\n  n: [1, -2, 2.50, true, FALSE, ~, null, '', x.y, '1']\n- {id: b}\n"
    doc = fast_load(text)
    assert doc is not None
    assert doc.data == _slow(text) == [
        {"id": "a", "on": "yes", "n": [1, -2, 2.5, True, False, None, None, "", "x.y", "1"]},
        {"id": "b"},
    ]
    assert [doc.lines[id(case)] for case in doc.data] == [1, 4]


@pytest.mark.parametrize("scalar", ["1e3", "1E+3", "-2.5e10", "1.0e-09", "8.854e-12", "0e0", "+1.5E-2"])
def test_a_fraction_with_an_exponent_is_read_on_the_fast_path_as_ruamel_reads_it(scalar: str) -> None:
    doc = fast_load(f"k: {scalar}")
    assert doc is not None
    assert doc.data == _slow(f"k: {scalar}") == {"k": float(scalar)}


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="-+.0123456789eExXoObB_:~tTrRuUfFaAlLsSnN<= ", max_size=8))
def test_a_plain_scalar_is_typed_as_ruamel_types_it(scalar: str) -> None:
    text = f"k: {scalar}"
    doc = fast_load(text)
    if doc is not None:
        assert doc.data == _slow(text)


def _both_ways(folder: Path, data: Any) -> tuple[Any, Any]:
    path = folder / "fuzz.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")

    def read() -> Any:
        try:
            return load_file(path, fixtures_dir=folder), [e.render() for e in validate_file(path, folder)]
        except CaseFileError as e:
            return e.render()

    fast = read()
    with mock.patch("runner.spec.casefile.fast_load", lambda text: None):
        return fast, read()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files)
def test_any_case_file_loads_the_same_on_both_paths(data: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        fast, slow = _both_ways(Path(folder), data)
        assert fast == slow


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="- :[]{}#&*!|>'\"\t\n ab1", max_size=30))
def test_any_text_reads_the_same_on_both_paths_or_the_fast_one_gives_up(text: str) -> None:
    doc = fast_load(text)
    if doc is not None:
        assert doc.data == _slow(text)


@pytest.mark.parametrize("name", sorted(p.name for p in BUNDLED_FILES))
def test_the_bundled_cases_load_the_same_on_both_paths(name: str) -> None:
    path = ROOT / "cases" / name
    assert fast_load(path.read_text(encoding="utf-8")) is not None
    fast = load_file(path)
    with mock.patch("runner.spec.casefile.fast_load", lambda text: None):
        assert load_file(path) == fast
