"""Case files: broken examples with their exact errors, good files into Case values, discovery, filters.

Each ``tests/broken/NAME.yml`` is paired with ``NAME.expected``: the exact
error lines ``validate_file`` gives for it, read from inside ``tests/broken``
with ``fixtures_dir=fixtures``. After a deliberate change to the messages,
regenerate them (and review the diff) with:

    TOOLTRIAL_REGEN=1 .venv/bin/python -m pytest tests/test_cases.py -k broken
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import regex
from jsonschema import Draft202012Validator

from runner.errors import CaseFileError, ExitCode, UserError, UserErrors
from runner.patterns import compile_pattern, compile_schema_pattern
from runner.resources import bundled
from runner.spec.case import Case
from runner.spec.casefile import load_file, validate_file
from runner.spec.discover import discover, load_cases, select
from runner.spec.expect import Expect, FileExpect, JudgeExpect, TraceExpect
from runner.spec.schema import case_schema

BROKEN = Path(__file__).parent / "broken"
BROKEN_FILES = sorted(p.name for p in BROKEN.glob("*.yml"))


@pytest.mark.parametrize("name", BROKEN_FILES)
def test_broken_file_gives_its_exact_errors(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BROKEN)  # so locations read as the user would write the path
    actual = "".join(f"{error.render()}\n" for error in validate_file(Path(name), fixtures_dir=Path("fixtures")))
    expected_file = BROKEN / name.replace(".yml", ".expected")
    if os.environ.get("TOOLTRIAL_REGEN"):
        expected_file.write_text(actual, encoding="utf-8")
    assert actual == expected_file.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", BROKEN_FILES)
def test_load_file_raises_the_first_error(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BROKEN)
    first = (BROKEN / name.replace(".yml", ".expected")).read_text(encoding="utf-8").splitlines()[0]
    with pytest.raises(CaseFileError) as raised:
        load_file(Path(name), fixtures_dir=Path("fixtures"))
    assert raised.value.render() == first
    assert raised.value.exit_code == ExitCode.USAGE


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


LIST_FORM = """\
- id: fix-failing-test
  description: A one-character bug.
  tags: [python, smoke]
  fixture: calc
  files: {notes.txt: "hello\\n"}
  setup: git init -q
  env: {DEBUG: 1, FAST: true, NAME: x}
  vars: {who: world}
  turns:
    - Run the tests and fix what is broken.
  system: You are careful.
  tools: [bash, edit_file]
  deny: [bash]
  timeout: 60
  expect:
    verify: python -m pytest -q
    files:
      calc.py: {contains: a + b, not_contains: [a - b], matches: '\\Adef', exists: true}
    response_contains: add
    response_matches: ['\\A[\\s\\S]{0,400}\\z']
    trace: {must_include: [edit_file], max_calls: 6}
    max_turns: 10
  script:
    - tool_calls: [{name: bash, arguments: {command: python -m pytest -q}}]
    - tool_calls: [{name: list_dir}]
    - content: Fixed add().
- id: second
  turns: ["Hi {{ who }}.", Again.]
  mocks:
    - name: get_weather
      responses: [{when: {city: Paris}, result: sunny}]
"""


def test_list_form_loads_into_normalised_cases(tmp_path: Path) -> None:
    (tmp_path / "fixtures" / "calc").mkdir(parents=True)
    path = write(tmp_path / "cases", "fix.yml", LIST_FORM)
    first, second = load_file(path)
    assert (first.full_id, first.source, first.line) == ("fix/fix-failing-test", path, 1)
    assert first.tags == ("python", "smoke")
    assert first.files == {"notes.txt": "hello\n"}
    assert first.setup == ("git init -q",)
    assert first.env == {"DEBUG": "1", "FAST": "true", "NAME": "x"}
    assert (first.system, first.tools, first.deny, first.timeout) == ("You are careful.", ("bash", "edit_file"), ("bash",), 60.0)
    assert first.fixtures_dir == (tmp_path / "fixtures").resolve()
    assert first.expect.verify == ("python -m pytest -q",)
    assert first.expect.files == {"calc.py": FileExpect(contains=("a + b",), not_contains=("a - b",), matches=("\\Adef",),
                                                        exists=True)}
    assert first.expect.response_contains == ("add",)
    assert first.max_turns == 10
    assert first.script is not None
    assert first.script[1] == {"tool_calls": [{"name": "list_dir", "arguments": {}}]}
    assert first.script[2] == {"content": "Fixed add()."}
    assert second.line == 27
    assert (second.turns, second.tools, second.script, second.max_turns) == (("Hi {{ who }}.", "Again."), None, None, 30)
    assert second.mocks == (
        {
            "name": "get_weather",
            "description": "",
            "parameters": {"type": "object", "properties": {}},
            "responses": [{"when": {"city": "Paris"}, "result": "sunny"}],
        },
    )


DEFAULTS_FORM = """\
defaults:
  tags: [base]
  setup: [git init -q]
  env: {A: "1", B: "2"}
  turns: [Default prompt.]
  expect:
    max_turns: 5
    trace: {max_calls: 4, avoid: [write_file]}
    files:
      a.txt: {contains: x}
cases:
  - id: inherits
  - id: overrides
    tags: [own]
    env: {B: three}
    turns: [Own prompt.]
    expect:
      trace: {max_calls: 8}
      files:
        a.txt: {exists: true}
        b.txt: {equals: ""}
"""


def test_defaults_merge_under_each_case(tmp_path: Path) -> None:
    inherits, overrides = load_file(write(tmp_path, "merge.yml", DEFAULTS_FORM))
    assert (inherits.tags, inherits.setup, inherits.turns) == (("base",), ("git init -q",), ("Default prompt.",))
    assert inherits.expect == Expect(
        max_turns=5, trace=TraceExpect(max_calls=4, avoid=("write_file",)), files={"a.txt": FileExpect(contains=("x",))}
    )
    assert (overrides.tags, overrides.turns) == (("own",), ("Own prompt.",))
    assert overrides.env == {"A": "1", "B": "three"}
    assert overrides.expect == Expect(
        max_turns=5,
        trace=TraceExpect(max_calls=8, avoid=("write_file",)),
        files={"a.txt": FileExpect(contains=("x",), exists=True), "b.txt": FileExpect(equals="")},
    )
    assert inherits.expect.trace is not overrides.expect.trace


def test_required_keys_may_come_from_the_defaults(tmp_path: Path) -> None:
    text = (
        "defaults:\n  expect: {judge: {rubric: Names the bug.}}\n"
        "cases:\n  - {id: a, turns: [Hi.], expect: {judge: {threshold: 0.5}}}\n"
    )
    (case,) = load_file(write(tmp_path, "judged.yml", text))
    assert case.expect.judge == JudgeExpect(rubric="Names the bug.", threshold=0.5)


def test_fixtures_dir_falls_back_to_the_bundled_fixtures(tmp_path: Path) -> None:
    (case,) = load_file(write(tmp_path / "cases", "plain.yml", "- {id: a, turns: [Hi.]}\n"))
    assert case.fixtures_dir == bundled("fixtures").resolve()
    given = tmp_path / "mine"
    given.mkdir()
    (case,) = load_file(tmp_path / "cases" / "plain.yml", fixtures_dir=given)
    assert case.fixtures_dir == given.resolve()


def test_validate_file_is_empty_for_a_good_file(tmp_path: Path) -> None:
    assert validate_file(write(tmp_path, "ok.yml", "- {id: a, turns: [Hi.]}\n")) == []


def test_unreadable_and_non_utf8_files_are_case_file_errors(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError, match="cannot read the file"):
        load_file(tmp_path / "absent.yml")
    path = tmp_path / "latin.yml"
    path.write_bytes(b"- id: a\n  turns: [caf\xe9]\n")
    (error,) = validate_file(path)
    assert error.location is not None
    assert (error.location.line, error.location.column, error.message) == (2, 14, "the file is not UTF-8 text")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """cases/{a.yml, b.yaml, c.json, notes.md, sub/d.yml} under tmp_path."""
    for name in ("a.yml", "b.yaml", "c.json", "notes.md", "sub/d.yml"):
        write((tmp_path / "cases" / name).parent, Path(name).name, "")
    return tmp_path / "cases"


def test_discover_folder_glob_file_and_default(tree: Path) -> None:
    assert discover([tree]) == [tree / "a.yml", tree / "b.yaml", tree / "c.json"]
    assert discover([f"{tree}/*.y*ml"]) == [tree / "a.yml", tree / "b.yaml"]
    assert discover([f"{tree}/**/*.yml"]) == [tree / "a.yml", tree / "sub" / "d.yml"]
    assert discover([tree / "notes.md", tree / "a.yml", tree]) == [
        tree / "notes.md",
        tree / "a.yml",
        tree / "b.yaml",
        tree / "c.json",
    ]
    assert discover([], cases_dir=tree / "sub") == [tree / "sub" / "d.yml"]
    assert discover([]) == discover([bundled("cases")])


@pytest.mark.parametrize(
    ("given", "message"),
    [("missing.yml", "no such file or folder: {tree}/missing.yml"), ("*.txt", "no case files match {tree}/*.txt")],
)
def test_discover_names_a_path_that_finds_nothing(tree: Path, given: str, message: str) -> None:
    with pytest.raises(UserError) as raised:
        discover([tree / "a.yml", f"{tree}/{given}"])
    assert raised.value.message == message.format(tree=tree)
    assert raised.value.exit_code == ExitCode.USAGE
    with pytest.raises(UserError, match="no such file or folder"):
        discover([], cases_dir=tree / "nope")


def test_load_cases_collects_every_error_of_every_file(tmp_path: Path) -> None:
    write(tmp_path / "one", "fs.yml", "- {id: a, turns: [Hi.]}\n- {id: b, turns: [Hi.]}\n")
    write(tmp_path / "two", "fs.yml", "- {id: b, turns: [Hi.]}\n")
    write(tmp_path / "two", "web.yml", "- {id: c, turns: []}\n- {id: d}\n")
    with pytest.raises(UserErrors) as raised:
        load_cases([tmp_path / "one", tmp_path / "two"])
    assert [e.render() for e in raised.value.errors] == [
        f"{tmp_path}/two/web.yml:1:18: turns: must not be empty",
        f"{tmp_path}/two/web.yml:2:3: missing required key 'turns' (give turns, the prompts to send, or user, a simulated user)",
        (f"{tmp_path}/two/fs.yml:1: id: duplicate case 'fs/b' "
         f"(also defined at {tmp_path}/one/fs.yml:2; rename one or the file)"),
    ]


def test_load_cases_in_file_order(tmp_path: Path) -> None:
    write(tmp_path, "b.yml", "- {id: one, turns: [Hi.]}\n- {id: two, turns: [Hi.]}\n")
    write(tmp_path, "a.yml", "- {id: three, turns: [Hi.]}\n")
    cases = load_cases([], cases_dir=tmp_path)
    assert [c.full_id for c in cases] == ["a/three", "b/one", "b/two"]


def case(full_id: str, tags: tuple[str, ...] = ()) -> Case:
    group, case_id = full_id.split("/")
    return Case(group=group, id=case_id, source=Path(f"{group}.yml"), line=1, turns=("Hi.",), tags=tags)


def test_select_by_globs_and_tags() -> None:
    cases = [case("fs/read", ("smoke",)), case("fs/write"), case("search/grep", ("smoke", "slow")), case("fix/test")]
    ids = lambda chosen: [c.full_id for c in chosen]
    assert select(cases) == cases
    assert ids(select(cases, ["fs/*"])) == ["fs/read", "fs/write"]
    assert ids(select(cases, ["fix/*", "*/grep"])) == ["search/grep", "fix/test"]
    assert ids(select(cases, tags=["slow", "nope"])) == ["search/grep"]
    assert ids(select(cases, ["fs/*"], ["smoke"])) == ["fs/read"]
    assert select(cases, ["FS/*"]) == []


def test_case_schema_is_valid_and_documents_every_property() -> None:
    schema = case_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False

    def check(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                assert {"title", "description"} <= sub.keys(), f"{where}.{name}"
            if "properties" in node:
                assert node.get("additionalProperties") is False, where
            for key, value in node.items():
                check(value, f"{where}/{key}")
        elif isinstance(node, list):
            for item in node:
                check(item, where)

    check(schema, "#")
    assert json.loads((bundled("schemas") / "case.schema.json").read_text(encoding="utf-8")) == schema


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"\Adone\z", "done", True),
        (r"\Adone\z", "done\n", False),
        (r"\A[\s\S]{0,5}\z", "123456", False),
        (r"a\\z", "a\\z", True),
        (r"a\\\z", "a\\", True),
        (r"\\\\z", "\\\\z", True),
        (r"done\Z", "done", True),
    ],
)
def test_compile_pattern_accepts_ruby_anchors(pattern: str, text: str, found: bool) -> None:
    assert bool(compile_pattern(pattern).search(text)) is found


def test_compile_pattern_raises_regex_error() -> None:
    with pytest.raises(regex.error, match=r"missing \)"):
        compile_pattern("(a")


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("^[a-z0-9][a-z0-9._-]*$", "fix", True),
        ("^[a-z0-9][a-z0-9._-]*$", "fix\n", False),
        ("^[a-zA-Z0-9_-]{1,64}$", "lookup\n", False),
        ("^a$|^b$", "a\n", False),
        (r"^cost\$$", "cost$", True),
        ("^[$]+$", "$$", True),
        (r"^[\]$]+$", "]$", True),
        ("^a", "a\n", True),
    ],
)
def test_compile_schema_pattern_reads_dollar_as_the_end_of_the_text(pattern: str, text: str, found: bool) -> None:
    assert bool(compile_schema_pattern(pattern).search(text)) is found
