"""JSON Schema's type names held to a value, strictly as BFCL's checker holds Python types.

``integer`` is an int that is no boolean (``5.0`` is not one, though JSON Schema's own rule would
accept it); ``number`` an int or a float that is no boolean (``5`` is one); ``boolean`` only
``true``/``false``; ``string``, ``array``, ``object`` and ``null`` as JSON has them.
``schema_type_mismatch`` holds a call's arguments to the types of a tool's JSON-Schema parameters
(``strict_types``), at every depth the schema gives ``properties`` or ``items``.

Source: the Berkeley Function-Calling Leaderboard's AST checker
(``bfcl_eval/eval_checker/ast_eval/ast_checker.py``, ``type_checker``), which converts an int for
a float parameter and rejects a float for an integer one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

TYPE_NAMES = ("string", "integer", "number", "boolean", "array", "object", "null")


def has_type(value: Any, name: str) -> bool:
    """Whether ``value`` (parsed JSON) is of the JSON Schema type ``name`` (one of TYPE_NAMES;
    an unknown name holds nothing)."""
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, (list, tuple))
    if name == "object":
        return isinstance(value, Mapping)
    return name == "null" and value is None


def type_mismatch(names: str | Sequence[str], value: Any, where: str) -> str | None:
    """``where: expected integer, got 5.0`` when ``value`` is of none of the type ``names``; else None."""
    wanted = [names] if isinstance(names, str) else list(names)
    if any(has_type(value, name) for name in wanted):
        return None
    return f"{where}: expected {' or '.join(wanted)}, got {_shown(value)}"


def schema_type_mismatch(parameters: Mapping[str, Any] | None, arguments: Mapping[str, Any] | None) -> str | None:
    """The first argument whose value is not of the type its parameter schema names, as
    ``count: expected integer (the tool's parameter type), got 5.0``; None when every one is.

    ``parameters`` is a tool's JSON-Schema object (None: no types to hold). A parameter with no
    ``type``, or one the schema does not describe, is not held to any; objects are followed into
    their ``properties`` and arrays into their ``items``, at every depth.
    """
    reason = _object(parameters or {}, arguments or {}, "")
    return None if reason is None else f"{reason} (the tool's parameter type)"


def _object(schema: Mapping[str, Any], value: Mapping[str, Any], where: str) -> str | None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return None
    for key, item in value.items():
        if isinstance(properties.get(key), Mapping):
            reason = _value(properties[key], item, f"{where}.{key}" if where else str(key))
            if reason:
                return reason
    return None


def _value(schema: Mapping[str, Any], value: Any, where: str) -> str | None:
    names = schema.get("type")
    if isinstance(names, (str, list)):
        reason = type_mismatch(names, value, where)
        if reason:
            return reason
    if isinstance(value, Mapping):
        return _object(schema, value, where)
    items = schema.get("items")
    if isinstance(value, (list, tuple)) and isinstance(items, Mapping):
        for index, item in enumerate(value):
            reason = _value(items, item, f"{where}[{index}]")
            if reason:
                return reason
    return None


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
