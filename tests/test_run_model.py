"""The run file as one typed model: pydantic decodes it into RunRecord (runner.output.typed), a file of a newer
schema_version is refused with the advice to upgrade, a value of the wrong type or out of its range is named by
its key path, and what tooltrial writes reads back to the same record and the same JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.cli import main
from runner.output.decode import Malformed, record_from_dict
from runner.output.load import read_run
from runner.output.store import SCHEMA_VERSION, ResultsWriter
from runner.run.record import RunRecord

NOT_OURS = "not a file this tooltrial wrote as it is: restore it, or move it out of the results folder"
CASE = """\
- id: rich
  setup: [echo hi > a.txt]
  turns: [Read a.txt twice.]
  expect:
    files: {a.txt: {contains: [hi]}}
    response_contains: [hi]
    trace: {expected: [read_file, read_file], max_calls: 3}
  script:
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      usage: {prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, cost: 0.001}
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      usage: {prompt_tokens: 20, completion_tokens: 3, total_tokens: 23, cost: 0.002}
    - content: It says hi.
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run file of one finished run of ``g/rich``: three model requests with their usage, two steps, checks."""
    project = tmp_path_factory.mktemp("project")
    (project / "g.yml").write_text(CASE, encoding="utf-8")
    assert main(["run", str(project / "g.yml"), "--results", str(project / "done"), "-q"]) == 0
    (run,) = project.glob("done/*/runs/*.json")
    return run


def _copy(run: Path, folder: Path, change: Any) -> Path:
    """A results folder in ``folder`` holding ``run`` changed by ``change`` (its document to another)."""
    (folder / "runs").mkdir(parents=True)
    copied = folder / "runs" / run.name
    copied.write_text(json.dumps(change(json.loads(run.read_text(encoding="utf-8"))), indent=2), encoding="utf-8")
    return copied


def test_a_run_file_of_a_newer_schema_version_is_refused_with_the_advice_to_upgrade(
        finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    newer = _copy(finished, tmp_path / "newer", lambda d: {**d, "schema_version": SCHEMA_VERSION + 1})
    capsys.readouterr()
    assert main(["report", str(tmp_path / "newer")]) == 4
    assert capsys.readouterr() == ("", (f"error: {newer}: schema_version 3 is newer than this tooltrial reads (up to 2):"
                                        " a newer tooltrial wrote it (upgrade tooltrial to read it: pip install --upgrade"
                                        " tooltrial)\n"))
    _copy(finished, tmp_path / "odd", lambda d: {**d, "schema_version": "2"})
    assert main(["report", str(tmp_path / "odd")]) == 4
    assert "schema_version '2' is not one this tooltrial reads (1 to 2)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "where", "error"),
    [
        (lambda d: {**d, "steps": [d["steps"][0], {**d["steps"][1], "duration": -1}]}, "steps[1].duration",
         "must be at least 0, got -1"),
        (lambda d: {**d, "model_requests": [*d["model_requests"][:2], {**d["model_requests"][2], "completion": 2.5}]},
         "model_requests[2].completion", "expected an integer or null, got a number"),
        (lambda d: {**d, "checks": [{**d["checks"][0], "score": 1.5}]}, "checks[0].score", "must be at most 1, got 1.5"),
        (lambda d: {**d, "cache": {"hits": 1, "misses": 0, "tokens": True, "cost": None}}, "cache.tokens",
         "expected an integer or null, got a boolean"),
    ],
)
def test_a_value_of_the_wrong_type_or_range_is_named_by_its_key_path(
        finished: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, where: str, error: str) -> None:
    run = _copy(finished, tmp_path / "bad", change)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "bad")]) == 4
    assert capsys.readouterr() == ("", f"error: {run}: {where}: {error} ({NOT_OURS})\n")


@pytest.mark.parametrize(
    ("change", "where", "error"),
    [
        (lambda d: {**d, "status": "passed"}, ["status"], "'passed' is not one of 'pass', 'fail', 'error'"),
        (lambda d: {**d, "tokens": {"prompt": "12"}}, ["tokens", "prompt"], "expected an integer or null, got a string"),
        (lambda d: {**d, "steps": [{"turn": 0}]}, ["steps", 0], "missing required key 'call_id'"),
        (lambda d: {**d, "duration": float("nan")}, ["duration"], "expected a finite number, got NaN"),
        (lambda d: {**d, "run": 10_001}, ["run"], "must be at most 10000, got 10001"),
        (lambda d: {**d, "failure": 3}, ["failure"], "expected a string or null, got an integer"),
    ],
)
def test_the_decoder_names_the_key_path_of_what_pydantic_refuses(finished: Path, change: Any, where: list[Any],
                                                                  error: str) -> None:
    with pytest.raises(Malformed) as refused:
        record_from_dict(change(json.loads(finished.read_text(encoding="utf-8"))))
    assert (refused.value.where, refused.value.what) == (where, error)


def test_a_run_file_reads_back_to_its_record_and_writes_again_as_the_same_json(finished: Path, tmp_path: Path) -> None:
    record = read_run(finished)
    assert (record.run, record.tokens.prompt_tokens, record.tokens.total_tokens, record.cost) == (1, 30, 35, 0.003)
    assert [r.completion_tokens for r in record.model_requests] == [2, 3, None]
    assert [s.name for s in record.steps] == ["read_file", "read_file"] and record.outcome == 1.0
    again = ResultsWriter(tmp_path).write_run(record, 1)
    first, second = (json.loads(p.read_text(encoding="utf-8")) for p in (finished, again))
    assert {**first, "run_id": ""} == {**second, "run_id": ""}
    assert finished.read_text(encoding="utf-8").replace(first["run_id"], "") == \
        again.read_text(encoding="utf-8").replace(second["run_id"], "")


def test_an_integer_in_a_number_field_stays_an_integer(finished: Path) -> None:
    record = record_from_dict({**json.loads(finished.read_text(encoding="utf-8")), "duration": 3, "cost": 0})
    assert (type(record.duration), type(record.cost), record.to_dict()["duration"]) == (int, int, 3)


COUNTS = st.none() | st.integers(0, 2**62)
SECONDS = st.floats(0, 1e12, allow_nan=False) | st.integers(0, 2**40)


@settings(max_examples=60, deadline=None)
@given(prompt=COUNTS, total=COUNTS, cost=st.none() | st.floats(0, 1e6), duration=SECONDS, latency=SECONDS,
       outcome=st.none() | st.floats(0, 1), text=st.text(max_size=20))
def test_any_record_tooltrial_may_write_reads_back_equal(finished: Path, tmp_path_factory: pytest.TempPathFactory,
                                                         prompt: int | None, total: int | None, cost: float | None,
                                                         duration: float, latency: float, outcome: float | None,
                                                         text: str) -> None:
    base = read_run(finished)
    requests = [type(r)(**{**vars(r), "prompt_tokens": prompt, "latency": latency}) for r in base.model_requests]
    record = RunRecord(**{**vars(base), "cost": cost, "duration": duration, "outcome": outcome, "final_reply": text,
                          "model_requests": requests, "warnings": [text]})
    record.tokens = type(base.tokens)(prompt_tokens=prompt, total_tokens=total)
    written = ResultsWriter(tmp_path_factory.mktemp("w")).write_run(record)
    read = read_run(written)
    assert read == record and read.to_dict() == record.to_dict()
