"""Run files with numbers out of their range, as a hand or a tool could leave them: ``report``, ``merge``
and ``run --resume`` each refuse the folder (exit 4) with one line naming the file, the key path and
the value, and write nothing. And the other way: every number tooltrial reads back it may also write,
and it never writes one it would refuse (a NaN duration once became ``null``, which merge then refused
in its own output): whatever ``run``, ``merge`` and ``report`` write reads back the same."""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.cli import main
from runner.errors import UserError
from runner.output import decode
from runner.output.decode import read_json
from runner.output.load import checked, read_results, read_run
from runner.output.store import ResultsWriter
from runner.run.record import RunRecord
from runner.run.trajectory import Step
from runner.spec.schema import case_schema

NOT_OURS = "not a file this tooltrial wrote as it is: restore it, or move it out of the results folder"
CASE = "- id: a\n  turns: [Hi.]\n  script: [{content: hi}]\n"
RICH = """\
- id: rich
  setup: [echo hi > a.txt]
  turns: [Read a.txt.]
  expect:
    files: {a.txt: {contains: [hi]}}
    response_contains: [hi]
    trace: {expected: [read_file], max_calls: 3}
    verify: test -f a.txt
  script:
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - content: It says hi.
      usage: {prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, cost: 0.001}
- id: broken
  setup: [exit 3]
  turns: [x]
  script: [{content: x}]
"""
BIG = "@1e400@"  # stands for the number 1e400 in the text written (json.dumps would write inf as Infinity)


@pytest.fixture
def finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A results folder of one finished run of ``g/a``, the current folder holding ``g.yml``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.yml").write_text(CASE, encoding="utf-8")
    assert main(["run", "g.yml", "--results", str(tmp_path / "done")]) == 0
    (folder,) = (tmp_path / "done").iterdir()
    return folder


def _tamper(run: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    text = json.dumps(change(json.loads(run.read_text(encoding="utf-8"))), indent=2)
    run.write_text(text.replace(f'"{BIG}"', "1e400"), encoding="utf-8")


TAMPERED = [
    (lambda d: {**d, "outcome": 1e30}, "outcome", "must be at most 1, got 1e+30"),
    (lambda d: {**d, "outcome": -1.5}, "outcome", "must be at least 0, got -1.5"),
    (lambda d: {**d, "process": math.inf}, "process", "expected a finite number, got Infinity"),
    (lambda d: {**d, "started": -5}, "started", "must be at least 0, got -5"),
    (lambda d: {**d, "duration": math.nan}, "duration", "expected a finite number, got NaN"),
    (lambda d: {**d, "duration": -0.5}, "duration", "must be at least 0, got -0.5"),
    (lambda d: {**d, "cost": BIG}, "cost", "expected a finite number, got Infinity"),
    (lambda d: {**d, "requests": -1}, "requests", "must be at least 0, got -1"),
    (lambda d: {**d, "run": 10**200}, "run", f"must be at most 10000, got {10**200}"),  # the name of the file merge writes
    (lambda d: {**d, "tokens": {**d["tokens"], "prompt": -3}}, "tokens.prompt", "must be at least 0, got -3"),
    (lambda d: {**d, "model_requests": [{**d["model_requests"][0], "latency": -1}]}, "model_requests[0].latency",
     "must be at least 0, got -1"),
    (lambda d: {**d, "trajectory_match": {"exact": True, "in_order": True, "any_order": True, "name_precision": 2,
                                          "name_recall": 1, "call_precision": None, "call_recall": None}},
     "trajectory_match.name_precision", "must be at most 1, got 2"),
    (lambda d: {**d, "script": [{"content": "hi", "usage": {"cost": -math.inf}}]}, "script[0].usage.cost",
     "expected a finite number, got -Infinity"),
    (lambda d: {**d, "agent": {"name": "x", "command": "x", "wire": [{"turn": 0, "duration": -2}]}},
     "agent.wire[0].duration", "must be at least 0, got -2"),
]


@pytest.mark.parametrize(("change", "where", "error"), TAMPERED)
def test_a_number_out_of_its_range_is_refused_by_report_merge_and_resume(
        finished: Path, capsys: pytest.CaptureFixture[str], change: Any, where: str, error: str) -> None:
    run = min((finished / "runs").iterdir())
    _tamper(run, change)
    capsys.readouterr()
    line = f"error: {run}: {where}: {error} ({NOT_OURS})\n"
    assert main(["report", str(finished)]) == 4
    assert capsys.readouterr() == ("", line)
    assert main(["merge", str(finished), "-o", "merged"]) == 4
    assert capsys.readouterr() == ("", line)
    assert main(["run", "g.yml", "--resume", str(finished), "--results", "again"]) == 4
    out, err = capsys.readouterr()
    assert (out, "".join(x for x in err.splitlines(keepends=True) if not x.startswith("warning:"))) == ("", line)
    assert not Path("merged").exists() and not Path("again").exists()


def test_what_run_merge_and_report_write_reads_back_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "g.yml").write_text(RICH, encoding="utf-8")
    infrastructure = 6  # the setup that fails is not the agent's doing
    assert main(["run", "g.yml", "--runs", "2", "--results", "done", "--report", "first.json"]) == infrastructure
    (done,) = Path("done").iterdir()
    assert main(["merge", str(done), "-o", "merged"]) == infrastructure
    (merged,) = Path("merged").iterdir()
    capsys.readouterr()
    assert main(["report", str(merged), "--output", "json"]) == 0
    Path("again.json").write_text(capsys.readouterr().out, encoding="utf-8")
    assert main(["merge", str(merged), "-o", "twice"]) == infrastructure
    (twice,) = Path("twice").iterdir()
    written = [read_results(folder) for folder in (done, merged, twice)]  # their run files and report.json
    assert [[r.to_dict() for r in w.records] for w in written[1:]] == [[r.to_dict() for r in written[0].records]] * 2
    assert {r.status for r in written[0].records} == {"pass", "error"}
    assert [r.steps[0].name for r in written[0].records if r.steps] == ["read_file"] * 2
    for report in (Path("first.json"), Path("again.json")):
        assert checked(report, read_json(report.read_text(encoding="utf-8")), "report")["overall"]["runs"] == 4


def _rich_record(tmp_path: Path) -> tuple[RunRecord, dict[str, Any]]:
    """A run of ``t/rich``: steps, model requests with usage, commands, checks, a trajectory match."""
    (tmp_path / "t.yml").write_text(RICH, encoding="utf-8")
    assert main(["run", str(tmp_path / "t.yml"), "-c", "t/rich", "--results", str(tmp_path / "r"), "-q"]) == 0
    (path,) = tmp_path.glob("r/*/runs/*.json")
    return read_run(path), json.loads(path.read_text(encoding="utf-8"))


def _numbers(record: Any, where: tuple[str | int, ...] = (), keys: tuple[str | int, ...] = ()
             ) -> list[tuple[tuple[str | int, ...], tuple[str | int, ...], type, float, float]]:
    """Every number field of ``record`` and its nested records: its path of field names, its key path in the run
    file, type (int or float), low, high."""
    found = []
    hints = typing.get_type_hints(type(record))
    key = {name: key for name, key, _, _ in decode.shape(type(record))}
    for name, low, high in decode.number_ranges(type(record)):
        kind = float if float in decode._leaves(hints[name]) else int
        found.append(((*where, name), (*keys, key[name]), kind, low, high))
    for name in decode._nested(type(record)):
        value = getattr(record, name)
        for i, item in enumerate(value) if isinstance(value, list) else [(None, value)] if value is not None else []:
            found += _numbers(item, (*where, name) if i is None else (*where, name, i),
                              (*keys, key[name]) if i is None else (*keys, key[name], i))
    return found


def _set(target: Any, path: tuple[str | int, ...], value: Any) -> None:
    for step in path[:-1]:
        target = target[step] if isinstance(step, int) or isinstance(target, dict) else getattr(target, step)
    if isinstance(target, dict):
        target[path[-1]] = value
    else:
        object.__setattr__(target, str(path[-1]), value)  # through frozen records too


def _dotted(path: tuple[str | int, ...]) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path).lstrip(".")


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunRecord, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("rich")
    return (folder, *_rich_record(folder))


NUMBERS = st.one_of(st.integers(-3, 3), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, -0.0, 5e-324, 1.7976931348623157e308]))


@settings(max_examples=120, deadline=None)
@given(pick=st.data(), value=NUMBERS)
def test_the_writer_refuses_exactly_the_numbers_the_reader_refuses(rich: tuple[Path, RunRecord, dict[str, Any]],
                                                                    pick: st.DataObject, value: float) -> None:
    folder, record, data = rich
    fields = _numbers(record)
    assert len(fields) > 40  # steps, model requests and their attempts, commands, checks, tokens, trajectory match
    path, keys, kind, _low, _high = pick.draw(st.sampled_from(fields))
    value = value if kind is float or isinstance(value, int) else int(value) if math.isfinite(value) else 7
    changed = json.loads(json.dumps(data))
    _set(changed, keys, value)
    file = folder / "runs" / "0001-probe.json"
    file.parent.mkdir(exist_ok=True)
    file.write_text(json.dumps(changed), encoding="utf-8")
    try:
        read_back: RunRecord | None = read_run(file)
        refused = None
    except UserError as e:
        read_back, refused = None, f"{e.path}: {e.message}"
    again = decode.record_from_dict(json.loads(json.dumps(data)))
    _set(again, path, value)
    try:
        written = ResultsWriter(folder / "out").write_run(again)
    except ValueError as e:
        assert refused is not None and str(e).endswith(refused), (str(e), refused)
        assert not list((folder / "out").glob("*/runs/*.json"))
        return
    assert refused is None, refused
    assert read_run(written).to_dict() == again.to_dict() == read_back.to_dict()
    written.unlink()


def test_the_writer_refuses_a_record_it_would_refuse_to_read_and_writes_nothing(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    with pytest.raises(ValueError) as nan:
        writer.write_run(RunRecord("g/a", "scripted", "default", duration=math.nan))
    record = RunRecord("g/a", "scripted", "default", run=2, outcome=1.0)
    record.steps = [Step(0, "call_1", "read_file", {"path": "a"}, "", False, -1.0)]
    with pytest.raises(ValueError) as step:
        writer.write_run(record)
    assert str(nan.value) == "the record of g/a run 1 cannot be written: duration: expected a finite number, got NaN"
    assert str(step.value) == "the record of g/a run 2 cannot be written: steps[0].duration: must be at least 0, got -1.0"
    assert list(tmp_path.glob("*/runs/*")) == []


def test_a_run_whose_record_would_not_read_back_is_saved_as_its_internal_error(
        finished: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from runner.run import execute

    def scored_wrong(case: Any, record: RunRecord) -> None:
        record.outcome = math.nan

    monkeypatch.setattr(execute, "fill_metrics", scored_wrong)
    assert main(["run", "g.yml", "--results", "nan"]) == 3
    (saved,) = read_results(next(Path("nan").iterdir())).records
    assert (saved.error_kind, saved.outcome) == ("internal", None)
    assert saved.cause.splitlines()[0] == ("internal error: ValueError: the record of g/a run 1 cannot be written: "
                                          "outcome: expected a finite number, got NaN")


def test_a_run_number_is_at_most_what_a_case_may_ask_for() -> None:
    assert {name: high for name, _, high in decode.number_ranges(RunRecord)}["run"] == case_schema()["properties"]["runs"]["maximum"]
