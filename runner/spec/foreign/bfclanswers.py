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
``""`` among an array's: ``[]`` passes too  ``[]`` among the options (``list_checker`` reads ``""`` as ``[]``)
string: case, spaces, ``,./-_*^`` and       ``{normalized: S}``
quote kind ignored (``standardize_string``)
list: element by element, strings           a list of element specs (same length)
normalised (``list_checker``)
dict: no key beyond the answer's, values    an object spec of per-key specs, each as above
one of theirs (``dict_checker``)
list of dicts (``list_dict_checker``)       a list of object specs
a dict (at any depth) whose only key is a    ``{exact: {...}}``, so it is never read as a matcher
matcher name (``{"type": ["video"]}``)      (runner.spec.matchers.is_matcher)
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

from runner.spec.matchers import is_matcher

OPTIONAL = ""  # BFCL's mark of an optional parameter among the acceptable values
# BFCL's type names -> the Python type its checker requires (ast_checker.PYTHON_TYPE_MAPPING)
PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list,
                                 "tuple": list, "dict": dict, "any": str}
_STRINGS = ("string", "any")
_ARRAYS = ("array", "tuple")


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
    options = [literal(value) if variable else value_spec(doc, value) for value in values if value != OPTIONAL]
    if OPTIONAL in values and kind in _STRINGS and not variable:
        options.append({"normalized": ""})  # "" is a string value too, which the model may send
    if OPTIONAL in values and kind in _ARRAYS and not variable and [] not in options:
        options.append([])  # list_checker and list_dict_checker read "" as a list of no items
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
    if kind in _ARRAYS and isinstance(value, list):
        if doc.get("items", {}).get("type") == "dict":
            return [dict_spec(item) if isinstance(item, dict) else literal(item) for item in value]
        return [_element_spec(item) for item in value]
    return literal(value)


def dict_spec(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The object spec of one acceptable dict, ``{key: [acceptable values]}`` (``dict_checker``): strings
    normalised, anything else compared as it is; a key whose values hold ``""`` may be absent. A spec
    of one key named like a matcher (``{type: ...}``) is written ``{exact: SPEC}``, which reads it as
    an object."""
    spec = {}
    for key, values in answer.items():
        values = values if isinstance(values, list) else [values]
        options = [_element_spec(v) for v in values if v != OPTIONAL]
        if OPTIONAL in values:
            options.append({"normalized": ""})
        spec[key] = _optional(options, OPTIONAL in values)
    return _object(spec)


def literal(value: Any) -> Any:
    """The spec that ``value`` (any JSON value) matches as it is: the value itself, but each object in it
    whose only key is a matcher name (``{"type": "video"}``) written ``{exact: {...}}``, at every depth."""
    if isinstance(value, dict):
        return _object({key: literal(item) for key, item in value.items()})
    if isinstance(value, list):
        return [literal(item) for item in value]
    return value


def _object(spec: dict[str, Any]) -> dict[str, Any]:
    """The object spec ``spec`` as one that is never read as a matcher: ``{exact: spec}`` where it would be."""
    return {"exact": spec} if is_matcher(spec) else spec


def _element_spec(value: Any) -> Any:
    return {"normalized": value} if isinstance(value, str) else literal(value)


def first_arguments(doc: Mapping[str, Any], answer: Mapping[str, list[Any]]) -> dict[str, Any]:
    """The first acceptable arguments of one expected call: each parameter's first value, a parameter
    whose first value is ``""`` left out unless the doc requires it (then its first other value; a
    string with no other, ``""``, and an array ``[]``, which BFCL's checks accept), a parameter the doc lacks left out
    (BFCL's checker rejects it as unexpected); ``doc`` is the function's ``parameters`` schema (BFCL types)."""
    properties, required = doc.get("properties", {}), doc.get("required", [])
    arguments = {}
    for param, values in answer.items():
        if param not in properties:
            continue
        kind = properties[param].get("type")
        given = [v for v in values if v != OPTIONAL] if param in required else values[:1]
        if given and given[0] != OPTIONAL:
            arguments[param] = _first(properties[param], given[0])
        elif param in required and OPTIONAL in values and kind in (*_STRINGS, *_ARRAYS):
            arguments[param] = OPTIONAL if kind in _STRINGS else []
    return arguments


def _first(doc: Mapping[str, Any], value: Any) -> Any:
    """``value`` as a call sends it: a dict answer (or a list of them) of ``{key: [values]}`` built from the first values."""
    kind = doc.get("type", "")
    if kind == "dict" and isinstance(value, dict):
        return _first_dict(value)
    if kind in _ARRAYS and doc.get("items", {}).get("type") == "dict" and isinstance(value, list):
        return [_first_dict(item) if isinstance(item, dict) else item for item in value]
    return value


def _first_dict(answer: Mapping[str, Any]) -> dict[str, Any]:
    return {key: values[0] for key, values in answer.items()
            if isinstance(values, list) and values and values[0] != OPTIONAL}
