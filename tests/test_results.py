"""Durable results: one file per finished run, written atomically and exclusively, read back intact."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from runner.checks.base import BUDGET, CheckResult
from runner.errors import UserError
from runner.output.load import read_results
from runner.output.store import ResultsWriter, new_run_id, write_new
from runner.providers.base import Usage
from runner.run.requests import Tokens
from runner.run.trajectory import Step
from tests.records import record

ROOT = Path(__file__).resolve().parent.parent


def _schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((ROOT / "schemas" / name).read_text()))


def test_run_id_is_utc_time_and_a_suffix() -> None:
    two_hours_east = timezone(timedelta(hours=2))
    pinned = new_run_id(datetime(2026, 3, 1, 1, 6, 7, 999_999, tzinfo=two_hours_east))
    assert re.fullmatch(r"20260228T230607Z-[0-9a-f]{6}", pinned), pinned  # UTC, the day before, to the second
    before = datetime.now(UTC).replace(microsecond=0)
    first, second = new_run_id(), new_run_id()
    after = datetime.now(UTC)
    assert first != second
    stamp, suffix = first.split("-")
    assert before <= datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC) <= after
    assert re.fullmatch(r"[0-9a-f]{6}", suffix), suffix


def test_write_new_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "a.json"
    write_new(target, "first")
    with pytest.raises(FileExistsError):
        write_new(target, "second")
    assert target.read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temp file left behind


def test_records_round_trip_through_their_files(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    original = record("g/a", "fail", run=2, prompt="terse", tokens=Tokens(3, 4, 7), cost=0.5, outcome=0.25)
    original.steps = [Step(0, "call_1", "bash", {"command": "ls"}, "a.txt", False, 0.1)]
    original.checks.append(CheckResult("judge", True, "ok", score=0.9, reasoning="fine", usage=Usage(40, 8, 48, 0.002)))
    original.checks.append(CheckResult("max_tokens", True, "used 7 tokens", BUDGET))
    path = writer.write_run(original)
    assert path.name == "0001-g-a-scripted-terse-r2.json"
    document = json.loads(path.read_text())
    _schema("run.schema.json").validate(document)
    assert document["schema_version"] == 2 and document["run_id"] == writer.run_id
    results = read_results(writer.path)
    assert results.records == [original] and results.report is None


def test_reading_the_parent_folder_picks_the_newest_run(tmp_path: Path) -> None:
    for name in ("20250101T000000Z-aaaaaa", "20250301T000000Z-bbbbbb"):
        (tmp_path / name / "runs").mkdir(parents=True)
        (tmp_path / name / "runs" / "0001-x.json").write_text(json.dumps({"schema_version": 1, "run_id": name, **record("g/a", "pass").to_dict()}))
    assert read_results(tmp_path).path.name == "20250301T000000Z-bbbbbb"


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "cannot read"), ('{"schema_version": 99}', "schema_version 99")],
)
def test_unreadable_run_file_is_a_user_error(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "0001-x.json").write_text(content)
    with pytest.raises(UserError, match=message):
        read_results(tmp_path)


SLOW_CASES = """\
- id: slow
  turns: [wait]
  expect: {response_contains: waited}
  script:
    - tool_calls: [{name: bash, arguments: {command: sleep 0.2}}]
    - content: waited
"""


def test_killed_suite_leaves_only_complete_run_files(tmp_path: Path) -> None:
    (tmp_path / "slow.yml").write_text(SLOW_CASES)
    results = tmp_path / "results"
    command = [sys.executable, "-m", "runner", "run", str(tmp_path / "slow.yml"), "--runs", "40", "--results", str(results)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(list(results.glob("*/runs/*.json"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    (folder,) = results.iterdir()
    names = [p.name for p in (folder / "runs").iterdir()]
    finished = [n for n in names if not n.startswith(".")]
    assert 3 <= len(finished) < 40
    assert all(n.endswith(".tmp") for n in names if n.startswith("."))  # at most a hidden temp file
    validator = _schema("run.schema.json")
    for name in finished:
        validator.validate(json.loads((folder / "runs" / name).read_text()))  # every finished file is whole
    assert not (folder / "report.json").exists()
    assert len(read_results(folder).records) == len(finished)


def test_results_and_output_files_get_the_mode_a_plain_new_file_gets(tmp_path: Path) -> None:
    # mkstemp makes 0600 files; a report meant to be shared (served, attached) reads as any file would
    from runner.output import store
    from tests.helpers import run_cli
    case = tmp_path / "c.yml"
    case.write_text("- id: a\n  turns: [Hi.]\n  expect: {response_contains: [hi]}\n  script: [{content: hi}]\n")
    done = run_cli("run", str(case), "--results", str(tmp_path / "r"), "--report", str(tmp_path / "report.json"),
                   "--junit", str(tmp_path / "junit.xml"))
    assert done.returncode == 0, done.stderr
    written = [tmp_path / "report.json", tmp_path / "junit.xml", *(tmp_path / "r").rglob("*.json")]
    assert len(written) == 4
    assert {p.stat().st_mode & 0o777 for p in written} == {store._MODE} == {0o666 & ~store._umask()}


def test_an_output_file_that_is_an_input_of_the_run_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from tests.helpers import run_cli
    case = tmp_path / "c.yml"
    text = "- id: a\n  turns: [Hi.]\n  expect: {response_contains: [hi]}\n  script: [{content: hi}]\n"
    case.write_text(text)
    for flag in ("--report", "--junit", "--html", "--summary-md"):
        done = run_cli("run", str(case), "--results", str(tmp_path / "r"), flag, str(case))
        assert (done.returncode, done.stderr) == (4, (f"error: {flag} {case} is an input of this run (a case or prompt "
                                                      "file) (give another path: writing there would replace it)\n"))
        assert case.read_text() == text
    assert not (tmp_path / "r").exists()
