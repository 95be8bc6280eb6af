"""Input that once crashed or wasted a suite, through the real CLI: each is a clear error, exit 4,
before any run starts. Templates that fail as they render or go past a size or time limit,
absurd seconds, malformed run files given to ``report`` and ``--resume``, output paths that
cannot be written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main

LIMIT_HINT = "a prompt needs far less: build shorter text, or loop over fewer items"
FAILED_HINT = "the expression failed as the template rendered"
NOT_OURS = "not a file this tooltrial wrote as it is: restore it, or move it out of the results folder"
WRITE_HINT = "give a path in a folder you can write to"
CASE = "- id: a\n  turns: [Hi.]\n  script: [{content: hi}]\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder as the current one (no tooltrial.yml), holding ``g.yml`` with case ``g/a``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.yml").write_text(CASE, encoding="utf-8")
    return tmp_path


def refused(project: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """stderr of ``tooltrial run ARGV`` (results under ``project/results``), which must exit 4 and start
    no run, less the warnings about the sandbox a machine may print first."""
    assert main(["run", *argv, "--results", str(project / "results")]) == 4
    assert not (project / "results").exists()
    out, err = capsys.readouterr()
    assert out == ""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("warning:"))


@pytest.mark.parametrize(
    ("template", "error"),
    [
        ("{{ 1/0 }}", f"ZeroDivisionError: division by zero ({FAILED_HINT})"),
        ("{{ range(10**9)|list }}", ("OverflowError: Range too big. The sandbox blocks ranges larger than MAX_RANGE "
                                     f"(100000). ({FAILED_HINT})")),
        ("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(1) }}",
         "the template recurses too deeply (a macro that calls itself needs a condition that stops it)"),
        ("{{ 'a' * 10**10 }}", f"the template builds a value of more than 1,000,000 characters ({LIMIT_HINT})"),
        ("{{ 'a'.center(10**10) }}", f"the template builds a value (str.center) of more than 1,000,000 characters ({LIMIT_HINT})"),
        ("{{ '{:>9999999999}'.format(1) }}",
         f"the template builds a value (str.format) of more than 1,000,000 characters ({LIMIT_HINT})"),
        ("{{ '%*d' % (10**10, 1) }}", f"the template builds a value of more than 1,000,000 characters ({LIMIT_HINT})"),
        ("{{ 'a'|center(9999999999) }}", f"the template builds a value (|center) of more than 1,000,000 characters ({LIMIT_HINT})"),
        ("{{ 7 ** 9999999 }}", "the template builds an integer of more than 1,000,000 bits (use smaller numbers)"),
        ("{% set b = 'x' * 999999 %}{{ [b, b] }}", f"the template builds a value of more than 1,000,000 characters ({LIMIT_HINT})"),
    ],
)
def test_a_turn_that_fails_or_builds_too_much_is_refused_before_any_run(
    project: Path, capsys: pytest.CaptureFixture[str], template: str, error: str
) -> None:
    path = project / "g.yml"
    path.write_text(f"- id: a\n  turns: [Hi., {json.dumps(template)}]\n  script: [{{content: hi}}]\n", encoding="utf-8")
    assert refused(project, capsys, str(path)) == f"error: {path}:2:16: g/a.turns[1]: {error}\n"


def test_loops_that_never_end_in_practice_stop_at_the_render_deadline(project: Path, capsys) -> None:
    nested = "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"
    over_text = "{% set s = 'x' * 99999 %}{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}"
    (project / "p.j2").write_text(f"You help.\n{nested}\n", encoding="utf-8")
    path = project / "g.yml"
    path.write_text(f"- id: a\n  turns: [Hi.]\n  system: {json.dumps(over_text)}\n  script: [{{content: hi}}]\n"
                    f"- id: b\n  turns: [Hi.]\n  script: [{{content: hi}}]\n", encoding="utf-8")
    hint = "a loop or a recursive macro runs too long: loop over fewer items"
    assert refused(project, capsys, str(path), "-P", str(project / "p.j2")) == (
        f"error: {path}:3:11: g/a.system: the template ran for more than 1 s of CPU time ({hint})\n"
        f"error: {project / 'p.j2'}:2: the template ran for more than 1 s of CPU time ({hint})\n"
    )


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("timeout: .inf", ("3:12: expected a finite number, got infinity "
                           "(JSON has no infinity or NaN: write a number under 1e308, or quote it to make it text)")),
        ("timeout: .nan", ("3:12: expected a finite number, got NaN "
                           "(JSON has no infinity or NaN: write a number under 1e308, or quote it to make it text)")),
        ("timeout: 1e300", "3:12: timeout: must be at most 86400, got 1e+300"),
        ("command_timeout: 1e300", "3:20: command_timeout: must be at most 86400, got 1e+300"),
        ("runs: 1000000000", "3:9: runs: must be at most 10000, got 1000000000"),
    ],
)
def test_absurd_seconds_and_runs_in_a_case_are_refused(project: Path, capsys, line: str, error: str) -> None:
    path = project / "g.yml"
    path.write_text(f"- id: a\n  turns: [Hi.]\n  {line}\n  script: [{{content: hi}}]\n", encoding="utf-8")
    assert refused(project, capsys, str(path)) == f"error: {path}:{error}\n"


@pytest.mark.parametrize("seconds", ["inf", "nan", "1e300", "86401", "0"])
def test_absurd_seconds_for_timeout_are_refused(project: Path, capsys, seconds: str) -> None:
    assert refused(project, capsys, "g.yml", "--timeout", seconds) == (
        f"error: argument --timeout: must be greater than 0 and at most 86400 (a day), got {seconds} "
        "(see 'tooltrial run --help')\n"
    )


def test_absurd_runs_on_the_command_line_are_refused(project: Path, capsys) -> None:
    assert refused(project, capsys, "g.yml", "--runs", "1000000000") == (
        "error: argument --runs: must be at most 10000, got 1000000000 (see 'tooltrial run --help')\n"
    )


def test_absurd_seconds_in_the_config_are_refused(project: Path, capsys) -> None:
    config = project / "tooltrial.yml"
    config.write_text("providers:\n  box: {model: ollama/x, timeout: 1e300, retries: {backoff: 1e12}}\n", encoding="utf-8")
    assert refused(project, capsys, "g.yml") == (
        f"error: {config}:2:35: providers.box.timeout: must be at most 86400, got 1e+300\n"
        f"error: {config}:2:61: providers.box.retries.backoff: must be at most 86400, got 1000000000000.0\n"
    )


@pytest.fixture
def finished(project: Path) -> Path:
    """A results folder of one finished run of ``g/a``."""
    assert main(["run", "g.yml", "--results", str(project / "done")]) == 0
    (folder,) = (project / "done").iterdir()
    return folder


def _first_run(folder: Path) -> Path:
    return min((folder / "runs").iterdir())


@pytest.mark.parametrize(
    ("change", "where", "error"),
    [
        (lambda d: {**d, "checks": "all"}, "checks", "expected an array, got a string"),
        (lambda d: {k: v for k, v in d.items() if k != "case"}, "(file)", "missing required key 'case'"),
        (lambda d: {**d, "steps": 5}, "steps", "expected an array, got an integer"),
        (lambda d: [d], "(file)", "expected an object, got an array"),
        (lambda d: {**d, "tokens": {"prompt": "many"}}, "tokens.prompt", "expected an integer or null, got a string"),
        (lambda d: {**d, "model_requests": [5]}, "model_requests[0]", "expected an object, got an integer"),
        (lambda d: {**d, "checks": [{"check": "a", "passed": True, "message": "", "usage": {"prompt_tokens": "x"}}]},
         "checks[0].usage", "missing required key 'completion_tokens'"),
        (lambda d: {**d, "changes": {"added": [1]}}, "changes.added[0]", "expected a string, got an integer"),
    ],
)
def test_a_malformed_run_file_is_named_by_report_and_resume(
    finished: Path, project: Path, capsys, change: Any, where: str, error: str
) -> None:
    run = _first_run(finished)
    run.write_text(json.dumps(change(json.loads(run.read_text()))), encoding="utf-8")
    capsys.readouterr()
    line = f"error: {run}: {where}: {error} ({NOT_OURS})\n"
    assert main(["report", str(finished)]) == 4
    assert capsys.readouterr() == ("", line)
    assert refused(project, capsys, "g.yml", "--resume", str(finished)) == line


def test_a_truncated_run_file_and_a_malformed_report_are_named(finished: Path, project: Path, capsys) -> None:
    run = _first_run(finished)
    good = run.read_text()
    run.write_text(good[:40], encoding="utf-8")
    capsys.readouterr()
    assert main(["report", str(finished)]) == 4
    assert capsys.readouterr().err.startswith(f"error: cannot read {run}: Unterminated string starting at: line 3")
    run.write_text(good, encoding="utf-8")
    report = finished / "report.json"
    report.write_text(json.dumps({**json.loads(report.read_text()), "unfinished": 5}), encoding="utf-8")
    assert main(["report", str(finished)]) == 4
    assert capsys.readouterr().err == f"error: {report}: unfinished: expected an array, got an integer ({NOT_OURS})\n"


def test_output_paths_that_cannot_be_written_are_refused_before_any_run(project: Path, capsys) -> None:
    (project / "folder").mkdir()
    (project / "file").write_text("", encoding="utf-8")
    cases = ["g.yml"]
    assert refused(project, capsys, *cases, "--report", "folder") == (
        "error: --report folder is a folder (give a file path, e.g. folder/report.json)\n")
    assert refused(project, capsys, *cases, "--junit", "file/junit.xml") == (
        "error: --junit file/junit.xml: file is a file, not a folder (give a path inside a folder)\n")
    assert refused(project, capsys, *cases, "--record", "file") == (
        "error: --record file is a file (give a folder, or a path where one can be made)\n")
    assert refused(project, capsys, *cases, "--record", "file/rec") == (
        "error: --record file/rec: file is a file, not a folder (give a path inside a folder)\n")
    # /proc takes no new files, for root too (permissions would not stop root)
    assert refused(project, capsys, *cases, "--report", "/proc/tooltrial/report.json") == (
        f"error: --report /proc/tooltrial/report.json cannot be written: /proc: No such file or directory ({WRITE_HINT})\n")
    assert main(["run", *cases, "--results", "/proc/tooltrial"]) == 4
    assert capsys.readouterr().err == (
        f"error: --results /proc/tooltrial cannot be written: /proc: No such file or directory ({WRITE_HINT})\n")
    assert sorted(p.name for p in project.iterdir()) == ["file", "folder", "g.yml"]  # no probe left behind
    assert main(["run", *cases, "--results", "results", "--report", "new/deeper/r.json"]) == 0
    document = json.loads((project / "new/deeper/r.json").read_text())
    assert [document["overall"][k] for k in ("passed", "failed", "errored")] == [1, 0, 0]
    shutil.rmtree(project / "results")
