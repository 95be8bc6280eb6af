"""Cases from datasets and matrices (runner.spec.dataset): ids, rendered checks, the rows' errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.spec import dataset
from tests.helpers import cli_output

SUMS = """\
- id: add
  dataset: {file: sums.csv, id: name}
  turns: ["What is {{ a }} + {{ b }}?"]
  expect:
    response_contains: "{{ total }}"
    files:
      "{{ name }}.txt": {contains: "{{ a }}"}
  files:
    "{{ name }}.txt": "a={{ a }}"
  script:
    - content: "It is {{ reply }}."
"""


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder / next(iter(files))


def test_a_csv_dataset_expands_to_its_id_column_and_renders_the_checks(tmp_path: Path) -> None:
    path = _write(tmp_path, {"math.yml": SUMS, "sums.csv": 'name,a,b,total,reply\none,1,1,2,2\ntwo,1,2,3,"4, no"\n'})
    code, out, err = cli_output(["list", str(path)])
    assert (code, out.split()[:2], err) == (0, ["math/one", "math/two"], "")
    code, out, err = cli_output(["run", str(path), "--results", str(tmp_path / "r"), "--output", "json"])
    assert (code, err.splitlines()[:3]) == (1, ["PASS math/one", "FAIL math/two", '  response missing "3"'])
    one, two = json.loads(out)["runs"]
    assert (one["case"], one["status"], two["case"], two["status"]) == ("math/one", "pass", "math/two", "fail")
    assert [(c["check"], c["passed"], c["message"]) for c in two["checks"]] == [
        ("files", True, 'two.txt contains "1"'), ("response_contains", False, 'response missing "3"')]
    record = json.loads(next((tmp_path / "r").glob("*/runs/0002-*.json")).read_text())
    assert [m["content"] for m in record["messages"][1:]] == ["What is 1 + 2?", "It is 4, no."]


def test_a_jsonl_dataset_expands_to_numbered_ids_that_c_globs_match(tmp_path: Path) -> None:
    case = ("- id: sq\n  dataset: squares.jsonl\n  turns: ['Square {{ n }}']\n"
            "  expect: {response_contains: '{{ sq }}'}\n  script: [{content: 'it is {{ sq }}'}]\n")
    path = _write(tmp_path, {"powers.yml": case, "squares.jsonl": '{"n": 2, "sq": 4}\n\n{"n": 3, "sq": 9}\n'})
    _code, out, _ = cli_output(["list", str(path)])
    assert out.split()[:2] == ["powers/sq-1", "powers/sq-2"]
    code, out, err = cli_output(["run", str(path), "-c", "*/sq-2", "--results", str(tmp_path / "r")])
    assert (code, out.splitlines()[:2], err.splitlines()[:-1]) == (0, ["PASS powers/sq-2", "1/1 passed"], [])


def test_a_matrix_expands_to_each_combination_and_a_yaml_dataset_to_each_row(tmp_path: Path) -> None:
    path = _write(tmp_path, {
        "m.yml": "- id: lang\n  matrix: {language: [py, go], size: [1, 2]}\n  turns: ['{{ language }} {{ size }}']\n"
                 "- id: y\n  dataset: rows.yml\n  turns: ['{{ word }}']\n",
        "rows.yml": "- word: hi\n- {word: there}\n"})
    _code, out, _ = cli_output(["list", str(path)])
    assert out.split()[:6] == ["m/lang-1", "m/lang-2", "m/lang-3", "m/lang-4", "m/y-1", "m/y-2"]
    from runner.spec.casefile import load_file

    cases = load_file(path)
    assert [dict(case.vars) for case in cases[:2]] == [{"language": "py", "size": 1}, {"language": "py", "size": 2}]


def test_an_error_in_row_7_names_row_7(tmp_path: Path) -> None:
    rows = "".join(f"r{n},{n},{n},{n},{n}\n" for n in range(1, 7))
    path = _write(tmp_path, {"math.yml": SUMS, "sums.csv": f"name,a,b,total,reply\n{rows}r7,7,7\n"})
    code, _, err = cli_output(["validate", str(path)])
    assert (code, err.splitlines()) == (4, [
        f"error: {tmp_path / 'sums.csv'}:8:7: row 7: 3 fields where the header names 5 (write every column, an empty one as ,,)"])
    (tmp_path / "sums.csv").write_text(f"name,a,b,total,reply\n{rows}Row 7,7,7,7,7\n")
    _code, _, err = cli_output(["validate", str(path)])
    assert err.splitlines() == [
        f"error: {tmp_path / 'sums.csv'}:8:1: row 7: name: 'Row 7' is not a valid case id (an id matches [a-z0-9][a-z0-9._-]*)"]
    (tmp_path / "sums.csv").write_text(f"name,a,b,total,reply\n{rows}r1,7,7,7,7\n")
    _code, _, err = cli_output(["validate", str(path)])
    assert err.splitlines() == [f"error: {tmp_path / 'sums.csv'}:8:1: row 7: name: duplicate id 'r1' (first in row 1)"]


def test_a_jsonl_row_7_that_is_not_an_object_or_not_json_is_named(tmp_path: Path) -> None:
    case = "- id: sq\n  dataset: sq.jsonl\n  turns: ['{{ n }}']\n"
    path = _write(tmp_path, {"p.yml": case, "sq.jsonl": '{"n": 1}\n' * 6 + '[7]\n{"n": 8\n'})
    code, _, err = cli_output(["validate", str(path)])
    data = tmp_path / "sq.jsonl"
    assert (code, err.splitlines()) == (4, [
        f"error: {data}:7: row 7: expected a JSON object, got a list",
        f"error: {data}:8:8: row 8: not JSON: Expecting ',' delimiter"])


def test_validate_names_the_row_whose_values_break_the_expanded_case(tmp_path: Path) -> None:
    case = ("- id: w\n  dataset: d.csv\n  turns: [Hi.]\n"
            "  expect: {response_contains: '{{ wrod }}', files: {'{{ dir }}/x': {exists: true}}}\n")
    path = _write(tmp_path, {"w.yml": case, "d.csv": "word,dir\na,ok\nb,../..\n"})
    code, _, err = cli_output(["validate", str(path)])
    data = tmp_path / "d.csv"
    assert (code, err.splitlines()) == (4, [
        f"error: {data}:2:1: row 1: expect.response_contains: 'wrod' is undefined (the row's fields: word, dir)",
        (f"error: {data}:3:1: row 2: expect.files: file path '../../x' leaves the workspace "
         "(use a path relative to the workspace, without '..'; the value comes from row 2)")])


@pytest.mark.parametrize(("dataset_key", "message"), [
    ("missing.csv", "cannot read the dataset 'missing.csv': No such file or directory (its path is relative to the case file)"),
    ("d.txt", "cannot tell the format of 'd.txt' (name a .csv, .jsonl or .yml file)"),
    ("{file: d.csv, id: nmae}", "dataset.id: the dataset has no column 'nmae' (did you mean 'name'?)"),
])
def test_a_dataset_that_cannot_be_used_is_named_in_the_case_file(tmp_path: Path, dataset_key: str, message: str) -> None:
    path = _write(tmp_path, {"w.yml": f"- id: w\n  dataset: {dataset_key}\n  turns: [Hi.]\n", "d.csv": "name\na\n", "d.txt": ""})
    code, _, err = cli_output(["validate", str(path)])
    assert code == 4
    assert err.splitlines()[0].startswith(f"error: {path}:2:")
    assert err.splitlines()[0].endswith(message)


def test_a_data_file_two_cases_name_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    read = dataset._READERS["csv"]
    monkeypatch.setitem(dataset._READERS, "csv", lambda text, file: calls.append(file) or read(text, file))
    case = "- id: a\n  dataset: d.csv\n  turns: ['{{ x }}']\n- id: b\n  dataset: d.csv\n  turns: ['{{ x }}']\n"
    path = _write(tmp_path, {"w.yml": case, "d.csv": "x\n1\n2\n"})
    _code, out, _ = cli_output(["list", str(path)])
    assert (out.split()[:4], calls) == (["w/a-1", "w/a-2", "w/b-1", "w/b-2"], [str(tmp_path / "d.csv")])


def test_run_record_writes_each_expanded_case_which_replays(tmp_path: Path) -> None:
    path = _write(tmp_path, {"math.yml": SUMS, "sums.csv": "name,a,b,total,reply\none,1,1,2,2\ntwo,1,2,3,3\n"})
    code, _, err = cli_output(["run", str(path), "--record", str(tmp_path / "rec"), "--results", str(tmp_path / "r")])
    assert code == 0, err
    from runner.spec.casefile import load_file

    one, two = load_file(tmp_path / "rec/cases/math.yml")
    assert (one.id, dict(two.vars), dict(two.files), two.expect.response_contains) == (
        "one", {"name": "two", "a": "1", "b": "2", "total": "3", "reply": "3"}, {"two.txt": "a=1"}, ("3",))
    code, out, _ = cli_output(["run", str(tmp_path / "rec/cases"), "-p", "scripted", "--results", str(tmp_path / "r2")])
    assert (code, out.splitlines()[:3]) == (0, ["PASS math/one", "PASS math/two", "2/2 passed"])


def test_a_turn_every_row_fails_to_render_is_reported_once_naming_the_rows_cases(tmp_path: Path) -> None:
    path = _write(tmp_path, {"w.yml": "- id: w\n  dataset: d.csv\n  turns: ['Say {{ wrod }}']\n", "d.csv": "word\na\nb\nc\n"})
    code, _, err = cli_output(["validate", str(path)])
    assert (code, err.splitlines()) == (
        4, [f"error: {path}:3:11: w/w-1.turns[0]: 'wrod' is undefined, for all 3 cases (did you mean 'word'?)"])


def test_crlf_lines_and_a_quoted_line_break_keep_the_rows_lines(tmp_path: Path) -> None:
    case = "- id: a\n  dataset: d.csv\n  turns: ['{{ x }}']\n- id: b\n  dataset: d.jsonl\n  turns: ['{{ x }}']\n"
    path = _write(tmp_path, {"w.yml": case, "d.csv": 'x,y\r\n"two\r\nlines",1\r\n3\r\n', "d.jsonl": '{"x": "a\u2028b"}\n[]\n'})
    code, _, err = cli_output(["validate", str(path)])
    assert (code, err.splitlines()) == (4, [
        f"error: {tmp_path / 'd.jsonl'}:2: row 2: expected a JSON object, got a list",
        f"error: {tmp_path / 'd.csv'}:4:2: row 2: 1 field where the header names 2 (write every column, an empty one as ,,)"])
