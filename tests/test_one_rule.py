"""Each small rule is written once and every place that needs it uses that one: the order errors are
listed in, the first line of a message, a value written as one string or a list."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.cli import main
from runner.errors import CaseFileError, Location, UserError, in_file_order
from runner.spec.case import as_list
from runner.text import first_line

positions = st.tuples(st.none() | st.integers(1, 9), st.none() | st.integers(1, 9))


@given(st.lists(st.none() | positions, max_size=8))
def test_errors_are_listed_by_line_then_column_unplaced_first(places: list[tuple[int | None, int | None] | None]) -> None:
    errors = [UserError(f"e{i}", None if at is None else Location("f.yml", *at)) for i, at in enumerate(places)]
    keys = [(0, 0) if at is None else (at[0] or 0, at[1] or 0) for at in places]
    expected = [error for _, _, error in sorted(zip(keys, range(len(errors)), errors))]
    assert in_file_order(errors) == expected


def test_a_config_file_lists_schema_and_extra_rule_errors_in_file_order(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "tooltrial.yml"
    config.write_text("judge: nobody\njobs: 0\nproviders:\n  scripted: {model: a/b}\n", encoding="utf-8")
    case = tmp_path / "g.yml"
    case.write_text("- id: a\n  turns: [hi]\n  script: [{content: x}]\n", encoding="utf-8")
    argv = ["run", "--config", str(config), str(case), "-p", "scripted", "--results", str(tmp_path / "r")]
    assert main(argv) == 4
    assert capsys.readouterr().err.splitlines() == [
        f"error: {config}:1:8: judge: unknown provider 'nobody' (name an alias under providers, a model such as"
        " ollama/qwen3, or scripted)",
        f"error: {config}:2:7: jobs: must be at least 1, got 0",
        f"error: {config}:4:3: providers.scripted: 'scripted' is the built-in offline provider"
        " (give this alias another name)",
    ]
    assert not (tmp_path / "r").exists()


@given(st.text(), st.text(min_size=1))
def test_the_first_line_of_a_message(text: str, default: str) -> None:
    assert first_line(text, default) == (text.splitlines()[0] if text else default)
    assert first_line(None, default) == default


def test_one_string_or_a_list_of_them() -> None:
    assert as_list("make test") == ["make test"]
    assert as_list(["a", "b"]) == ["a", "b"]
    assert as_list(("a",)) == ["a"]
    assert as_list([]) == []


def test_a_case_error_without_a_line_comes_first() -> None:
    late, unplaced = CaseFileError("late", Location("f.yml", 3, 1)), CaseFileError("group", Location("f.yml"))
    assert in_file_order([late, unplaced]) == [unplaced, late]
