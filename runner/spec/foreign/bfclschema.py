"""BFCL function docs as JSON Schema: BFCL's type names (``dict``, ``float``, ``tuple``, ``any``) mapped
to JSON Schema's at every depth. Source: bfcl_eval/data/*.json and ast_checker.PYTHON_TYPE_MAPPING
(https://github.com/ShishirPatil/gorilla/tree/main/berkeley-function-call-leaderboard).
"""

from __future__ import annotations

import json
from typing import Any

from runner.spec.foreign.bfclanswers import PYTHON_TYPES
from runner.spec.matchers import normalize

# BFCL's type names -> JSON Schema's (None: any value)
TYPES: dict[str, str | None] = {"string": "string", "integer": "integer", "float": "number", "boolean": "boolean",
                                "array": "array", "tuple": "array", "dict": "object", "any": None}


class BadDoc(Exception):
    """A function doc with a type BFCL's Python checker does not know: ``where`` (key path), the
    message, and a ``hint``."""

    def __init__(self, where: str, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.where, self.hint = where, hint


def widen(schema: dict[str, Any], kinds: set[str]) -> None:
    """Let ``schema`` (one parameter's) accept the JSON types ``kinds`` too, where it names a type."""
    if "type" not in schema:
        return
    have = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    new = kinds - set(have) - ({"integer"} if "number" in have else set())  # a number includes the integers
    if new:
        schema["type"] = [*have, *sorted(new)]


def unlist(schema: dict[str, Any], values: list[Any]) -> None:
    """Move ``schema``'s ``enum`` into its description when some acceptable answer in ``values`` is not
    in it, strings compared normalised (the mock's ``enum_match: normalized``): BFCL never checks an
    enum, and the mock's schema would refuse the answer its key accepts. The model still reads the
    choices; the answer is not added to them."""
    enum = schema.get("enum")
    if isinstance(enum, list) and any(not _in_enum(value, enum) for value in values):
        del schema["enum"]
        choices = "one of " + json.dumps(enum, ensure_ascii=False)
        schema["description"] = f"{schema['description']} ({choices})" if schema.get("description") else choices


def _in_enum(value: Any, enum: list[Any]) -> bool:
    """Whether ``value`` is a member of ``enum``, a string one once both are normalised (runner.spec.matchers.normalize)."""
    if isinstance(value, str):
        return any(isinstance(member, str) and normalize(member) == normalize(value) for member in enum)
    return value in enum


def holds_enum(schema: Any) -> bool:
    """Whether the JSON Schema ``schema`` (as ``json_schema`` writes it) has an ``enum``, in itself or in
    a property or ``items`` schema at any depth."""
    if not isinstance(schema, dict):
        return False
    properties = schema.get("properties")
    inner = [*(properties.values() if isinstance(properties, dict) else []), schema.get("items")]
    return "enum" in schema or any(holds_enum(sub) for sub in inner)


def json_type(value: Any) -> str:
    """The JSON Schema type name of a JSON value."""
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"),
                       (dict, "object")):
        if isinstance(value, kind):
            return name
    return "null"


def json_schema(doc: Any, where: str) -> Any:
    """A BFCL parameter doc as JSON Schema: BFCL's type names mapped (``TYPES``: dict -> object, float ->
    number, tuple -> array, any -> no type), at every depth; its non-standard ``optional`` flag dropped.
    Raises BadDoc for a type name BFCL's Python checker does not know, a schema that is not an object
    (a parameter's, an ``items``), and ``properties`` or ``required`` of another shape."""
    if not isinstance(doc, dict):
        raise BadDoc(where, f"expected an object, got {json_type(doc)}", "a parameter doc is a JSON object")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "type":
            if not isinstance(value, str) or value not in TYPES:
                raise BadDoc(f"{where}.type", f"unknown type {value!r}", "BFCL's Python types: " + ", ".join(PYTHON_TYPES))
            if TYPES[value] is not None:
                out["type"] = TYPES[value]
        elif key == "properties":
            if not isinstance(value, dict):
                raise BadDoc(f"{where}.properties", f"expected an object, got {json_type(value)}")
            out[key] = {name: json_schema(sub, f"{where}.properties.{name}") for name, sub in value.items()}
        elif key == "required" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise BadDoc(f"{where}.required", "expected a list of parameter names")
        elif key == "items":
            out[key] = json_schema(value, f"{where}.{key}")
        elif key != "optional":
            out[key] = value
    return out


_PLACEHOLDERS: dict[str, Any] = {"string": "x", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}


def placeholder(schema: Any) -> Any:
    """A value the JSON Schema ``schema`` (as ``json_schema`` writes it) accepts in the common case: its
    ``default``, else its first ``enum`` value, else a value of its type (``"x"``, ``0``, ``false``,
    ``[]``, an object of its ``required`` properties, each a placeholder). Minimums, patterns and the
    like are not honoured; a relevance entry's scripted call is the only user."""
    if not isinstance(schema, dict):
        return "x"
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: placeholder(properties.get(name)) for name in schema.get("required", []) if isinstance(name, str)}
    return _PLACEHOLDERS.get(kind, "x") if isinstance(kind, str) else "x"
