"""A mock's schema is judged as jsonschema's check_schema judges it, whether the fast path (jsonschema-rs
against the meta-schema, Python's re for patterns) or jsonschema itself decides."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from runner.spec.schemacheck import _schema_problem, forget_schema_checks, schema_problem

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 1.5, -0.0, 2.5]),
                     st.sampled_from(["", "string", "object", "integer", "x"]))
_PATTERNS = st.one_of(st.sampled_from(["^a+$", "[a-", "(?P<n>x)", "\\d{2,}", "(", "a{2,1}", "\\p{L}", "(?i)x"]),
                      st.text("[]()\\^$.*+?{}|ab1-", max_size=6))


def _schemas(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keyword_values = {
        "type": st.one_of(st.sampled_from(["object", "string", "integer", "number", "array", "boolean", "null",
                                           "objec", "int"]), st.lists(st.sampled_from(["string", "null", "x"]), max_size=3),
                          _SCALARS),
        "properties": st.one_of(st.dictionaries(st.sampled_from(["a", "b", "city"]), children, max_size=3), _SCALARS),
        "items": st.one_of(children, _SCALARS),
        "required": st.one_of(st.lists(st.one_of(st.sampled_from(["a", "b"]), st.integers(0, 2)), max_size=3), _SCALARS),
        "minLength": _SCALARS, "maximum": _SCALARS, "enum": st.one_of(st.lists(_SCALARS, max_size=3), _SCALARS),
        "pattern": st.one_of(_PATTERNS, _SCALARS),
        "patternProperties": st.one_of(st.dictionaries(_PATTERNS, children, max_size=2), _SCALARS),
        "additionalProperties": st.one_of(children, _SCALARS), "anyOf": st.one_of(st.lists(children, max_size=2), _SCALARS),
        "$schema": st.sampled_from(["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-04/schema#", "x"]),
        "$ref": st.one_of(st.sampled_from(["#/$defs/a", "#", "http://example.com/s"]), _SCALARS),
        "format": st.one_of(st.sampled_from(["date", "email", "regex"]), _SCALARS),
        "const": st.one_of(_SCALARS, st.fixed_dictionaries({"pattern": _PATTERNS})),
        "description": _SCALARS,
    }
    return st.one_of(st.booleans(), st.dictionaries(st.sampled_from(sorted(keyword_values)), st.none(), max_size=5).flatmap(
        lambda keys: st.fixed_dictionaries({key: keyword_values[key] for key in keys})))


SCHEMAS = st.recursive(st.fixed_dictionaries({}), _schemas, max_leaves=12).filter(lambda s: isinstance(s, dict))


def _jsonschema_problem(schema: dict[str, Any]) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(SCHEMAS)
@example({"type": "object", "properties": {"a": {"type": "string", "pattern": "[a-"}}})
@example({"patternProperties": {"(": {}}})
@example({"const": {"pattern": "[a-"}})
@example({"$schema": "http://json-schema.org/draft-04/schema#", "minLength": -1})
@example({"minLength": 1.0, "maxLength": 1.5})
def test_the_fast_path_judges_every_schema_as_jsonschema_does(schema: dict[str, Any]) -> None:
    assert (_schema_problem(schema) is not None) == _jsonschema_problem(schema)


def test_a_schema_jsonschema_rejects_gets_its_words() -> None:
    forget_schema_checks()
    assert schema_problem({"type": "object", "properties": {"a": {"type": "string", "pattern": "[a-"}}}) == (
        "invalid JSON Schema at 'properties/a/pattern': '[a-' is not a 'regex'")
    assert schema_problem({"type": "objec"}) == "invalid JSON Schema at 'type': 'objec' is not valid under any of the given schemas"
