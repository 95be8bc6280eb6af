"""``expect.check``: checks written in any language, run through the CLI in this process with the scripted provider
under both sandboxes: the verdict, score and message each decides, the files it reads and the agent cannot reach,
a command that hangs, huge and invalid UTF-8 output, malformed verdicts and mistakes in the case file."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from runner.checks.command import Malformed, verdict_of
from tests.helpers import cli_output
from tests.sandboxes import MODES

GRADE_PY = """\
import json, os
reply = open(os.environ["TOOLTRIAL_REPLY"], encoding="utf-8").read()
trace = json.load(open(os.environ["TOOLTRIAL_TRACE"], encoding="utf-8"))
turns = json.load(open(os.environ["TOOLTRIAL_TURNS"], encoding="utf-8"))
wrote = [c["arguments"]["path"] for c in trace if c["name"] == "write_file" and c["status"] == "executed"]
print("grading...")
print(json.dumps({"pass": "42" in reply, "score": 0.75 if wrote == ["out.txt"] else 0.0,
                  "message": f"{len(turns)} turn(s), wrote {wrote}, reply {reply!r}"}))
"""
GRADE_SH = """\
if grep -q 'hi there' out.txt; then echo '{"message": "out.txt greets"}'; exit 0; fi
echo '{"pass": false, "score": 0.25, "message": "out.txt does not greet"}'
"""


def _run(tmp_path: Path, cases: list[dict[str, Any]], sandbox: str = "none") -> tuple[int, str, list[dict[str, Any]]]:
    """Run ``cases`` (written as JSON, which is YAML) with the scripted provider: exit code, stdout, run records."""
    path = tmp_path / "checks.yml"
    path.write_text(json.dumps(cases), encoding="utf-8")
    results = tmp_path / "r"
    code, out, err = cli_output(["run", str(path), "-p", "scripted", "--sandbox", sandbox, "--results", str(results)])
    assert "Traceback" not in out + err, err
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(results.glob("*/runs/*.json"))]
    return code, out, runs


def _case(case_id: str, check: Any, reply: str = "The answer is 42.", content: str = "hi there", **more: Any) -> dict[str, Any]:
    return {"id": case_id, "turns": ["Write the greeting"], "files": {"grade.py": GRADE_PY, "grade.sh": GRADE_SH},
            "expect": {"check": check},
            "script": [{"tool_calls": [{"name": "write_file", "arguments": {"path": "out.txt", "content": content}}]},
                       {"content": reply}], **more}


def _checks(run: dict[str, Any]) -> list[tuple[bool, str, str, float | None]]:
    return [(c["passed"], c["category"], c["message"], c["score"]) for c in run["checks"] if c["check"] == "check"]


@pytest.mark.parametrize("sandbox", MODES)
def test_a_python_and_a_shell_check_decide_pass_fail_and_a_partial_score(tmp_path: Path, sandbox: str) -> None:
    both = ["python3 grade.py", {"run": "sh grade.sh", "name": "greeting"}]
    code, out, runs = _run(tmp_path, [_case("good", both), _case("bad", both, reply="No idea.", content="bye")],
                           sandbox)
    assert code == 1
    good, bad = sorted(runs, key=lambda run: run["case"] != "checks/good")
    assert _checks(good) == [
        (True, "outcome", ("check python3 grade.py: 1 turn(s), wrote ['out.txt'], reply 'The answer is 42.' "
                           "(score 0.75)"), 0.75),
        (True, "outcome", "check greeting: out.txt greets", None),
    ]
    assert (good["status"], good["outcome"], good["failure"]) == ("pass", (0.75 + 1) / 2, None)
    assert _checks(bad) == [
        (False, "outcome", "check python3 grade.py: 1 turn(s), wrote ['out.txt'], reply 'No idea.' (score 0.75)", 0.75),
        (False, "outcome", "check greeting: out.txt does not greet (score 0.25)", 0.25),
    ]
    assert (bad["status"], bad["outcome"], bad["failure"]) == ("fail", (0.75 + 0.25) / 2, "check_failed")
    assert "  check greeting: out.txt does not greet (score 0.25)\n" in out  # the FAIL line's message
    phases = [(c["phase"], c["command"], c["exit_code"]) for c in bad["commands"]]
    assert phases == [("check", "python3 grade.py", 0), ("check", "sh grade.sh", 0)]
    assert bad["commands"][0]["stdout"].startswith("grading...\n{")


def test_exit_status_alone_decides_and_a_process_check_counts_in_the_process_score(tmp_path: Path) -> None:
    checks = [{"run": "test -f out.txt", "name": "made", "process": True}, {"run": "exit 3", "name": "three"},
              {"run": 'echo \'{"pass": true, "message": "said yes"}\'; exit 2', "name": "liar"},
              {"run": "python3 -c '1/0'", "name": "crash"}]
    code, _, (run,) = _run(tmp_path, [_case("exits", checks)])
    assert code == 1
    assert _checks(run) == [(True, "process", "check made: passed", None),
                            (False, "outcome", "check three: failed (exit 3)", None),
                            (False, "outcome", "check liar: said yes (exit 2)", None),
                            (False, "outcome", "check crash: failed (exit 1): ZeroDivisionError: division by zero", None)]
    assert (run["process"], run["outcome"], run["failure"]) == (1.0, 0.0, "check_failed")


@pytest.mark.parametrize("sandbox", MODES)
def test_the_files_are_written_after_the_agent_outside_its_reach(tmp_path: Path, sandbox: str) -> None:
    # The agent leaves files named as the check's are, and looks for the check's folder while it runs.
    look = "ls -d /tmp/tooltrial-check-* 2>/dev/null; printf forged > reply.txt; printf '[]' > trace.json"
    probe = ('set -e; case "$TOOLTRIAL_REPLY" in "$PWD"/*) exit 7;; esac; '
             'test "$(cat "$TOOLTRIAL_REPLY")" = "The answer is 42."; test "$(cat reply.txt)" = forged; '
             'test "$(dirname "$TOOLTRIAL_TRACE")" = "$(dirname "$TOOLTRIAL_TURNS")"; '
             'test "$(cat "$TOOLTRIAL_TURNS")" = \'["The answer is 42."]\'; '
             '! (echo x >> "$TOOLTRIAL_REPLY") 2>/dev/null; ! touch "$(dirname "$TOOLTRIAL_REPLY")/new" 2>/dev/null; '
             'dirname "$TOOLTRIAL_REPLY"')
    case = {"id": "reach", "turns": ["Go"], "expect": {"check": [{"run": probe, "name": "reach"}]},
            "script": [{"tool_calls": [{"name": "bash", "arguments": {"command": look}}]},
                       {"content": "The answer is 42."}]}
    code, _, (run,) = _run(tmp_path, [case], sandbox)
    assert code == 0, run["checks"]
    folder = run["commands"][0]["stdout"].strip()
    assert folder.startswith("/") and "tooltrial-check-" in folder
    assert folder not in run["steps"][0]["result"]  # the check's folder did not exist while the agent ran (others may)
    assert not Path(folder).exists()  # removed once the checks ran


def test_a_check_that_hangs_is_cut_at_its_timeout_or_the_runs_command_timeout(tmp_path: Path) -> None:
    cases = [_case("own", {"run": "sleep 30", "name": "hang", "timeout": 0.5}),
             _case("run", "sleep 30; echo never", command_timeout=0.5)]
    code, _, runs = _run(tmp_path, cases)
    assert code == 1
    for run in runs:
        ((passed, _, message, _),) = _checks(run)
        took = re.fullmatch(r"check (hang|sleep 30; echo never) timed out after ([0-9.]+)s", message)
        assert not passed and took is not None and 0.5 <= float(took[2]) < 5, message
        assert run["commands"][-1]["timed_out"] and run["duration"] < 10


def test_huge_and_invalid_utf8_output_is_read_from_its_tail(tmp_path: Path) -> None:
    huge = ("head -c 2000000 /dev/zero | tr '\\0' x; printf '\\n\\377\\376 junk\\n'; "
            "printf '{\"pass\": false, \"score\": 0.5, \"message\": \"caf\\351 \\\\u001b[31mred\"}\\n'")
    code, out, (run,) = _run(tmp_path, [_case("huge", {"run": huge, "name": "huge"})])
    assert code == 1
    assert _checks(run) == [(False, "outcome", "check huge: caf\ufffd \x1b[31mred (score 0.50)", 0.5)]
    assert len(run["commands"][0]["stdout"].encode()) < 10_000 and "bytes left out" in run["commands"][0]["stdout"]
    assert "\x1b" not in out and "check huge: caf" in out  # the terminal escape shown, never sent


def test_a_malformed_verdict_line_is_an_error_of_the_case_that_says_why(tmp_path: Path) -> None:
    cases = [_case("bad", [{"run": "echo '{\"pass\": \"yes\"}'", "name": "typed"}, {"run": "echo '{oops'", "name": "json"}])]
    code, out, (run,) = _run(tmp_path, cases)
    assert code == 4  # the case's mistake, not the agent's failure
    hint = '; the last line of stdout must be one JSON object such as {"pass": true, "score": 0.5, "message": "..."}'
    typed = 'check typed: malformed verdict on stdout ("pass" must be true or false)' + hint
    assert _checks(run) == [
        (False, "outcome", typed, None),
        (False, "outcome", "check json: malformed verdict on stdout (not JSON: Expecting property name enclosed in "
                           "double quotes: line 1 column 2 (char 1))" + hint, None)]
    assert [c["error_kind"] for c in run["checks"] if c["check"] == "check"] == ["check_error", "check_error"]
    assert (run["status"], run["error_kind"], run["cause"], run["failure"]) == ("error", "check_error", typed, "run_error")
    assert (run["outcome"], run["process"]) == (None, None)  # not scored: the agent is not to blame
    assert f"ERROR checks/bad: {typed}\n" in out


@pytest.mark.parametrize("sandbox", MODES)
def test_a_program_the_shell_cannot_find_is_an_error_of_the_case(tmp_path: Path, sandbox: str) -> None:
    checks = [{"run": "nosuchgrader --strict", "name": "missing"}, {"run": "./grade_missing.py", "name": "nofile"}]
    code, out, (run,) = _run(tmp_path, [_case("missing", checks)], sandbox)
    assert code == 4
    missing = "check missing: program not found (exit 127): bash: line 1: nosuchgrader: command not found"
    assert _checks(run) == [
        (False, "outcome", missing, None),
        (False, "outcome", ("check nofile: program not found (exit 127): bash: line 1: ./grade_missing.py: No such"
                            " file or directory"), None)]
    assert (run["status"], run["error_kind"], run["cause"]) == ("error", "check_error", missing)
    assert f"ERROR checks/missing: {missing}\n" in out


def test_a_failed_check_without_a_verdict_shows_what_it_printed_last(tmp_path: Path) -> None:
    checks = [{"run": "echo checking; echo oops; exit 2", "name": "quiet"},
              {"run": "echo 'expected 42'; echo 'ValueError: boom' >&2; exit 1", "name": "both"}]
    code, out, (run,) = _run(tmp_path, [_case("said", checks)])
    assert code == 1
    assert _checks(run) == [(False, "outcome", "check quiet: failed (exit 2): oops", None),
                            (False, "outcome", "check both: failed (exit 1): expected 42 | ValueError: boom", None)]
    assert (run["status"], run["error_kind"], run["failure"]) == ("fail", None, "check_failed")
    assert "  check quiet: failed (exit 2): oops\n" in out


@pytest.mark.parametrize(("stdout", "error"), [
    ("[1]", None), ("{} x", "not JSON"), ('{"pass": 1}', '"pass" must be true or false'),
    ('{"score": 1.5}', '"score" must be a number from 0 to 1'), ('{"score": true}', '"score" must be a number'),
    ('{"score": NaN}', '"score" must be a number'), ('{"message": 3}', '"message" must be a string'),
    ('{"passed": true}', "unknown key 'passed'"), ('"{"', None),
])
def test_verdict_lines(stdout: str, error: str | None) -> None:
    if error is None:
        assert verdict_of(stdout) == {}  # not an object line: exit status alone decides
    else:
        with pytest.raises(Malformed, match=re.escape(error)):
            verdict_of("log line\n" + stdout + "\n\n")


def test_a_verdict_message_is_one_line_of_bounded_length() -> None:
    verdict = verdict_of(json.dumps({"pass": True, "score": 1, "message": "a\nb\t c" + "x" * 900}))
    assert verdict["pass"] is True and verdict["score"] == 1.0
    assert verdict["message"].startswith("a b c") and len(verdict["message"]) == 503


@pytest.mark.parametrize(("check", "found"), [
    ({"run": "  "}, "expect.check.run: empty check command: it passes whatever the agent did"),
    (["true", " "], "expect.check[1]: empty check command"),
    ([{"run": "true", "proces": True}], "expect.check[0]: unknown key 'proces' (did you mean 'process'?)"),
    ({"run": "true", "timeout": 0}, "expect.check.timeout: must be greater than 0"),
    ({"name": "x"}, "expect.check: missing required key 'run'"),
    ([], "expect.check: must not be empty"),
])
def test_a_mistaken_check_is_a_positioned_error(tmp_path: Path, check: Any, found: str) -> None:
    path = tmp_path / "bad.yml"
    path.write_text(f"- id: c\n  turns: [Hi]\n  expect:\n    check: {json.dumps(check)}\n", encoding="utf-8")
    code, out, err = cli_output(["validate", str(path)])
    assert code == 4, out + err
    assert f"{path}:4:" in err and found in err and "Traceback" not in err
