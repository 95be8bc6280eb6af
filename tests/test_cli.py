"""The whole CLI (``runner.cli.main``) in this process: output lines and exit codes; a real subprocess where
the process is the point (a closed stdout, what importing loads)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import ExitCode
from tests.helpers import BAD_RUN, GOOD, ROOT, run_cli


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yml").write_text(GOOD)
    (cases / "bad.yml").write_text(BAD_RUN)
    return cases


def split_output(stdout: str) -> tuple[list[str], list[list[str]]]:
    """The run lines up to ``N/M passed``, and the summary after them: each line as its words,
    but for the rules under table headers; a group row's last word (its time) varies."""
    lines = stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.endswith(" passed")) + 1
    return lines[:end], [line.split() for line in lines[end:] if not line.startswith("─")]


HEADER = ["group", "passed", "accuracy", "outcome", "process", "calls", "redundant", "errors", "tokens", "time"]


def test_run_passing_group_exits_0(suite: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(suite / "good.yml"), "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    lines, summary = split_output(done.stdout)
    assert lines == ["PASS good/write-hello", "PASS good/count-lines", "2/2 passed"]
    assert summary[:3] == [[], ["scripted", "·", "default"], HEADER]
    assert [row[:-1] for row in summary[3:]] == [["good", "2/2", "100%", "-", "1.00", "1.00", "2", "0", "0", "-"]]


def test_run_failures_and_errors_exit_1_with_one_line_per_failed_check(suite: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(suite / "bad.yml"), "--results", str(tmp_path / "results"))
    assert done.returncode == 1
    lines, summary = split_output(done.stdout)
    assert lines == [
        "FAIL bad/wrong-answer",
        "  verify failed (exit 1): test -f nothing-here",
        "  out.txt does not exist",
        "ERROR bad/broken-setup: setup command failed (exit 3): exit 3",
        "ERROR bad/too-many-turns: turn limit 1 exceeded",
        "0/3 passed",
    ]
    # the setup error is not scored: of the 2 scored runs none passed, 1 run counted apart
    assert summary[4][:-1] == ["bad", "0/2", "0%", "1", "-", "0.00", "-", "1", "0", "2", "-"]
    assert summary[:4] + summary[5:] == [
        ["note:", "1", "of", "3", "runs", "not", "scored,", "ended", "by", "errors", "not", "of", "the", "agent's", "making:", "infrastructure", "1"],
        [],
        ["scripted", "·", "default"],
        [*HEADER[:2], "infra", *HEADER[2:]],
        [],
        ["failure", "cause", "runs"],
        ["missing_output", "1"],
        ["run_error", "1"],
        ["turn_limit", "1"],
    ]


def test_json_output_is_the_report_alone_and_matches_its_schema(suite: Path, tmp_path: Path) -> None:
    import json

    from jsonschema import Draft202012Validator

    done = run_cli("run", str(suite), "--output", "json", "--results", str(tmp_path / "results"))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    assert list(Draft202012Validator(schema).iter_errors(report)) == []
    assert [run["failure"] for run in report["runs"]] == ["missing_output", "run_error", "turn_limit", None, None]
    assert report["overall"]["failures"] == {"missing_output": 1, "run_error": 1, "turn_limit": 1}
    assert list(report["arms"][0]["groups"]) == ["bad", "good"]
    assert "5 passed" not in done.stdout and "2/5 passed" in done.stderr and "scripted · default" in done.stderr


def test_case_glob_and_tag_filters(suite: Path) -> None:
    listed = run_cli("run", str(suite), "-c", "good/*", "-l")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["good/write-hello", "good/count-lines"]
    tagged = run_cli("list", str(suite), "--tag", "smoke")
    assert tagged.stdout.split() [0] == "good/write-hello" and len(tagged.stdout.splitlines()) == 1


def test_no_case_selected_exits_5(suite: Path) -> None:
    done = run_cli("run", str(suite), "-c", "nothing/*")
    assert done.returncode == 5
    assert "no case selected" in done.stderr


def test_validate_misspelled_key_exits_4_with_position(tmp_path: Path) -> None:
    case_file = tmp_path / "typo.yml"
    case_file.write_text("- id: a\n  turns: [x]\n  expect:\n    response_contain: [x]\n")
    done = run_cli("validate", str(case_file))
    assert done.returncode == 4
    assert f"{case_file}:4:5" in done.stderr
    assert "did you mean 'response_contains'" in done.stderr
    assert "Traceback" not in done.stderr


def test_validate_rejects_names_that_end_in_a_newline(tmp_path: Path) -> None:
    case_file = tmp_path / "names.yml"
    case_file.write_text('- id: "fix\\n"\n  turns: [x]\n  env: {"PATH_X\\n": "1"}\n'
                         '  mocks:\n    - {name: "lookup\\n", description: d, parameters: {type: object}}\n')
    done = run_cli("validate", str(case_file))
    assert done.returncode == 4
    assert done.stderr.splitlines() == [
        (f"error: {case_file}:1:7: id: 'fix\\n' is not a valid name "
         "(use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit)"),
        (f"error: {case_file}:3:9: env: 'PATH_X\\n' is not a valid name "
         "(use letters, digits and '_', not starting with a digit)"),
        (f"error: {case_file}:5:14: mocks[0].name: 'lookup\\n' is not a valid name "
         "(use 1 to 64 letters, digits, '_' and '-')"),
    ]


def test_validate_good_files(suite: Path) -> None:
    done = run_cli("validate", str(suite / "good.yml"))
    assert done.returncode == 0
    assert done.stdout.strip() == "2 cases in 1 file are valid"


def test_bad_usage_exits_4_without_traceback() -> None:
    done = run_cli("run", "--runs", "zero")
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == "error: argument --runs: expected a whole number, got 'zero' (see 'tooltrial run --help')\n"


def test_missing_path_exits_4(tmp_path: Path) -> None:
    done = run_cli("run", str(tmp_path / "nope.yml"), "--results", str(tmp_path / "results"))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == f"error: no such file or folder: {tmp_path / 'nope.yml'}\n"
    assert not (tmp_path / "results").exists()


def test_undefined_template_variable_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "tpl.yml").write_text("- id: a\n  turns: ['hello {{ who }}']\n  script: [{content: x}]\n")
    done = run_cli("run", str(tmp_path / "tpl.yml"))
    assert done.returncode == 4
    assert "'who' is undefined" in done.stderr


def test_keep_prints_the_workspace(suite: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(suite / "good.yml"), "-c", "*/write-hello", "--keep",
                   "--results", str(tmp_path / "results"))
    kept = [line.split(": ", 1)[1] for line in done.stdout.splitlines() if "workspace kept" in line]
    assert len(kept) == 1 and (Path(kept[0]) / "out.txt").read_text() == "hello\n"


def test_schema_prints_json() -> None:
    done = run_cli("schema")
    assert (done.returncode, done.stderr) == (0, "")
    schema = json.loads((ROOT / "schemas" / "case.schema.json").read_text(encoding="utf-8"))
    assert done.stdout == json.dumps(schema, indent=2) + "\n"
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_import_runner_does_not_import_litellm() -> None:
    code = "import sys, runner, runner.cli; print('litellm' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.stdout.strip() == "False"


def test_validate_renders_templates_like_run_does(tmp_path: Path) -> None:
    case_file = tmp_path / "tpl.yml"
    case_file.write_text("- id: a\n  turns: ['{{ undefined_var.x }}']\n  script: [{content: x}]\n")
    done = run_cli("validate", str(case_file))
    assert done.returncode == 4
    assert done.stderr.strip() == (f"error: {case_file}:2:11: tpl/a.turns[0]: 'undefined_var' is undefined"
                                   " (define it under the case's vars:, or check its spelling)")


def test_a_template_syntax_error_names_the_case_the_template_line_and_the_fix(tmp_path: Path) -> None:
    case_file = tmp_path / "tpl.yml"
    case_file.write_text("- id: a\n  turns: [ok]\n  script: [{content: x}]\n"
                         "- id: b\n  turns: [first, \"line one\\n{{ unclosed\"]\n  script: [{content: x}]\n")
    done = run_cli("validate", str(case_file))
    assert done.returncode == 4
    assert done.stderr.strip() == (
        f"error: {case_file}:5:18: tpl/b.turns[1]: unexpected end of template, expected 'end of print statement'."
        " (line 2 of the template; close each {{ with }} and each {% with %}; write {{ '{{' }} for literal braces)")


def test_report_or_junit_path_that_is_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    for flag in ("--report", "--junit"):
        done = run_cli("run", "cases/fs.yml", flag, str(tmp_path), "--results", str(tmp_path / "r"))
        assert done.returncode == 4, done.stderr
        assert done.stderr.startswith(f"error: {flag} {tmp_path} is a folder (give a file path")
        assert not (tmp_path / "r").exists()  # refused before any run


def test_bad_numbers_are_named_plainly() -> None:
    done = run_cli("run", "-j", "abc")
    assert done.returncode == 4
    assert done.stderr.startswith("error: argument -j/--jobs: expected a whole number, got 'abc'")


def test_validate_a_folder_without_case_files_exits_5(tmp_path: Path) -> None:
    done = run_cli("validate", str(tmp_path))
    assert (done.returncode, done.stderr.strip()) == (5, "no case file found")


def test_a_closed_stdout_stops_the_run_as_ctrl_c_does(tmp_path: Path) -> None:
    # as `tooltrial run | head -1` once head has gone: rich alone would exit with 1, the agent's failure code,
    # and write no report
    command = [sys.executable, "-m", "runner", "run", str(ROOT / "cases" / "fs.yml"), "--results", str(tmp_path)]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == ExitCode.INTERRUPTED
    (folder,) = tmp_path.iterdir()
    assert err.endswith(f"results: {folder}\n") and "Traceback" not in err
    report = json.loads((folder / "report.json").read_text())
    assert report["exit_code"] == ExitCode.INTERRUPTED
    assert report["unfinished"] and len(report["runs"]) + len(report["unfinished"]) == 5


def test_validate_reports_every_template_error_of_a_case(tmp_path: Path) -> None:
    case_file = tmp_path / "two.yml"
    case_file.write_text("- id: two\n  system: '{{ s }}'\n  turns: ['{{ a }}', '{{ b }}']\n  script: [{content: x}]\n")
    done = run_cli("validate", str(case_file))
    assert done.returncode == 4
    assert [line.split(": ")[2:] for line in done.stderr.splitlines()] == [
        ["two/two.system", "'s' is undefined (define it under the case's vars:, or check its spelling)"],
        ["two/two.turns[0]", "'a' is undefined (define it under the case's vars:, or check its spelling)"],
        ["two/two.turns[1]", "'b' is undefined (define it under the case's vars:, or check its spelling)"],
    ]

