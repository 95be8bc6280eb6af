"""A case file with a problem is read again with positions for only the cases the problem lies in."""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest

from runner.spec import casefile, source
from runner.spec.casefile import load_file, validate_file
from runner.spec.fastyaml import fast_load
from runner.spec.foreign.bfclfile import case_file_text

CASE = "- id: c{n}\n  turns: [hi]\n  expect: {{response_contains: ok}}\n"
WARNED = ("- id: c{n}\n  turns: [hi]\n"
          "  expect: {{response_contains: ok, trace: {{calls: [{{name: read_file, args: {{nope: {{absent: true}}}}}}]}}}}\n")


def _file(tmp_path: Path, warned: set[int], count: int = 200, header: str = "") -> Path:
    path = tmp_path / "many.yml"
    path.write_text(header + "".join((WARNED if n in warned else CASE).format(n=n) for n in range(count)))
    return path


def _parsed_lengths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of non-blank lines of each text the round-trip parser reads."""
    read: list[int] = []
    real = source.parse

    def counting(text: str, file: str) -> object:
        read.append(sum(bool(line.strip()) for line in text.splitlines()))
        return real(text, file)

    monkeypatch.setattr(casefile, "parse", counting)
    return read


def _rendered(path: Path) -> list[str]:
    return [e.render() for e in validate_file(path)]


def test_a_warning_in_one_case_reads_only_that_case_again_at_its_own_line(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path, {150})
    with mock.patch.object(casefile, "fast_load", lambda text: None):
        whole = _rendered(path)
    read = _parsed_lengths(monkeypatch)
    assert _rendered(path) == whole
    assert whole == [(f"{path}:453:76: expect.trace.calls[0].args: read_file has no parameter 'nope', so {{absent: true}} "
                     "always holds (read_file's parameters here: path, offset, limit)")]  # case 150: lines 451-453
    assert read == [3]  # the case's own three lines, not the file's 600
    assert len(load_file(path)) == 200  # a warning stops no case


def test_an_error_in_two_cases_under_defaults_names_both_where_they_are(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    text = "defaults:\n  tags: [x]\ncases:\n" + "".join(
        (CASE.replace("turns: [hi]", "turns: 7") if n in (3, 90) else CASE).format(n=n) for n in range(100))
    path = tmp_path / "many.yml"
    path.write_text(text)
    with mock.patch.object(casefile, "fast_load", lambda text: None):
        whole = _rendered(path)
    read = _parsed_lengths(monkeypatch)
    assert _rendered(path) == whole
    assert [e.split(": ")[0] for e in whole] == [f"{path}:14:10", f"{path}:275:10"]
    assert read == [2 + 1 + 6]  # the defaults, 'cases:' and the two cases


def test_a_problem_of_no_one_case_reads_the_whole_file_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "many.yml"
    path.write_text("".join(CASE.format(n=n % 50) for n in range(60)))  # ids c0..c9 twice
    read = _parsed_lengths(monkeypatch)
    errors = _rendered(path)
    assert read == [180]
    assert len(errors) == 10 and all("c" in e and "id" in e for e in errors)


def test_an_imported_file_is_read_on_the_fast_path_shared_values_and_exponents_too() -> None:
    shared = {"type": "object", "properties": {"x": {"type": "number", "default": 1e-09}}}
    cases = [{"id": f"e{n}", "turns": ["q"], "mocks": [{"name": "f", "description": "d", "parameters": shared}]}
             for n in range(2)]
    text = case_file_text("simple_python", cases, "q.json")
    assert "&" not in text and "*id" not in text
    doc = fast_load(text)
    assert doc is not None
    assert doc.data["cases"][1]["mocks"][0]["parameters"]["properties"]["x"]["default"] == 1e-09
