"""What a first-time case author meets: the editor header's schema takes every real case file, misspelt tool
names in checks are errors, misplaced keys say where they go, YAML errors carry a fix, a missing fixture names
the folders searched."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from ruamel.yaml import YAML

from runner.errors import CaseFileError
from runner.resources import bundled
from runner.spec.schema import case_schema
from runner.spec.source import parse
from tests.helpers import BUNDLED_FILES, ROOT, run_cli

HEADER = "# yaml-language-server: $schema=../schemas/case-file.schema.json"


def _file_validator() -> Draft202012Validator:
    """The case-file schema, its ``$ref``s to case.schema.json resolved from the bundled copy."""
    case = case_schema()
    registry = Registry().with_resource(case["$id"], Resource.from_contents(case))
    file_schema = json.loads((bundled("schemas") / "case-file.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(file_schema, registry=registry)


def _load(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


BUNDLED = list(BUNDLED_FILES)
_YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```$", re.MULTILINE | re.DOTALL)
_NOT_CASES = ("# partial:", "# other format:")  # docs/development.md: fragments and other programs' files
_CONFIG_KEYS = {"providers", "default_provider", "jobs", "results_dir", "judge", "agents"}
DOC_CASES = [
    (f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", m[1])
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for text in [page.read_text(encoding="utf-8")]
    for m in _YAML_BLOCK.finditer(text)
    if not m[1].startswith(_NOT_CASES) and not (isinstance(_load(m[1]), dict) and set(_load(m[1])) <= _CONFIG_KEYS)
]


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_case_file_names_and_meets_the_case_file_schema(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == HEADER
    assert [e.message for e in _file_validator().iter_errors(_load(text))] == []


@pytest.mark.parametrize(("where", "body"), DOC_CASES, ids=[where for where, _ in DOC_CASES])
def test_every_case_file_in_the_docs_meets_the_case_file_schema(where: str, body: str) -> None:
    assert [e.message for e in _file_validator().iter_errors(_load(body))] == [], where


def test_the_docs_case_files_with_a_header_name_the_case_file_schema() -> None:
    headers = {where: body.splitlines()[0] for where, body in DOC_CASES if body.startswith("# yaml-language-server")}
    assert len(DOC_CASES) >= 8 and len(headers) >= 2 and set(headers.values()) == {HEADER}


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("- id: a\n  turns: [hi]\n  expect: {max_calls: 1}\n", "max_calls"),
        ("- id: a\n", "turns"),
        ("defaults: {id: a}\ncases: [{id: b, turns: [hi]}]\n", "id"),
        ("defaults: {turns: [hi]}\ncases: [{turns: [hi]}]\n", "id"),
        ("id: a\nturns: [hi]\n", "id"),
        ("[]\n", "[]"),
    ],
)
def test_a_wrong_file_fails_the_case_file_schema(text: str, wrong: str) -> None:
    errors = list(_file_validator().iter_errors(_load(text)))
    assert errors and wrong in " ".join(str(e) for e in errors)


def test_defaults_may_give_what_each_case_leaves_out() -> None:
    data = _load("defaults: {turns: [hi], tags: [smoke]}\ncases: [{id: a}, {id: b, turns: [bye]}]\n")
    assert list(_file_validator().iter_errors(data)) == []


def test_the_defaults_and_cases_name_every_case_key_by_reference() -> None:
    defs = json.loads((bundled("schemas") / "case-file.schema.json").read_text(encoding="utf-8"))["$defs"]
    keys = list(case_schema()["properties"])
    assert defs["partialCase"]["properties"] == {k: {"$ref": f"case.schema.json#/properties/{k}"} for k in keys}
    assert list(defs["defaults"]["properties"]) == [k for k in keys if k != "id"]


def test_schema_file_prints_the_case_file_schema() -> None:
    done = run_cli("schema", "--file")
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout) == json.loads((ROOT / "schemas" / "case-file.schema.json").read_text())



TRACE_TYPOS = """\
- id: a
  turns: [hi]
  expect: {trace: {avoid: [writefile], args: {raed_file: {path: x}}}}
  script: [{content: x}]
- id: b
  turns: [hi, {content: again, expect: {trace: {must_include: [grpe], order: [bash, lookup]}}}]
  mocks: [{name: lookup, responses: [{result: ok}]}]
  script: [{tool_calls: [{name: no_such_tool, arguments: {}}]}, {content: x}]
"""


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_misspelt_tool_in_a_trace_check_is_a_positioned_error(command: str, tmp_path: Path) -> None:
    path = tmp_path / "cases" / "t.yml"
    path.parent.mkdir()
    path.write_text(TRACE_TYPOS, encoding="utf-8")
    extra = ["-p", "scripted", "--results", str(tmp_path / "results")] if command == "run" else []
    done = run_cli(command, str(path), *extra)
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        f"error: {path}:3:28: expect.trace.avoid[0]: unknown tool 'writefile' (did you mean 'write_file'?)",
        f"error: {path}:3:47: expect.trace.args: unknown tool 'raed_file' (did you mean 'read_file'?)",
        f"error: {path}:6:64: turns[1].expect.trace.must_include[0]: unknown tool 'grpe' (did you mean 'grep'?)",
        (f"warning: {path}:8:33: script[0].tool_calls[0].name: tool 'no_such_tool' is not offered by the case, so"
         " this scripted call is refused (offered: read_file, write_file, edit_file, list_dir, glob, grep, bash, lookup)"),
    ]
    assert not (tmp_path / "results").exists()


def test_defaults_trace_names_are_checked_against_each_cases_mocks(tmp_path: Path) -> None:
    path = tmp_path / "d.yml"
    path.write_text("defaults:\n  expect: {trace: {exact: [lookup]}}\ncases:\n"
                    "  - {id: a, turns: [hi], mocks: [{name: lookup, responses: [{result: ok}]}]}\n"
                    "  - {id: b, turns: [hi]}\n", encoding="utf-8")
    done = run_cli("validate", str(path))
    assert (done.returncode, done.stderr.splitlines()) == (4, [
        f"error: {path}:2:28: defaults.expect.trace.exact[0]: unknown tool 'lookup' (known tools: read_file, write_file, edit_file, list_dir, glob, grep, bash)"])


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("  expect: {max_calls: 1}\n", "3:12: expect: unknown key 'max_calls' ('max_calls' belongs under expect.trace)"),
        ("  expect: {trace: {max_turns: 3}}\n",
         "3:20: expect.trace: unknown key 'max_turns' ('max_turns' belongs under expect)"),
        ("  expect: {files: {a.txt: {max_calls: 2}}}\n",
         "3:28: expect.files.a.txt: unknown key 'max_calls' ('max_calls' belongs under expect.trace)"),
        ("  expect: {timeout: 3}\n", "3:12: expect: unknown key 'timeout' ('timeout' belongs at the case's top level)"),
        ("  must_include: [bash]\n", "3:3: unknown key 'must_include' ('must_include' belongs under expect.trace)"),
        ("  expect: {trace: {files: {}}}\n",
         "3:20: expect.trace: unknown key 'files' ('files' belongs under expect or at the case's top level)"),
        ("  expect: {max_cots: 1}\n", "3:12: expect: unknown key 'max_cots' (did you mean 'max_cost'?)"),
    ],
)
def test_a_key_of_a_neighbouring_level_says_where_it_belongs(case: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "k.yml"
    path.write_text("- id: a\n  turns: [hi]\n" + case, encoding="utf-8")
    done = run_cli("validate", str(path))
    assert (done.returncode, done.stderr) == (4, f"error: {path}:{error}\n")


def test_a_misplaced_key_in_a_turn_or_the_defaults_says_where_it_belongs(tmp_path: Path) -> None:
    path = tmp_path / "k.yml"
    path.write_text("defaults: {expect: {max_calls: 1}}\n"
                    "cases: [{id: a, turns: [hi, {content: x, expect: {max_calls: 1, trace: {max_turns: 2}}}]}]\n",
                    encoding="utf-8")
    done = run_cli("validate", str(path))
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        f"error: {path}:1:21: defaults.expect: unknown key 'max_calls' ('max_calls' belongs under expect.trace)",
        (f"error: {path}:2:51: turns[1].expect: unknown key 'max_calls'"
         " ('max_calls' belongs under turns[1].expect.trace or under the case's expect.trace)"),
        (f"error: {path}:2:73: turns[1].expect.trace: unknown key 'max_turns'"
         " ('max_turns' belongs under the case's expect)"),
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- id: a\n  turns: [x]\n   expect: {}\n",
         ("3:4: invalid YAML: this line is indented unlike the lines around it"
          " (indent this line like its siblings at column 3)")),
        ("defaults:\n  timeout: 3\n cases:\n  - id: a\n",
         ("3:2: invalid YAML: this line is indented unlike the lines around it"
          " (indent this line like its siblings at column 1)")),
        ("- id: a\n  turns:\n    - x\n   - y\n",
         ("4:4: invalid YAML: this line is indented unlike the lines around it"
          " (indent this line like its siblings at column 5)")),
        ("- id: a\n    turns: [x]\n",
         ("2:10: invalid YAML: a ':' where no key can start"
          " (indent this line like its siblings at column 3, or put a value that holds ': ' in quotes)")),
        ("- id: a\n  turns: [x]\n  description: note: this\n",
         "3:20: invalid YAML: a ':' where no key can start (put a value that holds ': ' in quotes)"),
        ("- id: a\n  turns [x]\n  expect: {}\n",
         ("2:3: invalid YAML: a key without its ':'"
          " (write 'key: value', with ': ' after the key, or quote the text if it is no key)")),
        ("- id: a\n  turns:\n  - x\n  - \"y\n  - z\n",
         "4:5: invalid YAML: the quote '\"' opened here is never closed (end the text with '\"', or write it without quotes)"),
        ("- id: a\n  turns: {a: [x]\n  expect: {}\n",
         ("2:10: invalid YAML: '{' is not closed"
          " (close it with '}' before line 3, column 3, and separate its items with ', ')")),
        ("- id: a\n  turns: [x\n",
         ("2:10: invalid YAML: '[' is not closed"
          " (close it with ']' before line 3, column 1, and separate its items with ', ')")),
        ("- id: a\n\tturns: [x]\n",
         "2:1: invalid YAML: found character '\\t' that cannot start any token (indent with spaces, not tabs)"),
    ],
)
def test_a_yaml_syntax_error_says_where_and_how_to_fix_it(text: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "y.yml"
    path.write_text(text, encoding="utf-8")
    for command in ("validate", "run"):
        done = run_cli(command, str(path), *(["--results", str(tmp_path / "results")] if command == "run" else []))
        assert (done.returncode, done.stderr) == (4, f"error: {path}:{error}\n")
    assert not (tmp_path / "results").exists()


def _missing_fixture(root: Path, *extra: str) -> tuple[Path, str]:
    path = root / "cases" / "f.yml"
    path.parent.mkdir(parents=True)
    path.write_text("- id: a\n  turns: [hi]\n  fixture: nosuch\n  script: [{content: x}]\n", encoding="utf-8")
    done = run_cli("validate", str(path), *extra)
    assert done.returncode == 4
    return path, done.stderr


def test_a_missing_fixture_outside_the_checkout_names_the_folders_searched_and_the_fixes(tmp_path: Path) -> None:
    path, stderr = _missing_fixture(tmp_path)
    assert stderr == (
        f"error: {path}:3:12: fixture: fixture folder 'nosuch' not found: there is no {tmp_path / 'fixtures'}"
        f" beside the cases folder, and the bundled fixtures ({bundled('fixtures')}) have none"
        f" (create the folder {tmp_path / 'fixtures' / 'nosuch'}, or give --fixtures-dir FOLDER that holds nosuch/)\n")


def test_a_missing_fixture_names_the_fixtures_folder_beside_the_cases(tmp_path: Path) -> None:
    (tmp_path / "fixtures" / "other").mkdir(parents=True)
    path, stderr = _missing_fixture(tmp_path)
    folder = tmp_path / "fixtures"
    assert stderr == (
        f"error: {path}:3:12: fixture: fixture folder 'nosuch' not found in {folder}"
        f" (the fixtures folder beside the cases folder)"
        f" (create the folder {folder / 'nosuch'}, or give --fixtures-dir FOLDER)\n")


def test_a_missing_fixture_names_the_fixtures_dir_folder(tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    path, stderr = _missing_fixture(tmp_path, "--fixtures-dir", str(folder))
    assert stderr == (
        f"error: {path}:3:12: fixture: fixture folder 'nosuch' not found in {folder} (the --fixtures-dir folder)"
        f" (create the folder {folder / 'nosuch'}, or point --fixtures-dir at the folder that holds it)\n")


_YAMLISH = st.lists(st.sampled_from(["- ", "id", ": ", "a", "  ", " ", "\n", "\r", "\u2028", "[", "]", "{", "}", ",",
                                     "'", '"', "#", "\t", ":", "x y"]), max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(_YAMLISH)
def test_any_broken_yaml_is_a_positioned_case_file_error_never_a_crash(text: str) -> None:
    try:
        parse(text, "f.yml")
    except CaseFileError as e:
        assert e.render().startswith("f.yml")
