"""A BFCL answer key (``possible_answer/*.json``'s ``ground_truth``) as tooltrial argument specs, and
its first acceptable answer as the scripted provider's call.

One expected call is ``{FUNCTION: {PARAM: [acceptable values...]}}``; ``""`` among the values marks
the parameter optional. BFCL's ``ast_checker.simple_function_checker`` rules, and the spec each
becomes (runner.spec.matchers):

==========================================  =============================================================
BFCL rule                                   tooltrial spec
==========================================  =============================================================
one of the acceptable values                ``{any_of: [...]}`` (one value: the value itself)
``""`` among them: may be absent            ``{optional: M}``; only ``""``: ``{absent: true}`` (string: ``""``)
string: case, spaces, ``,./-_*^`` and       ``{normalized: S}``
quote kind ignored (``standardize_string``)
list: element by element, strings           a list of element specs (same length)
normalised (``list_checker``)
dict: no key beyond the answer's, values    an object spec of per-key specs, each as above
one of theirs (``dict_checker``)
list of dicts (``list_dict_checker``)       a list of object specs
a value of the answer's type where the      the value itself, compared exactly (no normalisation), and the
function doc says another ("variable")      mock's schema widened to that type (runner.spec.foreign.bfcl)
==========================================  =============================================================

"No parameter the answer does not name" and "integer rejects 5.0" are the call's ``exact_args`` and
``strict_types`` (set for the whole file). Source: bfcl_eval/eval_checker/ast_eval/ast_checker.py
(https://github.com/ShishirPatil/gorilla/tree/main/berkeley-function-call-leaderboard).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OPTIONAL = ""  # BFCL's mark of an optional parameter among the acceptable values
# BFCL's type names -> the Python type its checker requires (ast_checker.PYTHON_TYPE_MAPPING)
PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                                 "tuple": list, "dict": dict, "any": str}
_STRINGS = ("string", "any")


def is_variable(doc: Mapping[str, Any], values: list[Any]) -> bool:
    """Whether BFCL treats ``values`` as a variable: the first value that is not ``""`` is of another
    Python type than the parameter's doc ``type`` says (a null, a string for an integer...); then a
    value of that type is accepted and every comparison is exact (``type_checker``'s ``is_variable``)."""
    wanted = PYTHON_TYPES.get(doc.get("type", ""))
    first = next((v for v in values if v != OPTIONAL), OPTIONAL)
    return first != OPTIONAL and wanted is not None and type(first) is not wanted


def param_spec(doc: Mapping[str, Any], values: list[Any]) -> Any:
    """The spec of one parameter (its function-doc schema ``doc``, BFCL types) whose acceptable values are ``values``."""
    kind = doc.get("type", "")
    variable = is_variable(doc, values)
    options = [value if variable else value_spec(doc, value) for value in values if value != OPTIONAL]
    if OPTIONAL in values and kind in _STRINGS and not variable:
        options.append({"normalized": ""})  # "" is a string value too, which the model may send
    return _optional(options, OPTIONAL in values)


def _optional(options: list[Any], optional: bool) -> Any:
    """One of ``options`` (one: itself), or absent too when ``optional``; nothing: only absent."""
    if not options:
        return {"absent": True}
    one = options[0] if len(options) == 1 else {"any_of": options}
    return {"optional": one} if optional else one


def value_spec(doc: Mapping[str, Any], value: Any) -> Any:
    """The spec of one acceptable ``value`` of a parameter of doc schema ``doc`` (not a variable)."""
    kind = doc.get("type", "")
    if kind in _STRINGS:
        return {"normalized": value}
    if kind == "dict" and isinstance(value, dict):
        return dict_spec(value)
    if kind in ("array", "tuple") and isinstance(value, list):
        if doc.get("items", {}).get("type") == "dict":
            return [dict_spec(item) if isinstance(item, dict) else item for item in value]
        return [_element_spec(item) for item in value]
    return value


def dict_spec(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The object spec of one acceptable dict, ``{key: [acceptable values]}`` (``dict_checker``): strings
    normalised, anything else compared as it is; a key whose values hold ``""`` may be absent."""
    spec = {}
    for key, values in answer.items():
        values = values if isinstance(values, list) else [values]
        options = [_element_spec(v) for v in values if v != OPTIONAL]
        if OPTIONAL in values:
            options.append({"normalized": ""})
        spec[key] = _optional(options, OPTIONAL in values)
    return spec


def _element_spec(value: Any) -> Any:
    return {"normalized": value} if isinstance(value, str) else value


def first_arguments(doc: Mapping[str, Any], answer: Mapping[str, list[Any]]) -> dict[str, Any]:
    """The first acceptable arguments of one expected call: each parameter's first value, a parameter
    whose first value is ``""`` left out unless the doc requires it (then its first other value; a
    string with no other, ``""``, which BFCL's string check accepts); ``doc`` is the function's
    ``parameters`` schema (BFCL types)."""
    properties, required = doc.get("properties", {}), doc.get("required", [])
    arguments = {}
    for param, values in answer.items():
        kind = properties.get(param, {}).get("type")
        given = [v for v in values if v != OPTIONAL] if param in required else values[:1]
        if given and given[0] != OPTIONAL:
            arguments[param] = _first(properties.get(param, {}), given[0])
        elif param in required and OPTIONAL in values and kind in _STRINGS:
            arguments[param] = OPTIONAL
    return arguments


def _first(doc: Mapping[str, Any], value: Any) -> Any:
    """``value`` as a call sends it: a dict answer (or a list of them) of ``{key: [values]}`` built from the first values."""
    kind = doc.get("type", "")
    if kind == "dict" and isinstance(value, dict):
        return _first_dict(value)
    if kind in ("array", "tuple") and doc.get("items", {}).get("type") == "dict" and isinstance(value, list):
        return [_first_dict(item) if isinstance(item, dict) else item for item in value]
    return value


def _first_dict(answer: Mapping[str, Any]) -> dict[str, Any]:
    return {key: values[0] for key, values in answer.items()
            if isinstance(values, list) and values and values[0] != OPTIONAL}
