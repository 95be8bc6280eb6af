"""Cases from data: a case naming ``dataset`` (a CSV, JSON lines or YAML list file, relative to the
case file) or ``matrix`` (``{var: [values], ...}``) expands into one case per row or combination.

Each expanded case is the case with the row's fields added to its ``vars`` (so ``turns`` and
``system`` see them as they render at run time), its ``files``, ``expect`` and ``script`` rendered
with them now, and its id the row's value in the ``dataset.id`` column, else ``{id}-{n}`` (n from 1).
A data file is read once per case file (``datasets`` caches it); every error names the row, at
its line in the data file (and the field's column in a CSV).
"""

from __future__ import annotations

import csv
import functools
import io
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from runner.errors import CaseFileError, Location, did_you_mean
from runner.names import ID_PATTERN
from runner.spec.positions import Spot, kind_of, position
from runner.spec.source import parse, to_plain
from runner.text import plural

DATA_KEYS = ("dataset", "matrix")
RENDERED = ("files", "expect", "script")  # rendered at load time; turns and system render at run time
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".yml": "yaml", ".yaml": "yaml"}
_FAILURES = (jinja2.TemplateError, ArithmeticError, TypeError, ValueError, LookupError, AttributeError)


@dataclass(frozen=True)
class Row:
    """One row of a dataset or one combination of a matrix.

    Attributes:
        values: the row's fields (a CSV's as strings), by column name.
        label: how messages name it: ``row 7`` (the 7th data row) or ``combination 3``.
        location: where it is written: the data file and its line, or the case's ``matrix`` key.
        columns: a CSV row's 1-based column of each field, by column name; empty for other files.
    """

    values: dict[str, Any]
    label: str
    location: Location
    columns: Mapping[str, int] = field(default_factory=dict)

    def error(self, message: str, path: str = "", column: str | None = None, hint: str = "") -> CaseFileError:
        """A CaseFileError at this row (at ``column``'s field in a CSV), named ``row N: path``."""
        at = self.location
        if column is not None and column in self.columns:
            at = Location(at.file, at.line, self.columns[column])
        return CaseFileError(message, at, f"{self.label}: {path}" if path else self.label, hint)


Rows = tuple[list[Row], list[CaseFileError]]


def expands(case: Mapping[str, Any]) -> bool:
    """Whether a case mapping names a ``dataset`` or a ``matrix``."""
    return any(key in case for key in DATA_KEYS)


def expand(spot: Spot, case: dict[str, Any], datasets: dict[Path, Rows]) -> tuple[list[tuple[Row, dict[str, Any]]], list[CaseFileError]]:
    """The cases a valid case mapping naming ``dataset`` or ``matrix`` expands into, each with its row,
    and the errors: of the data file (cached in ``datasets`` by path), of each row's id, of rendering."""
    if "dataset" in case and "matrix" in case:
        hint = "expand a case by one of them; write the matrix's combinations as dataset rows"
        return [], [spot.error("a case gives 'dataset' or 'matrix', not both", at=["matrix"], key=True, hint=hint)]
    if "matrix" in case:
        rows, errors = _combinations(spot, case["matrix"]), list[CaseFileError]()
    else:
        rows, errors = _dataset_rows(spot, case["dataset"], datasets)
    column: str | None = case["dataset"].get("id") if isinstance(case.get("dataset"), dict) else None
    if column is not None and rows and column not in rows[0].values:
        hint = did_you_mean(column, rows[0].values, "columns: " + ", ".join(rows[0].values))
        return [], [spot.error(f"the dataset has no column {column!r}", ["dataset", "id"], hint=hint)]
    template = {key: value for key, value in case.items() if key not in DATA_KEYS}
    compiled: dict[str, jinja2.Template] = {}
    expanded: list[tuple[Row, dict[str, Any]]] = []
    first: dict[str, str] = {}
    for number, row in enumerate(rows, 1):
        if column is not None and column not in row.values:
            errors.append(row.error(f"the row has no {column!r} field", hint="give each row its id"))
            continue
        case_id = str(row.values[column]) if column is not None else f"{case['id']}-{number}"
        if not ID_PATTERN.fullmatch(case_id):
            hint = f"an id matches {ID_PATTERN.pattern}"
            errors.append(row.error(f"{case_id!r} is not a valid case id", column or "", column, hint))
            continue
        if case_id in first:
            errors.append(row.error(f"duplicate id {case_id!r}", column or "", column, f"first in {first[case_id]}"))
            continue
        first[case_id] = row.label
        one, problems = _one(template, case_id, row, compiled)
        errors += problems
        expanded.append((row, one))
    return expanded, first_of_each(errors)


def first_of_each(errors: list[CaseFileError]) -> list[CaseFileError]:
    """``errors`` less those that say again what an earlier row's error said at the same key path
    (an undefined name in a template: every row would)."""
    said: set[tuple[str, str]] = set()
    kept = []
    for error in errors:
        said_at = (error.message, error.path.partition(": ")[2] or error.path)
        if said_at not in said:
            said.add(said_at)
            kept.append(error)
    return kept


def expanded_case(case: dict[str, Any], case_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The case mapping ``case`` (naming a dataset or matrix, already valid) expands into with the case
    id ``case_id`` and the variables ``values`` (its ``vars`` and the row's, as the expanded Case has
    them): what ``run --record`` writes for an expanded case."""
    template = {key: value for key, value in case.items() if key not in DATA_KEYS}
    return _one(template, case_id, Row(dict(values), "row", Location(case_id)), {})[0]


def _one(template: dict[str, Any], case_id: str, row: Row, compiled: dict[str, jinja2.Template]) -> tuple[dict[str, Any], list[CaseFileError]]:
    """The case ``row`` makes of ``template``: its id, its vars, its rendered parts."""
    names = {**template.get("vars", {}), **row.values}
    context = {**names, "vars": names}
    one = {**template, "id": case_id, "vars": names}
    errors: list[CaseFileError] = []
    for key in RENDERED:
        if key in template:
            one[key] = _rendered(template[key], context, compiled, [key], row, errors)
    return one, errors


def _rendered(value: Any, context: dict[str, Any], compiled: dict[str, jinja2.Template], path: list[str | int], row: Row, errors: list[CaseFileError]) -> Any:
    """``value`` with each string holding a template rendered (to text, whatever the row's value is)."""
    if isinstance(value, list):  # the same object back when nothing in it renders
        items = [_rendered(item, context, compiled, [*path, index], row, errors) for index, item in enumerate(value)]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    if isinstance(value, dict):  # keys too: a file's path
        pairs = [(_rendered(key, context, compiled, path, row, errors), _rendered(item, context, compiled, [*path, key], row, errors))
                 for key, item in value.items()]
        return value if all(k is old and v is value[old] for (k, v), old in zip(pairs, value, strict=True)) else dict(pairs)
    if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
        return value
    try:
        template = compiled.get(value) or compiled.setdefault(value, _environment().from_string(value))
        return template.render(context)
    except _FAILURES as e:
        hint = "the row's fields: " + ", ".join(row.values) if isinstance(e, jinja2.UndefinedError) else ""
        errors.append(row.error(str(e), _dotted(path), hint=hint))
        return value


@functools.cache
def _environment() -> SandboxedEnvironment:
    """The one environment a row's values render in: sandboxed, a missing name an error."""
    return SandboxedEnvironment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)


def _dotted(path: list[str | int]) -> str:
    return "".join(f"[{step}]" if isinstance(step, int) else f".{step}" for step in path).lstrip(".")


def _combinations(spot: Spot, matrix: dict[str, list[Any]]) -> list[Row]:
    """Each combination of a matrix's values, the first variable slowest, at the ``matrix`` key."""
    line, column = position(spot.node, ["matrix"], key=True)
    at = Location(spot.file, line, column)
    names = list(matrix)
    return [Row(dict(zip(names, values, strict=True)), f"combination {number}", at)
            for number, values in enumerate(itertools.product(*matrix.values()), 1)]


def _dataset_rows(spot: Spot, dataset: str | dict[str, Any], datasets: dict[Path, Rows]) -> Rows:
    """The rows of the data file a case names, read once for every case naming it."""
    name = dataset if isinstance(dataset, str) else dataset["file"]
    at = ["dataset"] if isinstance(dataset, str) else ["dataset", "file"]
    path = Path(spot.file).parent / name
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        return [], [spot.error(f"cannot tell the format of {name!r}", at, hint="name a .csv, .jsonl or .yml file")]
    if path not in datasets:
        try:
            text = path.read_bytes().decode("utf-8-sig")
        except OSError as e:
            return [], [spot.error(f"cannot read the dataset {name!r}: {e.strerror}", at, hint="its path is relative to the case file")]
        except UnicodeDecodeError:
            return [], [spot.error(f"the dataset {name!r} is not UTF-8 text", at)]
        datasets[path] = _READERS[kind](text, str(path))
    rows, errors = datasets[path]
    if not rows and not errors:
        errors = [spot.error(f"the dataset {name!r} has no rows", at)]
    return rows, errors


def _csv_rows(text: str, file: str) -> Rows:
    """A CSV file's rows: the first row names the columns; blank lines are skipped."""
    lines = [line.rstrip("\r\n") for line in io.StringIO(text, newline="")]  # the lines the reader counts
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        return [], []
    rows: list[Row] = []
    errors: list[CaseFileError] = []
    start = reader.line_num + 1
    for fields in reader:
        line, start = start, reader.line_num + 1
        if not fields:
            continue
        row = Row(dict(zip(header, fields, strict=False)), f"row {len(rows) + len(errors) + 1}",
                  Location(file, line, 1), dict(zip(header, _starts(lines[line - 1]), strict=False)))
        if len(fields) != len(header):
            more = len(fields) > len(header)
            column = _starts(lines[line - 1])[len(header)] if more else len(lines[line - 1]) + 1
            hint = 'quote a field that holds a comma: "a, b"' if more else "write every column, an empty one as ,,"
            errors.append(CaseFileError(f"{plural(len(fields), 'field')} where the header names {len(header)}",
                                        Location(file, line, column), row.label, hint))
        else:
            rows.append(row)
    return rows, errors


def _starts(line: str) -> list[int]:
    """The 1-based column each field of one CSV line starts at (a quote opens or closes a quoted field)."""
    starts, quoted = [1], False
    for index, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "," and not quoted:
            starts.append(index + 2)
    return starts


def _jsonl_rows(text: str, file: str) -> Rows:
    """A JSON lines file's rows: one JSON object a line; blank lines are skipped."""
    rows: list[Row] = []
    errors: list[CaseFileError] = []
    for line, content in enumerate(text.split("\n"), 1):  # JSON text may hold U+2028, which splitlines splits at
        if not content.strip():
            continue
        label = f"row {len(rows) + len(errors) + 1}"
        try:
            value = json.loads(content)
        except json.JSONDecodeError as e:
            errors.append(CaseFileError(f"not JSON: {e.msg}", Location(file, line, e.colno), label))
            continue
        if isinstance(value, dict):
            rows.append(Row(value, label, Location(file, line)))
        else:
            errors.append(CaseFileError(f"expected a JSON object, got {kind_of(value)}", Location(file, line), label))
    return rows, errors


def _yaml_rows(text: str, file: str) -> Rows:
    """A YAML file's rows: a list of mappings."""
    try:
        node = parse(text, file)
        data = to_plain(node, file)
    except CaseFileError as e:
        return [], [e]
    if data is None:
        return [], []
    if not isinstance(data, list):
        return [], [CaseFileError("expected a list of rows, each a mapping", Location(file, 1, 1))]
    rows: list[Row] = []
    errors: list[CaseFileError] = []
    for index, value in enumerate(data):
        at = Location(file, *position(node, [index]))
        if isinstance(value, dict):
            rows.append(Row(value, f"row {index + 1}", at))
        else:
            errors.append(CaseFileError(f"expected a mapping, got {kind_of(value)}", at, f"row {index + 1}"))
    return rows, errors


_READERS = {"csv": _csv_rows, "jsonl": _jsonl_rows, "yaml": _yaml_rows}
