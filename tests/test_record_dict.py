"""A run record's dict (RunRecord.to_dict, what every run file and report holds) is exactly what
dataclasses.asdict makes of it, each field under its run-file key (runner.run.requests.JSON_KEY): the
faster conversion changes no byte of any output."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from runner.kinds import ErrorKind
from runner.output.load import record_from_dict
from runner.run.record import EarlierAttempt, RunRecord
from runner.run.requests import JSON_KEY
from tests.helpers import BUNDLED_ARGS, run_cli


def _keyed(value: Any, plain: Any) -> Any:
    """``plain`` (asdict's form of ``value``) with each dataclass field under its run-file key."""
    if dataclasses.is_dataclass(value) and isinstance(plain, dict):
        return {f.metadata.get(JSON_KEY, f.name): _keyed(getattr(value, f.name), plain[f.name])
                for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)) and isinstance(plain, (list, tuple)):
        return type(plain)(_keyed(v, p) for v, p in zip(value, plain))
    return plain


def _asdict_form(record: RunRecord) -> dict:
    def form(value: Any) -> Any:
        return _keyed(value, dataclasses.asdict(value))
    return {**form(record), "judge_tokens": form(record.judge_tokens), "judge_cost": record.judge_cost,
            "user_tokens": form(record.user_tokens), "user_cost": record.user_cost, "attempt": len(record.earlier) + 1}


def test_every_bundled_run_record_converts_as_asdict_does(tmp_path: Path) -> None:
    done = run_cli("run", *BUNDLED_ARGS, "--results", str(tmp_path / "r"), "-q")
    assert done.returncode == 0, done.stderr
    files = sorted((tmp_path / "r").glob("*/runs/*.json"))
    assert len(files) == 60
    for path in files:
        record = record_from_dict(json.loads(path.read_text(encoding="utf-8")))
        mine, reference = record.to_dict(), _asdict_form(record)
        assert mine == reference
        assert json.dumps(mine, default=str) == json.dumps(reference, default=str)
        assert [type(step) for step in mine["steps"]] == [type(step) for step in reference["steps"]]


def test_tuples_nested_dataclasses_and_odd_containers_convert_as_asdict_does() -> None:
    record = RunRecord("g/c", "scripted", "default", 1, "pass")
    record.changes = {"a.txt": "modified"}  # type: ignore[assignment]
    record.commands = [dataclasses.replace(c) for c in record.commands]
    record.final_reply = "\ud800 odd"
    record.earlier = [EarlierAttempt(ErrorKind.SERVER_ERROR, "upstream is down", 1700000000.5, 0.25)]
    assert record.to_dict() == _asdict_form(record)
    assert (record.to_dict()["attempt"], record.to_dict()["earlier"]) == (2, [
        {"error_kind": "server_error", "cause": "upstream is down", "started": 1700000000.5, "duration": 0.25}])
