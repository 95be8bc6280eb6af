"""Authoring aids: `tooltrial new` writes a skeleton that validates and passes; the schema documents every key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from runner.cli import main
from runner.errors import UserError, UserErrors
from runner.resources import bundled
from runner.spec.authoring import default_cases_dir, new_case
from runner.spec.casefile import load_file, validate_file
from runner.spec.schema import case_schema


def test_new_starts_a_group_file_that_validates_and_passes_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases"
    assert main(["new", "mine/first", "--cases-dir", str(cases)]) == 0
    path = cases / "mine.yml"
    assert capsys.readouterr().out.splitlines() == [
        f"wrote mine/first to {path}:3",
        f"try it offline: tooltrial run {path} -c mine/first",
    ]
    assert path.read_text(encoding="utf-8").startswith(
        f"# yaml-language-server: $schema={(bundled('schemas') / 'case-file.schema.json').resolve().as_uri()}\n\n- id: first\n"
    )
    assert validate_file(path) == []
    assert main(["run", str(path), "-p", "scripted", "--results", str(tmp_path / "results")]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["PASS mine/first", "1/1 passed"]


def test_new_appends_to_a_list_and_refuses_an_id_in_use(tmp_path: Path) -> None:
    path = tmp_path / "mine.yml"
    path.write_text("- {id: old, turns: [Hi.], script: [{content: hi}]}", encoding="utf-8")  # no final newline
    written = new_case("mine/fresh", tmp_path)
    assert (written.path, written.line) == (path, 3)
    assert [(case.id, case.line) for case in load_file(path)] == [("old", 1), ("fresh", 3)]
    with pytest.raises(UserError) as raised:
        new_case("mine/old", tmp_path)
    assert raised.value.render() == f"case mine/old already exists at {path}:1 (pick another id)"


def test_new_goes_into_the_cases_list_of_a_defaults_file(tmp_path: Path) -> None:
    path = tmp_path / "wrapped.yml"
    path.write_text("cases:\n    - id: a\n      turns: [Hi.]\n\ndefaults:\n  tags: [kept]\n", encoding="utf-8")
    new_case("wrapped/b", tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("cases:\n    - id: a\n      turns: [Hi.]\n\n    - id: b\n      description: What")
    assert text.endswith("\n\ndefaults:\n  tags: [kept]\n")
    assert [(case.id, case.tags) for case in load_file(path)] == [("a", ("kept",)), ("b", ("kept",))]


def test_new_refuses_bad_ids_and_broken_files_and_makes_a_missing_fixture(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="'Mine/x' is not GROUP/ID"):
        new_case("Mine/x", tmp_path / "cases")
    with pytest.raises(UserError, match="'mine' is not GROUP/ID"):
        new_case("mine", tmp_path / "cases")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases/bad.yml").write_text("- id: a\n  turn: [Hi.]\n", encoding="utf-8")
    with pytest.raises(UserErrors, match="unknown key 'turn'"):
        new_case("bad/b", tmp_path / "cases")
    written = new_case("mine/with-fixture", tmp_path / "cases", fixture="proj")
    assert written.fixture_created == tmp_path / "fixtures" / "proj"
    assert load_file(written.path)[0].fixture == "proj"
    assert new_case("mine/again", tmp_path / "cases", fixture="proj").fixture_created is None
    with pytest.raises(UserError, match="already exists"):
        new_case("mine/again", tmp_path / "cases", fixture="other")
    assert not (tmp_path / "fixtures" / "other").exists()  # a refused case leaves nothing behind


def test_new_writes_to_cases_or_else_the_project_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_cases_dir() == Path(".tooltrial/cases")
    (tmp_path / "cases").mkdir()
    assert default_cases_dir() == Path("cases")
    assert main(["new", "mine/here"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "wrote mine/here to cases/mine.yml:3"


def keys(schema: dict[str, Any], at: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every property schema under ``schema`` (through ``items`` and ``additionalProperties``), with its path."""
    found = []
    for name, sub in schema.get("properties", {}).items():
        found.append((f"{at}{name}", sub))
        found += keys(sub, f"{at}{name}.")
    for part in ("items", "additionalProperties"):
        if isinstance(schema.get(part), dict):
            found += keys(schema[part], f"{at}[{part}].")
    return found


@pytest.mark.parametrize("name", ["case.schema.json", "replio.schema.json"])
def test_every_key_has_a_title_a_description_and_valid_examples(name: str) -> None:
    """What an editor with the YAML language server shows on hover and offers on completion."""
    schema = json.loads((bundled("schemas") / name).read_text(encoding="utf-8"))
    every = keys(schema) + [(f"$defs.{d}", sub) for d, sub in schema.get("$defs", {}).items()]
    every += [(f"$defs.{d}.{k}", sub) for d, top in schema.get("$defs", {}).items() for k, sub in keys(top)]
    assert [path for path, sub in every if not {"title", "description", "examples"} <= sub.keys()] == []
    case = case_schema()
    registry = Registry().with_resource(case["$id"], Resource.from_contents(case))
    root = Draft202012Validator(schema, registry=registry)
    for path, sub in every:
        validator = root.evolve(schema=sub)  # references still resolve from the whole schema
        for example in sub["examples"]:
            assert list(validator.iter_errors(example)) == [], (path, example)


@pytest.mark.parametrize(("tools", "lines"), [
    ("[read_file, grep]", ["        # avoid: [TOOL]             # offered tools that must not be called"]),
    ("[read_file, edit_file]", ["        avoid: [edit_file]"]),
    ("[grep]", ["    tools: [grep, read_file]  # the defaults' tools and read_file, which the checks expect",
                "        # avoid: [TOOL]             # offered tools that must not be called"]),
])
def test_new_fits_the_skeleton_to_the_tools_the_file_s_defaults_offer(tmp_path: Path, tools: str, lines: list[str]) -> None:
    from tests.helpers import run_cli

    (tmp_path / "cases").mkdir()
    path = tmp_path / "cases" / "meetings.yml"
    path.write_text(f"defaults:\n  tools: {tools}\ncases:\n  - {{id: old, turns: [Hi.], script: [{{content: hi}}]}}\n",
                    encoding="utf-8")
    assert run_cli("new", "meetings/extra", cwd=tmp_path).returncode == 0
    written = path.read_text(encoding="utf-8").splitlines()
    assert [line for line in written if "avoid:" in line or line.startswith("    tools:")] == lines
    checked = run_cli("validate", "cases", "--strict", cwd=tmp_path)
    assert (checked.returncode, checked.stderr, checked.stdout) == (0, "", "2 cases in 1 file are valid\n")
    ran = run_cli("run", "cases", "-c", "meetings/extra", "-p", "scripted", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert (ran.returncode, ran.stdout.splitlines()[:2]) == (0, ["PASS meetings/extra", "1/1 passed"])


@pytest.mark.parametrize("given", ["cases/mine2.yml", "mine2.yaml"])
def test_new_refuses_a_file_path_and_says_which_form_it_takes(tmp_path: Path, given: str) -> None:
    """``tooltrial new cases/mine2.yml`` wrote a case of id ``mine2.yml`` into a new ``cases/cases.yml``."""
    from tests.helpers import run_cli

    done = run_cli("new", given, "--cases-dir", str(tmp_path / "cases"))
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        (f"error: {given!r} is a file name, not GROUP/ID (give the case's group and id, e.g. 'tooltrial new "
         f"mine/mine2' adds case mine2 to {tmp_path / 'cases' / 'mine.yml'})")]
    assert not (tmp_path / "cases").exists()
