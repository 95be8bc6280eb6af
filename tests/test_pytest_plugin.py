"""The pytest plugin: ``pytest cases/ --tooltrial-provider scripted`` runs each case as an item, in a
real pytest subprocess (the plugin is found through its ``pytest11`` entry point, as users get it)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.cli.pytest_plugin import is_case_file
from runner.spec.discover import load_cases
from tests.helpers import BAD_RUN, GOOD, ROOT, SAMPLE_GROUPS

NOT_A_CASE_FILE = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - id: checkout
        uses: actions/checkout@v4
"""


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m pytest ARGS`` in ``cwd``, no cache folder written, output as text."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def _pytest_here(capsys: pytest.CaptureFixture[str], *args: str, cwd: Path) -> tuple[int, str, str]:
    """``pytest ARGS`` in this process (as pytester runs it), in ``cwd``: its exit code, stdout and stderr."""
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        code = pytest.main(["-p", "no:cacheprovider", *args])
    out, err = capsys.readouterr()
    return int(code), out, err


def _suite(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yml").write_text(GOOD)
    (cases / "bad.yml").write_text(BAD_RUN)
    (cases / "workflow.yml").write_text(NOT_A_CASE_FILE)
    (cases / "settings.json").write_text('{"id": 1, "name": "no turns here"}')
    return cases


def _testcases(junit: Path) -> dict[str, dict[str, object]]:
    """name -> {properties..., "failure": message or None} of each testcase in a JUnit file."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        failure = case.find("failure")
        found[case.get("name")] = {**properties, "failure": None if failure is None else failure.get("message")}
    return found


def test_the_plugin_is_registered_for_pytest() -> None:
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"] == {
        "tooltrial": "runner.cli.pytest_plugin"}
    found = [e.value for e in metadata.entry_points(group="pytest11") if e.name == "tooltrial"]
    assert found == ["runner.cli.pytest_plugin"], "the installed metadata is stale: run make venv"


def test_cases_fail_with_their_check_lines_and_junit_records_the_runs(tmp_path: Path) -> None:
    _suite(tmp_path)
    done = _pytest("cases", "--tooltrial-provider", "scripted", "--junitxml", "junit.xml", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "3 failed, 2 passed" in done.stdout
    assert "FAIL bad/wrong-answer\n  failure cause: missing_output\n  verify failed (exit 1): test -f nothing-here\n" \
           "  out.txt does not exist\n" in done.stdout
    assert "ERROR bad/broken-setup: setup command failed (exit 3): exit 3\n  failure cause: run_error\n" in done.stdout
    assert "ERROR bad/too-many-turns: turn limit 1 exceeded\n  failure cause: turn_limit\n" in done.stdout
    runs = _testcases(tmp_path / "junit.xml")
    assert sorted(runs) == ["bad/broken-setup", "bad/too-many-turns", "bad/wrong-answer", "good/count-lines",
                            "good/write-hello"]
    assert runs["good/write-hello"] == {"tooltrial_status": "pass", "tooltrial_arm": "scripted · default",
                                        "tooltrial_run": "1", "tooltrial_outcome": "1.0", "tooltrial_process": "1.0",
                                        "tooltrial_calls": "1", "tooltrial_duration": runs["good/write-hello"]["tooltrial_duration"],
                                        "failure": None}
    assert runs["bad/wrong-answer"]["tooltrial_failure"] == "missing_output"
    assert runs["bad/wrong-answer"]["failure"] == ("FAIL bad/wrong-answer\n  failure cause: missing_output\n"
                                                   "  verify failed (exit 1): test -f nothing-here\n  out.txt does not exist")


def test_k_selects_by_id_and_tag_and_x_stops_at_the_first_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _suite(tmp_path)
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "--collect-only", "-q", "-k",
                             "smoke or broken", cwd=tmp_path)
    assert (code, out.splitlines()[:2]) == (0, ["cases/bad.yml::bad/broken-setup", "cases/good.yml::good/write-hello"])
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "-x", cwd=tmp_path)
    assert code == 1
    assert "1 failed in" in out and "passed" not in out


def test_one_item_per_provider_prompt_and_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _suite(tmp_path)
    for name in ("terse", "chatty"):
        (tmp_path / f"{name}.j2").write_text(f"You are {name}.")
    _, out, _ = _pytest_here(capsys, "cases/good.yml", "--tooltrial-provider", "scripted", "--tooltrial-prompt", "terse.j2",
                          "--tooltrial-prompt", "chatty.j2", "--tooltrial-runs", "2", "--collect-only", "-q", cwd=tmp_path)
    items = [line.removeprefix("cases/good.yml::") for line in out.splitlines() if "::" in line]
    assert items == [f"good/{case}[{prompt}-run{run}]" for prompt in ("terse", "chatty")
                     for case in ("write-hello", "count-lines") for run in (1, 2)]


def test_nothing_is_collected_unless_asked(tmp_path: Path) -> None:
    _suite(tmp_path)
    code = ("import sys, pytest; code = pytest.main(['-p', 'no:cacheprovider', '-q', '--collect-only', 'cases']); "
            "print(int(code), sorted(m for m in sys.modules if m in ('litellm', 'runner.cli.pytest_cases')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert "no tests collected" in done.stdout
    assert done.stdout.splitlines()[-1] == "5 []"  # pytest's 'no tests collected', and no collector or litellm loaded


def test_a_broken_case_file_is_a_collection_error_with_its_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "typo.yml").write_text("- id: one\n  turns: [hi]\n  expect: {response_contain: [x]}\n  script: [{content: x}]\n")
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", cwd=tmp_path)
    assert code == 2
    assert f"{tmp_path}/cases/typo.yml:3:12: expect: unknown key 'response_contain' (did you mean 'response_contains'?)" in out


SIMULATED_USER = """\
- id: refund
  mocks:
    - name: refund
      description: Refund an order.
      parameters: {type: object, properties: {order: {type: integer}}, required: [order]}
      responses: [{result: refunded}]
  user:
    model: scripted
    persona: You want a refund for order 42.
    first: Hi, I would like a refund.
    max_turns: 2
    script: ["Thanks! ###STOP###"]
  expect:
    response_contains: [refunded]
  script:
    - tool_calls: [{name: refund, arguments: {order: 42}}]
    - content: Order 42 is refunded.
"""


def test_files_are_collected_by_their_parsed_shape_not_their_text(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "user.yml").write_text(SIMULATED_USER)  # no `turns:` anywhere in its text
    (cases / "wrapped.yaml").write_text("defaults: {user: {model: scripted, persona: p, script: [x]}}\n"
                                        "cases: [{id: w, script: [{content: x}]}]\n")
    (cases / "plan.yml").write_text("- id: deploy  # a list of steps, not of cases; turns: 3\n  run: make\n")
    (cases / "settings.json").write_text('{"id": 1, "turns": "not a list of cases"}')
    (cases / "bomb.yml").write_text("a: &a [" + ", ".join(["x"] * 2000) + "]\ncases: [" + ", ".join(["*a"] * 2000) + "]\n")
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "--collect-only", "-q",
                                cwd=tmp_path)
    assert (code, [line for line in out.splitlines() if "::" in line]) == (
        0, ["cases/user.yml::user/refund", "cases/wrapped.yaml::wrapped/w"])
    code, out, _ = _pytest_here(capsys, "cases/user.yml", "--tooltrial-provider", "scripted", cwd=tmp_path)
    assert code == 0 and " 1 passed in " in out.splitlines()[-1]


def test_a_simulated_user_case_that_does_not_validate_is_a_collection_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "typo.yml").write_text(SIMULATED_USER.replace("persona:", "persona_:"))
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", cwd=tmp_path)
    assert code == 2
    assert f"{tmp_path}/cases/typo.yml:9:5: user: unknown key 'persona_' (did you mean 'persona'?)" in out


@given(st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_telling_a_case_file_never_raises(tmp_path: Path, text: str) -> None:
    for suffix in (".yml", ".json"):
        path = tmp_path / f"any{suffix}"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        assert is_case_file(path) in (True, False)


def test_a_bad_provider_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _suite(tmp_path)
    code, _, err = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "--tooltrial-provider", "scripted",
                                cwd=tmp_path)
    assert code == 4
    assert err == ("ERROR: tooltrial: provider 'scripted' is given twice with -p "
                                       "(give each -p once; to run each case more often, use --runs N)\n\n")


WRITES = """\
- id: write-hi
  turns: [Write hi to out.txt]
  tools: [read_file, write_file]
  expect:
    files: {out.txt: {equals: hi}}
    trace: {args: {write_file: {path: out.txt}}}
  script:
    - tool_calls: [{name: write_file, arguments: {file_path: out.txt, content: hi}}]
    - content: Done.
"""

SAVES = """\
- id: retries
  turns: [Write hi to out.txt]
  expect: {files: {out.txt: {equals: hi}}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
    - content: Done.
- id: gives-up
  turns: [Write hi to out.txt]
  expect: {files: {out.txt: {equals: hi}}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
    - content: Done.
"""


def _outcomes(out: str) -> list[str]:
    """``OUTCOME path::name`` of each item, from the short summary ``-rA`` prints, in its order."""
    return [line.split(" - ")[0] for line in out.splitlines() if line.startswith(("PASSED ", "FAILED "))]


def test_each_tool_definition_file_is_an_arm_and_a_renamed_parameter_reaches_the_tool_by_its_own_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "writes.yml").write_text(WRITES)  # the script writes file_path, as `renamed` shows it
    (tmp_path / "renamed.yml").write_text("name: renamed\ntools:\n  write_file:\n    parameters:\n"
                                          "      path: {name: file_path}\n")
    (tmp_path / "plain.yml").write_text("tools:\n  write_file:\n    description: Write a file.\n")
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "--tooltrial-tools", "renamed.yml",
                                "--tooltrial-tools", "plain.yml", "-rA", "--junitxml", "junit.xml", cwd=tmp_path)
    assert code == 1
    assert _outcomes(out) == ["PASSED cases/writes.yml::writes/write-hi[renamed]",
                              "FAILED cases/writes.yml::writes/write-hi[plain]"]
    assert "tooltrial case writes/write-hi[plain] (scripted · default · plain)" in out
    runs = _testcases(tmp_path / "junit.xml")
    assert [(name, run["tooltrial_arm"], run["tooltrial_status"]) for name, run in runs.items()] == [
        ("writes/write-hi[renamed]", "scripted · default · renamed", "pass"),
        ("writes/write-hi[plain]", "scripted · default · plain", "fail")]
    assert runs["writes/write-hi[plain]"]["failure"] == (
        "FAIL writes/write-hi\n  failure cause: missing_output\n  out.txt does not exist\n"
        "  no write_file call has arguments matching {\"path\": \"out.txt\"}: write_file was never called "
        "(1 refused call: invalid arguments for write_file: 'path' is a required property)")
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "--tooltrial-tools", "renamed.yml",
                                "--tooltrial-tools", "plain.yml", "--tooltrial-faults", "case", "--collect-only", "-q",
                                cwd=tmp_path)
    assert (code, [line for line in out.splitlines() if "::" in line]) == (0, [
        f"cases/writes.yml::writes/write-hi[{tools}-faults-{faults}]" for tools in ("renamed", "plain")
        for faults in ("off", "case")])


def test_a_fault_profile_runs_beside_its_clean_twin_and_fails_the_case_that_does_not_recover(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "saves.yml").write_text(SAVES)
    (tmp_path / "flaky.yml").write_text("name: flaky-writes\nfaults:\n  - {tool: write_file, kind: error, call: 1}\n")
    code, out, _ = _pytest_here(capsys, "cases", "--tooltrial-provider", "scripted", "--tooltrial-faults", "flaky.yml",
                                "-rA", "--junitxml", "junit.xml", cwd=tmp_path)
    assert code == 1
    assert _outcomes(out) == [
        "PASSED cases/saves.yml::saves/retries[faults-off]", "PASSED cases/saves.yml::saves/gives-up[faults-off]",
        "PASSED cases/saves.yml::saves/retries[faults-flaky-writes]",
        "FAILED cases/saves.yml::saves/gives-up[faults-flaky-writes]"]
    runs = _testcases(tmp_path / "junit.xml")
    assert [(name, run["tooltrial_arm"], run.get("tooltrial_failure")) for name, run in runs.items()] == [
        ("saves/retries[faults-off]", "scripted · default · faults off", None),
        ("saves/gives-up[faults-off]", "scripted · default · faults off", None),
        ("saves/retries[faults-flaky-writes]", "scripted · default · faults flaky-writes", None),
        ("saves/gives-up[faults-flaky-writes]", "scripted · default · faults flaky-writes", "fault_not_handled")]
    assert runs["saves/gives-up[faults-flaky-writes]"]["failure"] == (
        "FAIL saves/gives-up\n  failure cause: fault_not_handled\n  out.txt does not exist")


@pytest.mark.parametrize(("option", "text", "error"), [
    ("--tooltrial-tools", "tools:\n  bash:\n    descripton: x\n",
     "bad.yml:3:5: tools.bash: unknown key 'descripton' (did you mean 'description'?)"),
    ("--tooltrial-faults", "faults:\n  - {tool: write_file, kind: explode}\n",
     "bad.yml:2:30: faults[0].kind: 'explode' is not one of 'error', 'timeout', 'empty', 'truncated', 'garbage', 'slow'"),
    ("--tooltrial-faults", None,
     "bad.yml: cannot read the fault profile: No such file or directory (give --faults a profile file, `off` or `case`)"),
], ids=["tools-key", "faults-kind", "faults-missing"])
def test_a_bad_tool_definition_file_or_fault_profile_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, text: str | None, error: str) -> None:
    _suite(tmp_path)
    if text is not None:
        (tmp_path / "bad.yml").write_text(text)
    code, _, err = _pytest_here(capsys, "cases/good.yml", "--tooltrial-provider", "scripted", option, "bad.yml",
                                cwd=tmp_path)
    assert (code, err) == (4, f"ERROR: tooltrial: {error}\n\n")


def test_a_tool_definition_file_naming_a_tool_no_collected_case_offers_is_a_collection_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _suite(tmp_path)
    (tmp_path / "typo.yml").write_text("tools:\n  write_fle:\n    description: x\n  read_file:\n"
                                       "    parameters: {pth: {name: where}}\n")
    code, out, _ = _pytest_here(capsys, "cases/good.yml", "--tooltrial-provider", "scripted", "--tooltrial-tools",
                                "typo.yml", cwd=tmp_path)
    assert code == 2
    assert "collected 2 items / 1 error / 2 deselected / 0 selected\n" in out  # so none runs, as under -n N
    lines = out.splitlines()
    heading = next(n for n, line in enumerate(lines) if line.strip("_ ") == "ERROR collecting typo.yml")
    assert lines[heading + 1:heading + 3] == [
        ("tooltrial: typo.yml:2:3: tools.write_fle: tool 'write_fle' is offered by no selected case "
         "(did you mean 'write_file'?)"),
        "typo.yml:5:18: tools.read_file.parameters.pth: tool 'read_file' has no parameter 'pth' (did you mean 'path'?)"]


def test_the_projects_own_tests_never_collect_cases() -> None:
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert options["testpaths"] == ["tests"] and "tooltrial" not in options["addopts"]


@pytest.mark.slow
def test_four_bundled_groups_pass_under_pytest_on_two_workers(tmp_path: Path) -> None:
    sample = [f"cases/{group}.yml" for group in SAMPLE_GROUPS]
    expected = sum(case.runs or 1 for case in load_cases([ROOT / path for path in sample]))
    done = _pytest(*sample, "--tooltrial-provider", "scripted", "-n", "2", "--junitxml", str(tmp_path / "junit.xml"), cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"{expected} passed" in done.stdout
    runs = _testcases(tmp_path / "junit.xml")
    assert len(runs) == expected and {r["tooltrial_status"] for r in runs.values()} == {"pass"}
