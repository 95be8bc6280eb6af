"""A template error is reported where the template is written (the turn's own line, the line of a
``|`` block, the ``-P`` file's line), by ``validate`` and ``run`` alike, and a misspelt name gets the
nearest one there is: never advice to define a ``case`` attribute under ``vars:``. Every error of each
template is reported, not just the first, each once however many cases share it (``validate`` names them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.errors import ExitCode
from tests.helpers import run_cli

MISSPELT = """\
# a group whose templates misspell names
- id: hello
  turns:
    - Say hello.
    - |
      Now say goodbye to
      {{ case.ful_id }} please.
  script: [{content: hello}, {content: bye}]
- id: top
  vars: {name: Ada}
  turns: ["Hi {{ nme }}"]
  script: [{content: hi}]
"""


@pytest.mark.parametrize("command", [["validate"], ["run", "--results", "results"]])
def test_a_misspelt_case_attribute_or_variable_is_named_at_its_own_line_with_the_nearest_name(
        tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "demo.yml").write_text(MISSPELT)
    done = run_cli(command[0], "demo.yml", *command[1:], cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr.splitlines() == [
        "error: demo.yml:7:7: demo/hello.turns[1]: case has no attribute 'ful_id' (did you mean 'full_id'?)",
        "error: demo.yml:11:11: demo/top.turns[0]: 'nme' is undefined (did you mean 'name'?)",
    ]
    assert not (tmp_path / "results").exists()


def test_an_attribute_case_lacks_lists_those_it_has_and_vars_gets_the_nearest_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "g.yml").write_text(
        "- id: a\n  turns: ['{{ case.owner }}']\n  script: [{content: x}]\n"
        "- id: b\n  vars: {name: Ada}\n  turns: ['{{ vars.nam }}']\n  script: [{content: x}]\n")
    done = run_cli("validate", "g.yml", cwd=tmp_path)
    assert done.stderr.splitlines() == [
        "error: g.yml:2:11: g/a.turns[0]: case has no attribute 'owner' (case has id, group, full_id, description, tags)",
        "error: g.yml:6:11: g/b.turns[0]: vars has no attribute 'nam' (did you mean 'name'?)",
    ]


def test_a_template_in_the_defaults_or_a_turn_s_content_is_placed_where_it_is_written(tmp_path: Path) -> None:
    (tmp_path / "d.yml").write_text(
        "defaults:\n"
        "  system: |\n"
        "    You are an agent.\n"
        "    Work on {{ case.idd }}.\n"
        "cases:\n"
        "  - id: one\n"
        "    turns:\n"
        "      - content: \"first line\\n{{ undefined_x }}\"\n"
        "        expect: {response_contains: x}\n"
        "    script: [{content: x}]\n")
    done = run_cli("validate", "d.yml", cwd=tmp_path)
    assert done.stderr.splitlines() == [
        "error: d.yml:4:5: d/one.system: case has no attribute 'idd' (did you mean 'id'?)",
        # a quoted text's second line has no line of its own in the file: its start, and the line named
        ("error: d.yml:8:18: d/one.turns[0]: 'undefined_x' is undefined"
         " (line 2 of the template; define it under the case's vars:, or check its spelling)"),
    ]


def test_a_p_template_s_error_is_at_its_line_in_that_file_with_the_nearest_name(tmp_path: Path) -> None:
    (tmp_path / "ok.yml").write_text("- id: one\n  turns: [Hi.]\n  script: [{content: x}]\n")
    (tmp_path / "mine.j2").write_text("You are an agent.\nYou work on {{ case.ful_id }}.\n")
    validated = run_cli("validate", "ok.yml", "-P", "mine.j2", cwd=tmp_path)
    assert (validated.returncode, validated.stderr) == (
        ExitCode.USAGE, "error: mine.j2:2: case has no attribute 'ful_id', for ok/one (did you mean 'full_id'?)\n")
    ran = run_cli("run", "ok.yml", "-P", "mine.j2", "--results", "results", cwd=tmp_path)
    assert (ran.returncode, ran.stderr) == (
        ExitCode.USAGE, "error: mine.j2:2: case has no attribute 'ful_id' (did you mean 'full_id'?)\n")


def test_a_key_a_loop_variable_lacks_names_the_nearest_of_its_keys(tmp_path: Path) -> None:
    (tmp_path / "ok.yml").write_text("- id: one\n  turns: [Hi.]\n  script: [{content: x}]\n")
    (tmp_path / "tools.j2").write_text("Your tools:\n{% for t in tools %}- {{ t.nmae }}\n{% endfor %}")
    validated = run_cli("validate", "ok.yml", "-P", "tools.j2", cwd=tmp_path)
    assert (validated.returncode, validated.stderr) == (
        ExitCode.USAGE, "error: tools.j2:2: 'dict object' has no attribute 'nmae', for ok/one (did you mean 'name'?)\n")


MANY = """\
- {id: a, tools: [read_file], turns: [Hi.], script: [{content: x}]}
- {id: b, tools: [read_file], turns: [Hi.], script: [{content: x}]}
- {id: c, tools: [read_file], turns: [Hi.], script: [{content: x}]}
- {id: d, tools: [read_file], turns: [Hi.], script: [{content: x}]}
- {id: e, tools: [read_file], vars: {repo: calc}, turns: ['Hi {{ rpo }}.'], script: [{content: x}]}
- {id: own, system: Own prompt., turns: [Hi.], script: [{content: x}]}
"""
PROMPT = """\
You are {{ agnet }}, on {{ case.full_id }}.
Tools: {% for t in tools %}{{ t.nmae }} {% endfor %}{{ maybe | default('') }}
{% if repo is defined %}Repo: {{ repo }}{% endif %} {{ vars.repo }} in {{ workspace }}
{{ 1 // 0 }}
"""


def test_validate_reports_every_error_of_every_p_template_once_each_by_line_naming_the_cases(tmp_path: Path) -> None:
    (tmp_path / "many.yml").write_text(MANY)
    (tmp_path / "mine.j2").write_text(PROMPT)
    (tmp_path / "other.j2").write_text("Work in {{ workspce }}.\n")
    done = run_cli("validate", "many.yml", "-P", "mine.j2", "-P", "other.j2", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr.splitlines() == [
        "error: many.yml:5:59: many/e.turns[0]: 'rpo' is undefined (did you mean 'repo'?)",
        "error: mine.j2:1: 'agnet' is undefined, for all 5 cases (define it under the case's vars:, or check its spelling)",
        "error: mine.j2:2: 'dict object' has no attribute 'nmae', for all 5 cases (did you mean 'name'?)",
        ("error: mine.j2:3: vars has no attribute 'repo', for many/a, many/b, many/c and 1 more"
         " (define it under the case's vars:, or check its spelling)"),
        ("error: mine.j2:4: ZeroDivisionError: integer division or modulo by zero, for all 5 cases"
         " (the expression failed as the template rendered)"),
        "error: other.j2:1: 'workspce' is undefined, for all 5 cases (did you mean 'workspace'?)",
    ]


TEMPLATED = """\
defaults:
  system: |
    You are an agent.
    Work on {{ case.idd }} with {{ tolls }}.
cases:
  - id: one
    vars: {name: Ada}
    turns:
      - "Hi {{ nme }}, from {{ case.ful_id }}."
      - Bye.
    script: [{content: hi}, {content: bye}]
  - id: two
    turns: [Hi.]
    script: [{content: hi}]
"""


def test_validate_reports_every_error_of_each_case_template_and_run_refuses_with_them_all(tmp_path: Path) -> None:
    (tmp_path / "d.yml").write_text(TEMPLATED)
    validated = run_cli("validate", "d.yml", cwd=tmp_path)
    assert (validated.returncode, validated.stdout) == (ExitCode.USAGE, "")
    assert validated.stderr.splitlines() == [
        "error: d.yml:4:5: d/one.system: case has no attribute 'idd', for all 2 cases (did you mean 'id'?)",
        "error: d.yml:4:5: d/one.system: 'tolls' is undefined, for all 2 cases (did you mean 'tools'?)",
        "error: d.yml:9:9: d/one.turns[0]: 'nme' is undefined (did you mean 'name'?)",
        "error: d.yml:9:9: d/one.turns[0]: case has no attribute 'ful_id' (did you mean 'full_id'?)",
    ]
    ran = run_cli("run", "d.yml", "--results", "results", cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (ExitCode.USAGE, "")
    assert ran.stderr.splitlines() == [line.replace(", for all 2 cases", "") for line in validated.stderr.splitlines()]
    assert not (tmp_path / "results").exists()
