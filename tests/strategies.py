"""Hypothesis strategies for what a case file may hold, and the property every loader test checks on it:
loading gives cases or positioned CaseFileErrors, nothing else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from runner.errors import CaseFileError
from runner.spec.case import Case
from runner.spec.casefile import load_file, validate_file

REAL_KEYS = (
    "id", "description", "tags", "fixture", "files", "setup", "env", "vars", "turns", "system", "tools",
    "deny", "mocks", "expect", "timeout", "runs", "script", "defaults", "cases", "verify", "contains",
    "not_contains", "matches", "exists", "equals", "response_contains", "response_matches", "max_turns",
    "trace", "max_calls", "args", "judge", "rubric", "name", "parameters", "responses", "when", "result",
    "content", "tool_calls", "arguments",
)  # fmt: skip

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
keys = st.sampled_from((*REAL_KEYS, 0, 1)) | st.text(max_size=8)  # a few non-text keys
anything = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=25,
)
text = st.text(min_size=1, max_size=10)
good_case = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "fix-test"]), "turns": st.lists(text, min_size=1, max_size=3)},
    optional={
        "tags": st.lists(text, max_size=2),
        "setup": text | st.lists(text, max_size=2),
        "env": st.dictionaries(st.sampled_from(["A", "B_1"]), st.integers() | st.booleans() | text),
        "expect": st.fixed_dictionaries(
            {},
            optional={
                "verify": text,
                "max_turns": st.integers(0, 50),
                "response_matches": st.sampled_from([r"\Aok\z", "(unclosed", ["a+", "b"]]),
                "files": st.dictionaries(text, st.fixed_dictionaries({}, optional={"contains": text})),
            },
        ),
    },
)
junk_case = st.fixed_dictionaries(
    {"id": st.text(max_size=6) | anything, "turns": anything},
    optional={key: anything for key in REAL_KEYS[1:18] if key != "turns"},
)
cases = st.lists(good_case | junk_case | anything, max_size=3)
wrapped = st.fixed_dictionaries({"cases": cases}, optional={"defaults": good_case | junk_case | anything})
files = cases | wrapped | anything


def check(data: Any, folder: Path) -> None:
    """Load ``data`` as a case file: cases, or CaseFileErrors that all have a line."""
    path = folder / "fuzz.yml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    check_case_file(path, folder)


def check_case_file(path: Path, folder: Path) -> None:
    """The case file at ``path`` loads, or fails with CaseFileErrors that all have a line, the first
    of them what validation reports first."""
    errors = validate_file(path, fixtures_dir=folder)
    assert all(isinstance(e, CaseFileError) and e.location and e.location.line for e in errors)
    try:
        loaded = load_file(path, fixtures_dir=folder)
    except CaseFileError as e:
        assert errors and e.render() == errors[0].render()
    else:
        assert not errors and all(isinstance(c, Case) for c in loaded)
