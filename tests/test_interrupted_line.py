"""The lines an interruption and a resume print: ten cases named at most (report.json lists every run), the
command that resumes, as typed, and a resume from a folder that holds none of the plan's runs says so."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from runner.cli.run import resume_line
from runner.terminal.console import make_console
from runner.terminal.lines import print_interrupted


def test_the_interruption_names_the_first_ten_cases_and_counts_the_rest() -> None:
    out = io.StringIO()
    left = [(f"g/c{n:03d}", "scripted", "default", run) for n in range(2630 // 2) for run in (1, 2)]
    print_interrupted(make_console(out), left, Path("results/x"), finished=3)
    first, second = out.getvalue().splitlines()
    named = ", ".join(f"g/c{n:03d}" for n in range(10))
    assert first == f"interrupted: 2630 runs did not finish (cases: {named} and 1305 more)"
    assert second == "to run just those: tooltrial run <the same arguments> --resume results/x"


@pytest.mark.parametrize(("words", "line"), [
    (["run", "cases/", "-c", "fix/*", "-p", "ollama/qwen3"],
     "tooltrial run cases/ -c 'fix/*' -p ollama/qwen3 --resume 'my results/x'"),
    (["run", "--resume", "results/old", "-j", "2", "--resume=results/older", "--resu", "r"],
     "tooltrial run -j 2 --resume 'my results/x'"),
    (["run", "--results", "out", "-P", "it's.j2"], "tooltrial run --results out -P 'it'\"'\"'s.j2' --resume 'my results/x'"),
])
def test_the_resume_line_is_the_command_as_typed_with_resume_in_place_quoted_to_paste(words: list[str], line: str) -> None:
    assert resume_line(words, Path("my results/x")) == line
    out = io.StringIO()
    print_interrupted(make_console(out), [("g/a", "p", "d", 1)], Path("my results/x"), finished=1, again=line)
    assert out.getvalue().splitlines()[1] == f"to run just those: {line}"


def test_ten_cases_or_fewer_are_all_named() -> None:
    out = io.StringIO()
    print_interrupted(make_console(out), [("g/a", "p", "d", 1), ("g/b", "p", "d", 1)], Path("r"), finished=0)
    assert out.getvalue().splitlines() == ["interrupted: 2 runs did not finish (cases: g/a, g/b)",
                                           "no run finished: run the same command again"]


def test_resuming_from_a_folder_of_another_suite_says_none_of_its_runs_is_of_this_plan(tmp_path: Path) -> None:
    from tests.helpers import cli_output

    (tmp_path / "a.yml").write_text("- {id: one, turns: [Hi.], script: [{content: hi}]}\n")
    (tmp_path / "b.yml").write_text("- {id: two, turns: [Hi.], script: [{content: hi}]}\n")
    code, _, err = cli_output(["run", str(tmp_path / "a.yml"), "--results", str(tmp_path / "first")])
    assert code == 0, err
    (folder,) = (tmp_path / "first").iterdir()
    code, out, err = cli_output(["run", str(tmp_path / "b.yml"), "--resume", str(folder), "--results", str(tmp_path / "again")])
    assert code == 0, err
    assert out.splitlines()[0] == ("resuming: 0 of 1 runs are done already: none of the 1 run that folder holds is of "
                                   "this plan (other cases, providers, prompts or --runs?)")
