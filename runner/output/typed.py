"""A run file's document as a RunRecord, by pydantic: RunRecord's dataclasses validated from their type hints,
each JSON type strict and each number held to its range (runner.output.decode.number_ranges) in pydantic's
own checks; its errors put in tooltrial's words, at their key path (runner.output.decode.Malformed).

pydantic (v2, which litellm needs too) was chosen over msgspec, which is faster (benchmarks/records.py) but
cannot give a dataclass's field another key in the file (``prompt`` for ``prompt_tokens``: only its own
Structs can), and over the hand-written converter it replaces, about twice as slow.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import types
import typing
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

from runner.output.decode import KINDS, LARGEST, NOUNS, Malformed, json_kind, number_ranges, shape, spelled
from runner.run.record import RunRecord


def typed_record(data: dict[str, Any]) -> RunRecord:
    """The RunRecord of ``data``, a run file's parsed document. Raises Malformed at the key path of the first
    value that is not of its field's type or out of its range, or the first required key missing."""
    try:
        record: RunRecord = _validator().validate_python(data)
    except ValidationError as e:
        raise _malformed(e.errors(include_url=False), data) from None
    return record


@functools.cache
def _validator() -> SchemaValidator:
    """pydantic's validator of RunRecord, made once a process (about 50 ms). Its JSON types are strict but
    its records are not: pydantic's own ``strict`` would take a dataclass only as an instance, never as the
    object of a parsed file. Each field's run-file key is its ``alias`` (runner.run.requests.JSON_KEY)."""
    return SchemaValidator(_strict(copy.deepcopy(TypeAdapter(RunRecord).core_schema)))


_LEAF_TYPES = frozenset({"str", "bool", "list", "dict"})  # pydantic-core schema types held strict, besides numbers
_THROUGH = frozenset({"default", "nullable", "union"})  # schemas a field's number range reaches through


def _strict(schema: Any, limits: tuple[float, float] | None = None) -> Any:
    """``schema`` (pydantic-core's core schema: nested dicts, lists and tuples) with each JSON type strict, each
    number field of a record held to its range (``limits``: low and high), and each float an integer or a float,
    so an integer in the file stays one (pydantic's float makes it a float, which the file would hold as ``3.0``)."""
    if isinstance(schema, list | tuple):
        for part in schema:
            _strict(part, limits)
        return schema
    if not isinstance(schema, dict):
        return schema
    kind = schema.get("type")
    if kind in ("int", "float"):
        bounds = {} if limits is None else {"ge": limits[0]} | ({} if limits[1] == LARGEST else {"le": limits[1]})
        whole = {**schema, "type": "int", "strict": True, **bounds}
        if kind == "int":
            schema.update(whole)
        else:
            schema.clear()
            schema.update(type="union", mode="left_to_right",
                          choices=[whole, {**whole, "type": "float", "allow_inf_nan": limits is None}])
        return schema
    if kind in _LEAF_TYPES:
        schema["strict"] = True
    if kind == "dataclass":
        ranges = {name: (low, high) for name, low, high in number_ranges(schema["cls"])}
        for field in schema["schema"]["fields"]:
            _strict(field["schema"], ranges.get(field["name"]))
        return schema
    for part in schema.values():
        _strict(part, limits if kind in _THROUGH else None)
    return schema


_RANGE = ("missing", "greater_than_equal", "less_than_equal", "finite_number")  # preferred over a type error


def _malformed(errors: list[Any], data: Any) -> Malformed:
    """The first of pydantic's ``errors`` in tooltrial's words (a missing key or a number's range before a
    type: a float field's number is tried as an integer first), at its key path in ``data`` (pydantic's
    ``loc`` holds a union member's name too, which ``data`` has not)."""
    error = next((e for kind in _RANGE for e in errors if e["type"] == kind), errors[0])
    loc, value = list(error["loc"]), error["input"]
    bounds = {name: int(bound) for name, bound in error.get("ctx", {}).items() if name in ("ge", "le")}  # 0, 1, 10000
    if error["type"] == "missing":
        return Malformed(_keys(loc[:-1], data), f"missing required key {loc[-1]!r}")
    where = _keys(loc, data)
    if error["type"] == "finite_number":
        return Malformed(where, f"expected a finite number, got {spelled(value)}")
    if error["type"] == "greater_than_equal":
        return Malformed(where, f"must be at least {bounds['ge']}, got {value!r}")
    if error["type"] == "less_than_equal":
        return Malformed(where, f"must be at most {bounds['le']}, got {value!r}")
    hint = _hint_at(where)
    kinds = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    member = next((k for k in kinds if isinstance(k, type) and issubclass(k, enum.StrEnum)), None)
    if error["type"] == "enum" and member is not None and isinstance(value, str):
        return Malformed(where, f"{value!r} is not one of {', '.join(repr(m.value) for m in member)}")
    if error["type"].endswith("_type") or error["type"] == "enum":
        return Malformed(where, f"expected {' or '.join(map(_noun, kinds))}, got {json_kind(value)}")
    return Malformed(where, str(error["msg"]))


def _keys(loc: list[str | int], data: Any) -> list[str | int]:
    """The steps of ``loc`` that are keys or indexes of ``data``, in turn."""
    where: list[str | int] = []
    for step in loc:
        if isinstance(data, dict) and step in data or isinstance(data, list) and isinstance(step, int) and step < len(data):
            where.append(step)
            data = data[step]  # type: ignore[index]
    return where


def _hint_at(where: list[str | int]) -> Any:
    """The type hint of the value at key path ``where`` of a run document (Any where free JSON holds it)."""
    hint: Any = RunRecord
    for step in where:
        kinds = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
        hint = next((k for k in kinds if typing.get_origin(k) in (list, dict) or dataclasses.is_dataclass(k)), Any)
        if dataclasses.is_dataclass(hint):
            hint = next((one for _, key, one, _ in shape(hint) if key == step), Any)  # type: ignore[arg-type]
        elif typing.get_origin(hint) is list:
            hint = typing.get_args(hint)[0]
        elif typing.get_origin(hint) is dict:
            hint = typing.get_args(hint)[1]
    return hint


def _noun(hint: Any) -> str:
    """How a message names a value of ``hint``: ``an integer``, ``an object`` (a record), ``a string`` (a kind)..."""
    kind = typing.get_origin(hint) or hint
    if dataclasses.is_dataclass(kind) or kind is dict:
        return "an object"
    if isinstance(kind, type) and issubclass(kind, enum.StrEnum):
        return "a string"
    return NOUNS.get(KINDS.get(kind, ""), "any value")
