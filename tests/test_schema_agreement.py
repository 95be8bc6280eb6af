"""Property: jsonschema-rs and jsonschema (as the loader builds it) accept the same cases.

The case loader asks the compiled validator first and trusts a yes; only a no
reaches jsonschema, which then reports the errors, and a case both judge counts
as valid when either accepts it. So rs saying yes where jsonschema says no lets
an invalid case through unexplained, and jsonschema saying yes where rs says no
(Python's ``$`` before a final newline) lets it through silently.
Values are bundled cases with random parts replaced, removed or added, so every
corner of the schema gets wrong values of every type.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from runner.spec.casefile import check_file
from runner.spec.positions import Spot
from runner.spec.schema import _validators, compiled
from runner.spec.source import parse, to_plain
from tests.helpers import BUNDLED_FILES

ROOT = Path(__file__).resolve().parent.parent


def _bundled() -> list[dict[str, Any]]:
    """Every bundled case mapping and every defaults mapping, as written."""
    found: list[dict[str, Any]] = []
    for path in BUNDLED_FILES:
        data = to_plain(parse(path.read_text(encoding="utf-8"), str(path)), str(path))
        if isinstance(data, dict):
            found += [data.get("defaults") or {}, *data["cases"]]
        else:
            found += data
    return found


BUNDLED = _bundled()
scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats()
           | st.text(max_size=8) | st.sampled_from(["a\n", "", "A b", "x" * 65, "-1", "bash"]))
anything = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


@st.composite
def mutated_cases(draw: st.DrawFn) -> Any:
    """A bundled case with one to three random edits somewhere inside it."""
    case = copy.deepcopy(draw(st.sampled_from(BUNDLED)))
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = case
        while True:
            keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
            if not keys:
                break
            key = draw(st.sampled_from(keys))
            if not isinstance(parent[key], (dict, list)) or not parent[key] or draw(st.booleans()):
                break
            parent = parent[key]
        edit = draw(st.sampled_from(["like", "like", "replace", "remove", "add"]))
        if edit == "add" or not keys:
            if isinstance(parent, dict):
                parent[draw(st.text(max_size=6) | st.sampled_from(sorted(parent) or ["id"]))] = draw(anything)
            else:
                parent.append(draw(anything))
        elif edit == "remove":
            del parent[key]
        elif edit == "like":
            parent[key] = draw(_like(parent[key]))
        else:
            parent[key] = draw(anything)
    return case


def _like(value: Any) -> st.SearchStrategy[Any]:
    """Another value of ``value``'s type: near misses for ranges, patterns, enums and sizes."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, (int, float)):
        return st.integers(-3, 700) | st.floats(-1, 1e4)
    if isinstance(value, str):
        return st.text(max_size=8) | st.sampled_from(["a\n", "", "A b", "x" * 65, "bash", "read_file", "*"])
    if isinstance(value, list):
        return st.lists(st.sampled_from(value), max_size=len(value) + 1) if value else st.just([])
    if isinstance(value, dict) and value:
        return st.dictionaries(st.sampled_from(sorted(value)), st.sampled_from(list(value.values())))
    return anything


@settings(max_examples=600, deadline=None)
@given(mutated_cases())
def test_jsonschema_rs_and_jsonschema_agree(case: Any) -> None:
    (fast_full, fast_partial), (full, partial, _) = compiled(), _validators()
    assert full.is_valid(case) is fast_full.is_valid(case), list(full.iter_errors(case))[:1]
    assert partial.is_valid(case) is fast_partial.is_valid(case), list(partial.iter_errors(case))[:1]


def test_an_invalid_case_is_still_reported_where_it_is_written(tmp_path: Path) -> None:
    text = "- id: a\n  turns: [hi]\n- id: b\n  turns: [hi]\n  expect: {max_turns: many}\n"
    node = parse(text, "g.yml")
    checked, errors = check_file(Spot("g.yml", node), to_plain(node, "g.yml"), tmp_path)
    assert len(checked) == 2
    assert [(e.location.line, e.location.column) for e in errors if e.location] == [(5, 23)]
    assert "expected an integer" in errors[0].message
