"""Reading a results folder back (``tooltrial report``, ``--resume``): every run file and the report
checked against their schemas, and a run file against RunRecord's type hints and its numbers' ranges
(runner.output.decode, by pydantic), so a file tooltrial did not write as it is becomes an error naming the file
and the key path, never a crash.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Location, UserError
from runner.output.decode import NOUNS, Malformed, json_kind, read_json, record_from_dict
from runner.output.store import REPORT_FILE, RUNS_DIR, SCHEMA_VERSION
from runner.resources import bundled
from runner.run.record import RunRecord


@dataclass(frozen=True)
class Results:
    """One results folder read back: its records in the order they were written, and its report if
    finished (as written: ``schema_version`` 1 or 2, whose shapes differ but for ``started``,
    ``finished``, ``unfinished`` and ``cells[].gate``)."""

    path: Path
    records: list[RunRecord]
    report: dict[str, Any] | None


def read_results(folder: Path) -> Results:
    """Read a ``results/<run-id>/`` folder, or the newest run folder inside a folder of them.

    Raises UserError for a missing folder, one without run files, a file that
    is not JSON, or one written by a newer tooltrial, and one whose document
    does not have the shape ``schemas/run.schema.json`` (``report.json``:
    ``schemas/report.schema.json``) and RunRecord's type hints say, or holds a
    number out of its range (runner.output.decode), naming the file and the key
    path: ``runs/0001-a.json: steps[0].turn: expected an integer, got a
    string``, ``runs/0001-a.json: outcome: must be at most 1, got 1e+30``.
    """
    folder = run_folder(Path(folder))
    files = run_files(folder)
    if not files:
        raise UserError(f"no run files in {folder / RUNS_DIR}")
    records = [read_run(p) for p in files]
    report = _load(folder / REPORT_FILE, "report") if (folder / REPORT_FILE).is_file() else None
    return Results(folder, records, report)


def resumed_records(folder: Path) -> list[RunRecord]:
    """The runs ``run --resume FOLDER`` reuses: ``read_results``' records; none for a folder whose run was
    interrupted before any run finished (no run file, its report.json listing the runs not finished), so a
    resume makes them all. Raises UserError as ``read_results`` does."""
    folder = run_folder(Path(folder))
    if not run_files(folder) and (folder / REPORT_FILE).is_file() and _load(folder / REPORT_FILE, "report").get("unfinished"):
        return []
    return read_results(folder).records


def run_files(folder: Path) -> list[Path]:
    """The run files of a ``results/<run-id>/`` folder, in plan order (their names start with their
    place in the plan), leftover temporary files left out."""
    return sorted(p for p in (folder / RUNS_DIR).glob("*.json") if not p.name.startswith("."))


def read_run(path: Path) -> RunRecord:
    """The record of one run file, checked as ``read_results`` checks it. Raises UserError."""
    return _record(path, _load(path, "run"))


def run_folder(folder: Path) -> Path:
    """The ``results/<run-id>/`` folder ``folder`` names: itself, or the newest inside a folder of them.
    Raises UserError for a file, a missing folder, or one that holds no results."""
    if (folder / RUNS_DIR).is_dir():
        return folder
    if folder.is_file():
        results = folder.parent.parent if folder.parent.name == RUNS_DIR else folder.parent
        ours = folder.name == REPORT_FILE or folder.parent.name == RUNS_DIR
        raise UserError(f"{folder} is a file, not a results folder",
                        hint=f"give the folder it is in: {results}" if ours else
                        "give a results/<run-id> folder written by 'tooltrial run' (or the folder of them)")
    if not folder.is_dir():
        raise UserError(f"no such results folder: {folder}")
    runs = sorted(p for p in folder.iterdir() if (p / RUNS_DIR).is_dir())
    if not runs:
        raise UserError(f"{folder} holds no results", hint="give a results/<run-id> folder written by 'tooltrial run'")
    return runs[-1]


NOT_OURS = "not a file this tooltrial wrote as it is: restore it, or move it out of the results folder"
# (kind, schema_version) -> the schema of a document older than SCHEMA_VERSION, where its shape differs
_SCHEMAS: dict[tuple[str, Any], str] = {("report", 1): "report.v1"}


def _load(path: Path, kind: str) -> dict[str, Any]:
    """The JSON document of a ``kind`` (``run`` or ``report``) file, checked against the schema of
    its ``schema_version`` (a version-1 report: ``schemas/report.v1.schema.json``)."""
    try:
        data = read_json(path.read_text(encoding="utf-8"))
    except Malformed as e:
        raise _shape_error(path, e.where, e.what) from e
    except (OSError, ValueError, RecursionError) as e:
        raise UserError(f"cannot read {path}: {e}", hint=NOT_OURS) from e
    return checked(path, data, kind)


def checked(path: Path, data: Any, kind: str) -> dict[str, Any]:
    """``data``, the parsed JSON of the ``kind`` (``run`` or ``report``) file ``path``, checked as
    ``read_results`` checks it. Raises UserError naming the file and the key path."""
    if not isinstance(data, dict):
        raise _shape_error(path, [], f"expected an object, got {json_kind(data)}")
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise UserError(f"{path}: schema_version {version} is newer than this tooltrial reads (up to {SCHEMA_VERSION}):"
                        " a newer tooltrial wrote it", hint="upgrade tooltrial to read it: pip install --upgrade tooltrial")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UserError(f"{path}: schema_version {version!r} is not one this tooltrial reads (1 to {SCHEMA_VERSION})",
                        hint=NOT_OURS)
    return checked_part(path, data, _SCHEMAS.get((kind, version), kind))


def checked_part(path: Path, data: Any, schema: str, part: str | None = None, where: list[str | int] | None = None) -> Any:
    """``data`` checked against ``schemas/<schema>.schema.json`` (``report``, ``report.v1`` or ``run``), or
    against its ``$defs/<part>`` (a report's ``cell``), ``where`` in the file (the key path of a part).
    Raises UserError naming the file and the key path."""
    fast, explain = _validators(schema, part)
    error = None if fast.is_valid(data) else explain(data)
    if error is not None:
        raise _shape_error(path, [*(where or []), *error.absolute_path], _say(error))
    return data


def schema_of(data: dict[str, Any], kind: str) -> str:
    """The schema (``report``, ``report.v1``, ``run``) a ``kind`` document of ``data``'s ``schema_version`` has."""
    return _SCHEMAS.get((kind, data.get("schema_version")), kind)


@functools.cache
def _validators(kind: str, part: str | None = None) -> tuple[Any, Callable[[Any], Any]]:
    """For ``schemas/<kind>.schema.json`` (a report file, of either version: its ``report`` document,
    not the regression view; or its ``$defs/<part>``): a jsonschema-rs validator to judge, and the function that gives jsonschema's most relevant
    error (None when it finds none), its validator made on first need."""
    import jsonschema_rs  # on first need, like jsonschema: only 'report' and '--resume' read results

    schema = json.loads((bundled("schemas") / f"{kind}.schema.json").read_text(encoding="utf-8"))
    if kind.startswith("report") or part is not None:
        schema = {**schema, "oneOf": [{"$ref": f"#/$defs/{part or 'report'}"}]}

    @functools.cache
    def validator() -> Any:
        from jsonschema import Draft202012Validator

        return Draft202012Validator(schema)

    def explain(data: Any) -> Any:
        from jsonschema.exceptions import best_match

        return best_match(validator().iter_errors(data))

    return jsonschema_rs.Draft202012Validator(schema), explain


def _say(error: Any) -> str:
    """One jsonschema error in words: ``expected an array, got a string``, ``missing required key 'case'``,
    ``must be at least 0, got -1`` (as runner.output.decode says a number out of its range)."""
    if error.validator == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"expected {' or '.join(NOUNS[w] for w in wanted)}, got {json_kind(error.instance)}"
    if error.validator == "required":
        return f"missing required key {next(k for k in error.validator_value if k not in error.instance)!r}"
    if error.validator in ("minimum", "maximum"):
        return f"must be at {'least' if error.validator == 'minimum' else 'most'} {error.validator_value}, got {error.instance!r}"
    return str(error.message)


def _record(path: Path, data: dict[str, Any]) -> RunRecord:
    try:
        return record_from_dict(data)
    except Malformed as e:
        raise _shape_error(path, e.where, e.what) from e


def _shape_error(path: Path, where: list[str | int], what: str) -> UserError:
    dotted = "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in where).lstrip(".")
    return UserError(what, Location(str(path)), dotted or "(file)", NOT_OURS)
