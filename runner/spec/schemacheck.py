"""Whether a mock's ``parameters`` are a JSON Schema (draft 2020-12), once per distinct schema.

jsonschema's ``check_schema`` words what is wrong, but is slow: in a suite whose many mock schemas
all differ, that check alone would outweigh loading the cases. So each schema goes first to
jsonschema-rs, compiled once against the draft's meta-schema (fast), and, since the one format
jsonschema asserts there is ``regex``, each ``pattern`` and ``patternProperties`` key in it is compiled with Python's ``re``; a schema that passes both
is one jsonschema accepts too (a property test holds it), and only another goes to jsonschema,
whose verdict and words stand.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

import jsonschema_rs

from runner.spec.schema import surely_valid


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why ``schema`` is no valid JSON Schema (draft 2020-12, jsonschema's ``check_schema``), or None.
    Checked once per distinct schema (its canonical JSON text): generated suites repeat theirs.
    A schema seen before is found by its ``repr`` (half the cost of the canonical text, which only
    a schema not seen in that form is turned into)."""
    return _written_problem(_Written(schema))


class _Written:
    """A schema as written, equal to another with the same ``repr``: plain data (str, int, float,
    bool, None, lists and dicts, as case files give them) has one ``repr`` per value and key order."""

    __slots__ = ("schema", "text")

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema, self.text = schema, repr(schema)

    def __hash__(self) -> int:
        return hash(self.text)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Written) and other.text == self.text


@functools.lru_cache(maxsize=4096)
def _written_problem(written: _Written) -> str | None:
    try:
        text = json.dumps(written.schema, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # not JSON (a YAML date...): checked as it is
        return _schema_problem(written.schema)
    return canonical_problem(text)


@functools.lru_cache(maxsize=4096)
def canonical_problem(text: str) -> str | None:
    """``schema_problem`` of the schema whose canonical JSON is ``text``: the per-schema cache."""
    return _schema_problem(json.loads(text))


def forget_schema_checks() -> None:
    """Empty the per-schema caches of ``schema_problem`` (the benchmark does between repetitions)."""
    _written_problem.cache_clear()
    canonical_problem.cache_clear()


def _schema_problem(schema: dict[str, Any]) -> str | None:
    if surely_valid(_meta(), schema) and all(_compiles(p) for p in _patterns(schema)):
        return None
    from jsonschema import (
        Draft202012Validator,  # imported here: files without mocks load faster
    )
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as e:
        where = "/".join(map(str, e.absolute_path))
        return f"invalid JSON Schema{f' at {where!r}' if where else ''}: {e.message}"
    return None


@functools.cache
def _meta() -> jsonschema_rs.Validator:
    """jsonschema-rs's validator of draft 2020-12's meta-schema (what ``check_schema`` checks a schema against,
    whatever its ``$schema`` says), formats not asserted."""
    return jsonschema_rs.Draft202012Validator({"$ref": "https://json-schema.org/draft/2020-12/schema"})


def _patterns(value: Any) -> Iterator[Any]:
    """Every ``pattern`` value and ``patternProperties`` key anywhere in ``value``: more than where the
    meta-schema asks for a regex (inside ``const`` too), which can only send a schema to jsonschema."""
    if isinstance(value, dict):
        if "pattern" in value:
            yield value["pattern"]
        if isinstance(value.get("patternProperties"), dict):
            yield from value["patternProperties"]
        for item in value.values():
            yield from _patterns(item)
    elif isinstance(value, list):
        for item in value:
            yield from _patterns(item)


def _compiles(pattern: Any) -> bool:
    """Whether ``pattern`` is text Python's ``re`` compiles (jsonschema's ``regex`` format)."""
    if not isinstance(pattern, str):
        return True  # not a string: the meta-schema's type check has its say
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return False
    return True
