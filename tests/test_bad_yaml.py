"""YAML that parses but is no plain data, through the real CLI: alias bombs, recursive aliases, tags.

Each is refused with its file, line and column, exit 4, before any run starts; the
plain YAML around them (anchors reused many times, merge keys, core-schema tags)
still loads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.cli import main

BOMB_HINT = "each alias repeats the whole value of its anchor; alias smaller values, or fewer times"
PLAIN = "remove the tag: case and config files hold text, numbers, booleans, lists and mappings"


def billion_laughs(levels: int = 10) -> str:
    """``levels`` anchors, each a list of ten aliases of the one before: 10**levels values."""
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def within(seconds: float, call: Callable[[], int]) -> int:
    """``call()``'s result; fails the test (rather than hang it) when it has not returned in ``seconds``."""
    result: list[int] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"still running after {seconds} s"
    return result[0]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_an_alias_bomb_case_file_fails_at_the_alias_that_passes_the_limit(project: Path, capsys) -> None:
    bomb = project / "bomb.yml"
    bomb.write_text(billion_laughs(), encoding="utf-8")  # 610 bytes for 10**10 values
    assert within(60, lambda: main(["validate", str(bomb)])) == 4
    line = f"error: {bomb}:5:45: YAML aliases expand to more than 100,000 values ({BOMB_HINT})\n"
    assert capsys.readouterr().err == line
    assert within(60, lambda: main(["run", str(bomb), "--results", str(project / "results")])) == 4
    assert capsys.readouterr().err == line
    assert not (project / "results").exists()


def test_an_alias_bomb_config_file_fails_before_any_run(project: Path, capsys) -> None:
    cases = project / "one.yml"
    cases.write_text("- {id: a, turns: [Hi.], script: [{content: hi}]}\n", encoding="utf-8")
    config = project / "tooltrial.yml"
    config.write_text(billion_laughs(), encoding="utf-8")
    assert within(60, lambda: main(["run", str(cases), "--results", str(project / "results")])) == 4
    assert capsys.readouterr().err == f"error: {config}:5:45: YAML aliases expand to more than 100,000 values ({BOMB_HINT})\n"
    assert not (project / "results").exists()


def test_an_anchor_reused_by_many_cases_still_loads(project: Path, capsys) -> None:
    defaults = "\n".join(f"    V{n}: value {n}" for n in range(60))
    cases = "".join(f"- <<: *base\n  id: c{n}\n  turns: [Hi.]\n" for n in range(400))  # 400 x 64 values
    path = project / "reuse.yml"
    path.write_text(f"- &base\n  id: c-base\n  turns: [Hi.]\n  env:\n{defaults}\n{cases}", encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    assert capsys.readouterr().out == "401 cases in 1 file are valid\n"


@pytest.mark.parametrize(
    ("yaml", "error"),
    [
        ("&v [*v]", "3:17: recursive YAML alias *v (an alias cannot stand inside the value of its own anchor &v)"),
        ("&v {x: *v}", "3:20: recursive YAML alias *v (an alias cannot stand inside the value of its own anchor &v)"),
        ("&v {<<: *v}", "3:21: recursive YAML alias *v (an alias cannot stand inside the value of its own anchor &v)"),
        ("!foo [x]", f"3:13: unsupported YAML tag !foo ({PLAIN})"),
        ("!foo {a: 1}", f"3:13: unsupported YAML tag !foo ({PLAIN})"),
        ("!!omap [a: 1]", "3:13: unsupported YAML tag !!omap (write a mapping)"),
        ("!!python/object/apply:os.system [ls]", f"3:13: unsupported YAML tag !!python/object/apply:os.system ({PLAIN})"),
        ("!!binary aGk=", "3:13: unsupported YAML tag !!binary (write the data as text, e.g. base64 in a string)"),
        ("!!set {a}", "3:13: unsupported YAML tag !!set (write a list)"),
        ("!!str [a]", "3:13: YAML tag !!str cannot mark a list (remove the tag)"),
        ("!<tag:example.com,2000:x> 5", f"3:13: unsupported YAML tag tag:example.com,2000:x ({PLAIN})"),
        (".inf", ("3:13: expected a finite number, got infinity "
                  "(JSON has no infinity or NaN: write a number under 1e308, or quote it to make it text)")),
    ],
)
def test_tags_and_aliases_that_are_no_plain_data_are_positioned_errors(project: Path, capsys, yaml: str, error: str) -> None:
    path = project / "tagged.yml"
    path.write_text(f"- id: a\n  turns: [Hi.]\n  vars: {{x: {yaml}}}\n  script: [{{content: hi}}]\n", encoding="utf-8")
    assert main(["run", str(path), "--results", str(project / "results")]) == 4
    assert capsys.readouterr().err == f"error: {path}:{error}\n"
    assert not (project / "results").exists()


def test_a_tag_in_the_config_file_is_a_positioned_config_error(project: Path, capsys) -> None:
    cases = project / "one.yml"
    cases.write_text("- {id: a, turns: [Hi.], script: [{content: hi}]}\n", encoding="utf-8")
    config = project / "tooltrial.yml"
    config.write_text("providers:\n  box: !!python/object/apply:os.system [echo owned]\n", encoding="utf-8")
    assert main(["run", str(cases), "--results", str(project / "results")]) == 4
    assert capsys.readouterr().err == f"error: {config}:2:8: unsupported YAML tag !!python/object/apply:os.system ({PLAIN})\n"
    assert not (project / "results").exists()


def test_core_schema_tags_merge_keys_and_a_lone_merge_sign_are_plain_data(project: Path, capsys) -> None:
    path = project / "plain.yml"
    path.write_text(
        "- id: a\n"
        "  vars: &v {n: !!str 5, m: !!int '7', f: !!float 1, s: ! [x], lone: <<, when: 2024-01-31}\n"
        "  turns: [\"{{ n ~ '|' ~ (m + 1) ~ '|' ~ f ~ '|' ~ s[0] ~ '|' ~ lone ~ '|' ~ when ~ '|' ~ extra }}\"]\n"
        "  expect: {response_contains: ['5|8|1.0|x|<<|2024-01-31|e']}\n"
        "  script: [{content: 5|8|1.0|x|<<|2024-01-31|e}]\n"
        "- id: b\n"
        "  vars: {<<: *v, extra: e}\n"
        "  turns: [\"{{ n ~ '|' ~ (m + 1) ~ '|' ~ f ~ '|' ~ s[0] ~ '|' ~ lone ~ '|' ~ when ~ '|' ~ extra }}\"]\n"
        "  expect: {response_contains: ['5|8|1.0|x|<<|2024-01-31|e']}\n"
        "  script: [{content: 5|8|1.0|x|<<|2024-01-31|e}]\n",
        encoding="utf-8",
    )
    assert main(["validate", str(path)]) == 4  # case a has no 'extra': the template check names it
    assert capsys.readouterr().err == (
        f"error: {path}:3:11: plain/a.turns[0]: 'extra' is undefined (define it under the case's vars:, or check its spelling)\n"
    )
    assert main(["run", str(path), "-c", "plain/b", "--results", str(project / "results")]) == 0
    assert "PASS plain/b" in capsys.readouterr().out
