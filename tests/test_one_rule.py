"""Each small rule is written once and every place that needs it uses that one: the order errors are
listed in, the first line of a message, a value written as one string or a list, the defaults merge,
the atomic write, the id pattern, what names a provider, the tools a case offers."""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.cli import main
from runner.errors import CaseFileError, Location, UserError, UserErrors, in_file_order
from runner.names import ID_PATTERN, SCRIPTED
from runner.providers.registry import kind_of, resolve_provider
from runner.providers.settings import ModelSettings
from runner.sandbox.command import Sandbox
from runner.spec.config import Config, read_config
from runner.spec.defaults import merge_defaults
from runner.spec.discover import load_cases
from runner.spec.expect import FileExpect, as_list
from runner.spec.offered import offered_tools
from runner.text import first_line
from runner.tools.base import ToolContext
from runner.tools.mocks import mock_tools
from runner.tools.registry import BUILTIN_NAMES
from runner.tools.toolbox import build_toolbox
from tests.helpers import ROOT

positions = st.tuples(st.none() | st.integers(1, 9), st.none() | st.integers(1, 9))


@given(st.lists(st.none() | positions, max_size=8))
def test_errors_are_listed_by_line_then_column_unplaced_first(places: list[tuple[int | None, int | None] | None],
                                                              ) -> None:
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
        (f"error: {config}:1:8: judge: unknown provider 'nobody' (name an alias under providers, a model such as"
         " ollama/qwen3, or scripted)"),
        f"error: {config}:2:7: jobs: must be at least 1, got 0",
        (f"error: {config}:4:3: providers.scripted: 'scripted' is the built-in offline provider"
         " (give this alias another name)"),
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


scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab", max_size=2)


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("xyz"), inner, max_size=3)


trees = st.recursive(scalars, _nested, max_leaves=8)
maps = st.dictionaries(st.sampled_from("xyz"), trees, max_size=3)


def merged_by_hand(case: Any, defaults: Any) -> Any:
    """The rule, spelled out: mappings under one key merge, anything else of the case's wins."""
    if not (isinstance(case, dict) and isinstance(defaults, dict)):
        return case
    keys = [*case, *(key for key in defaults if key not in case)]
    return {key: merged_by_hand(case[key], defaults[key]) if key in case and key in defaults
            else case.get(key, defaults.get(key)) for key in keys}


@given(maps, maps)
def test_defaults_merge_under_a_case_by_one_rule(case: dict[str, Any], defaults: dict[str, Any]) -> None:
    before = copy.deepcopy(defaults)
    merged = merge_defaults(copy.deepcopy(case), defaults)
    assert merged == merged_by_hand(case, defaults)
    assert list(merged) == [*case, *(key for key in defaults if key not in case)]
    json.dumps(merged)  # every value is plain data
    for value in merged.values():  # nothing of the defaults is shared, so no case changes another
        if isinstance(value, (dict, list)):
            assert all(value is not theirs for theirs in defaults.values())
    assert defaults == before


DEFAULTED = """\
defaults:
  tags: [base]
  files: {a.txt: a, b.txt: b}
  env: {MODE: test, LEVEL: "1"}
  vars: {who: {name: Ada, role: admin}, list: [1, 2]}
  expect:
    max_turns: 5
    files: {a.txt: {exists: true}}
cases:
  - id: one
    description: Overrides some defaults, keeps the rest.
    env: {LEVEL: "2"}
    vars: {who: {role: guest}, list: [3]}
    turns: [Hi.]
    expect:
      files: {b.txt: {contains: [b]}}
      response_contains: [hi]
    script: [{content: hi}]
"""


def test_a_recorded_case_is_the_case_the_loader_merged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "cases/merge.yml"
    source.parent.mkdir()
    source.write_text(DEFAULTED, encoding="utf-8")
    argv = ["run", str(source), "-p", "scripted", "--record", str(tmp_path / "rec"), "--results", str(tmp_path / "r")]
    assert main(argv) == 0
    (loaded,), (recorded,) = load_cases([source]), load_cases([tmp_path / "rec/cases/merge.yml"])
    fields = ("tags", "env", "vars", "expect", "turns", "description", "script")
    assert {f: getattr(recorded, f) for f in fields} == {f: getattr(loaded, f) for f in fields}
    assert loaded.vars == {"who": {"role": "guest", "name": "Ada"}, "list": [3]}
    assert loaded.expect.files == {"b.txt": FileExpect(contains=("b",)), "a.txt": FileExpect(exists=True)}
    text = (tmp_path / "rec/cases/merge.yml").read_text(encoding="utf-8")
    assert "\n  - id: one\n    description: Overrides some defaults, keeps the rest.\n    tags: [base]\n" in text


def test_every_file_a_run_writes_is_flushed_to_disk_before_it_appears(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    synced: set[tuple[int, int]] = set()
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        info = os.fstat(fd)
        synced.add((info.st_dev, info.st_ino))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    source = tmp_path / "cases/merge.yml"
    source.parent.mkdir()
    source.write_text(DEFAULTED, encoding="utf-8")
    argv = ["run", str(source), "-p", "scripted", "--record", str(tmp_path / "rec"), "--results", str(tmp_path / "r"),
            "--report", str(tmp_path / "out/report.json"), "--junit", str(tmp_path / "out/junit.xml")]
    assert main(argv) == 0
    written = sorted(p for folder in ("out", "r", "rec") for p in (tmp_path / folder).rglob("*") if p.is_file())
    run_id = next((tmp_path / "r").iterdir()).name
    assert [str(p.relative_to(tmp_path)) for p in written] == [
        "out/junit.xml", "out/report.json", f"r/{run_id}/report.json",
        f"r/{run_id}/runs/0001-merge-one-scripted-default-r1.json", "rec/cases/merge.yml",
    ]
    assert [p.name for p in written if (p.stat().st_dev, p.stat().st_ino) not in synced] == []


def _patterns(node: Any, at: str = "") -> list[tuple[str, str]]:
    """``(JSON pointer, pattern)`` for every ``pattern`` in a schema."""
    if isinstance(node, dict):
        found = [(f"{at}/pattern", node["pattern"])] if isinstance(node.get("pattern"), str) else []
        return found + [p for key, value in node.items() for p in _patterns(value, f"{at}/{key}")]
    if isinstance(node, list):
        return [p for i, value in enumerate(node) for p in _patterns(value, f"{at}/{i}")]
    return []


def test_every_schema_spells_the_one_id_pattern() -> None:
    """Schemas are JSON and cannot import runner.names: each id-like pattern in them must be it, anchored."""
    anchored = f"^{ID_PATTERN.pattern}$"
    idlike = {
        name: [(at, pattern) for at, pattern in _patterns(json.loads((ROOT / "schemas" / name).read_text("utf-8")))
               if pattern.startswith("^[a-z0-9]")]
        for name in ("case.schema.json", "config.schema.json", "replio.schema.json")
    }
    assert idlike == {
        "case.schema.json": [("/properties/id/pattern", anchored), ("/properties/agent/anyOf/0/pattern", anchored)],
        "config.schema.json": [("/properties/agents/propertyNames/pattern", anchored),
                               ("/properties/providers/propertyNames/pattern", anchored)],
        "replio.schema.json": [("/properties/id/pattern", anchored)],
    }


@given(st.text("ab.-_/", max_size=6).map(lambda s: s or "scripted") | st.sampled_from(["scripted", "local", "ollama"]))
def test_the_config_file_and_resolve_read_a_provider_name_by_one_rule(name: str) -> None:
    aliases = {"local": ModelSettings(model="openai/x", api_base="http://127.0.0.1:1/v1")}
    assert kind_of(name, aliases).name == ("scripted" if name == SCRIPTED else "alias" if name == "local"
                                           else "model" if "/" in name else "bare")
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "tooltrial.yml"
        config.write_text("providers:\n  local: {model: openai/x, api_base: 'http://127.0.0.1:1/v1'}\n"
                          f"default_provider: {json.dumps(name)}\n", encoding="utf-8")
        try:
            read_config(config)
            refused = None
        except UserErrors as e:
            refused = [error.message for error in e.errors]
    assert refused == ([f"unknown provider {name!r}"] if kind_of(name, aliases).name == "bare" else None)
    if name == SCRIPTED:
        assert resolve_provider(name, Config(providers=aliases)).name == SCRIPTED  # litellm stays unloaded


@settings(max_examples=40, deadline=None)
@given(st.none() | st.lists(st.sampled_from(["read_file", "bash", "grep", "lookup", "weather"]), unique=True,
                            max_size=3),
       st.lists(st.sampled_from(["lookup", "grep"]), unique=True))
def test_the_loader_and_the_toolbox_offer_the_tools_of_one_rule(tools: list[str] | None, mocks: list[str]) -> None:
    lines = ["- id: c", "  turns: [Hi.]", "  script: [{content: hi}]", f"  deny: {json.dumps(tools or [])}"]
    lines += [f"  tools: {json.dumps(tools)}"] if tools is not None else []
    lines += ["  mocks:", *(f"    - {{name: {name}, responses: [{{result: ok}}]}}" for name in mocks)] if mocks else []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "g.yml"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        known = offered_tools(None, mocks)
        unknown = [name for name in tools or () if name not in known]
        try:
            (case,) = load_cases([path])
        except UserErrors as e:
            assert unknown
            messages = [f"unknown tool {name!r}" for name in unknown]
            assert [error.message for error in e.errors] == [*messages, *messages]  # deny, then tools
            return
        assert not unknown
        box = build_toolbox(case, ToolContext(Path(folder), Sandbox(), {}), mock_tools(case.mocks))
    assert box.offered == list(offered_tools(case.tools, mocks))
    assert box.offered == (tools if tools is not None
                           else [*BUILTIN_NAMES, *(m for m in mocks if m not in BUILTIN_NAMES)])
