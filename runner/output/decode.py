"""A run file's JSON as a RunRecord, and the rules it is held to: every value of the type its field's hint
says and every number in its range, checked by pydantic (runner.output.typed, imported when a run file is
first read back); a value that does not fit raises Malformed naming its key path (runner.output.load adds the file).

The ranges: a score or rate (``outcome``, ``process``, ``accuracy``, a check's ``score``, the
trajectory-match figures) is from 0 to 1; ``run`` is at most 10,000 (it names the file written); every
other number of the record (counts, tokens, costs, durations, timestamps) is at least 0, but a command's
``exit_code`` (negative: the signal that killed it); and no number anywhere in the file is NaN or infinite. ``out_of_range`` holds a record about to
be written to the same rules, so tooltrial never writes a file it would refuse to read.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
import types
import typing
from collections.abc import Iterator
from typing import Any

from runner.checks.base import CheckResult
from runner.run.record import CommandRun, RunRecord
from runner.run.requests import JSON_KEY
from runner.scoring.trajectorymatch import TrajectoryMatch

# fields whose number is a score or a rate: from 0 to 1
_UNIT = frozenset({(RunRecord, "outcome"), (RunRecord, "process"), (RunRecord, "accuracy"), (CheckResult, "score"),
                   (TrajectoryMatch, "name_precision"), (TrajectoryMatch, "name_recall"),
                   (TrajectoryMatch, "call_precision"), (TrajectoryMatch, "call_recall")})
_SIGNED = frozenset({(CommandRun, "exit_code")})  # fields whose number may be below 0
# a case runs at most 10,000 times (schemas/case.schema.json: runs)
_HIGHEST: dict[tuple[type, str], float] = {(RunRecord, "run"): 10_000}


class Malformed(Exception):
    """A value of a run document that does not fit RunRecord: ``where`` (key path) and ``what``."""

    def __init__(self, where: list[str | int], what: str) -> None:
        self.where, self.what = where, what
        super().__init__(what)


def read_json(text: str) -> Any:
    """The parsed JSON ``text`` of a results file. Raises ValueError (json's) for text that is not JSON,
    and Malformed at the key path of the first ``NaN``, ``Infinity`` or ``-Infinity``, which JSON has not
    (Python's json reads them; tooltrial writes none). A number too large for a float (``1e400``) reads as
    an infinity, which the record's own fields refuse (record_from_dict)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except _NotJson:
        data = json.loads(text)
        where, value = next(_not_finite(data, []))
        raise Malformed(where, f"expected a finite number, got {spelled(value)}") from None


class _NotJson(ValueError):
    pass


def _refuse_constant(name: str) -> float:
    raise _NotJson(name)


def _not_finite(value: Any, where: list[str | int]) -> Iterator[tuple[list[str | int], float]]:
    """Each float of ``value`` that is not finite, with its key path, in the order of the text; a walk
    of its own, kept off the normal path (a file holds none)."""
    stack: list[tuple[Any, list[str | int]]] = [(value, where)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            yield where, value
        elif isinstance(value, dict):
            stack += reversed([(item, [*where, key]) for key, item in value.items()])
        elif isinstance(value, list):
            stack += reversed([(item, [*where, i]) for i, item in enumerate(value)])


def spelled(value: float) -> str:
    """A float that is not finite as Python's json spells it: ``NaN``, ``Infinity``, ``-Infinity``."""
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def record_from_dict(data: dict[str, Any]) -> RunRecord:
    """The RunRecord of a run file's document, nested records (checks, steps, tokens...) built by pydantic
    from RunRecord's dataclasses and their type hints (runner.output.typed), each value held to its JSON type
    (no ``"3"`` for 3, no ``true`` for 1) and each number to its range (module docstring); keys RunRecord
    does not have (``schema_version``, ``attempt``...) are ignored. Raises Malformed, naming the key path,
    for a value of another type than its hint, a number out of its range, or a missing field that has no default.

    A document without ``commands`` was written before run numbers became 1-based: its ``run`` is
    read one up, so old and new records of a plan have the same keys (``--resume``, pairing)."""
    from runner.output.typed import typed_record  # pydantic, imported when a run file is first read back

    if "commands" not in data and isinstance(data.get("run"), int) and not isinstance(data["run"], bool):
        data = {**data, "run": data["run"] + 1}
    return typed_record(data)


def out_of_range(record: RunRecord) -> tuple[list[str | int], str] | None:
    """The key path and the complaint of the first number of ``record`` (nested records too) that
    record_from_dict would refuse, None when every one is in its range: what a writer checks first."""
    return next(_faults(record, []), None)


def _faults(record: Any, where: list[str | int]) -> Iterator[tuple[list[str | int], str]]:
    """Each number of ``record`` out of its range, its nested records' too, in field order."""
    cls: type = type(record)
    keys = {f.name: f.metadata.get(JSON_KEY, f.name) for f in dataclasses.fields(record)}
    for name, low, high in number_ranges(cls):
        value = getattr(record, name)
        if value is not None and not low <= value <= high:
            yield [*where, keys[name]], _complaint(value, low, high)
    for name in _nested(cls):
        value = getattr(record, name)
        if isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                yield from _faults(item, [*where, keys[name], i])
        elif value is not None:
            yield from _faults(value, [*where, keys[name]])


def _complaint(value: float, low: float, high: float) -> str:
    """What is wrong with ``value``, a number that is not from ``low`` to ``high``."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {spelled(value)}"
    return f"must be at least {low}, got {value!r}" if value < low else f"must be at most {high}, got {value!r}"


@functools.cache
def number_ranges(cls: type) -> tuple[tuple[str, float, float], ...]:
    """A record dataclass's number fields with their ranges ``(name, low, high)``: a number, or a number or None
    (a list of numbers, such as a request's ``messages`` range, is not one)."""
    return tuple((name, 0, 1 if (cls, name) in _UNIT else _HIGHEST.get((cls, name), LARGEST))
                 for name, _, hint, _ in shape(cls) if (cls, name) not in _SIGNED
                 and set(typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType)
                         else (hint,)) & {int, float})


LARGEST = sys.float_info.max  # an infinity is above it; a NaN is not between any two numbers


@functools.cache
def _nested(cls: type) -> tuple[str, ...]:
    """A record dataclass's fields that hold record dataclasses: one, a list of them, or None."""
    return tuple(name for name, _, hint, _ in shape(cls) if any(dataclasses.is_dataclass(k) for k in _leaves(hint)))


def _leaves(hint: Any) -> set[Any]:
    """The types a hint is made of, through unions and lists (not a mapping's values: the record's are
    text and lists of text, or free JSON)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType, list):
        return set().union(*map(_leaves, typing.get_args(hint)))
    return {hint}


@functools.cache
def shape(cls: type) -> tuple[tuple[str, str, Any, bool], ...]:
    """A record dataclass's fields as ``(name, key in the run file, type hint, required)``, found once a process
    (``get_type_hints`` evaluates every annotation: most of the time of reading a run file back, were
    it done each time)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, f.metadata.get(JSON_KEY, f.name), hints[f.name],
                  f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                 for f in dataclasses.fields(cls))


KINDS: dict[Any, str] = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null",
                          list: "array", dict: "object"}
NOUNS = {"boolean": "a boolean", "integer": "an integer", "number": "a number", "string": "a string",
         "null": "null", "array": "an array", "object": "an object"}


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words: ``a string``, ``an array``, ``null``... (a bool is no integer)."""
    return next(NOUNS[name] for kind, name in KINDS.items() if isinstance(value, kind))
