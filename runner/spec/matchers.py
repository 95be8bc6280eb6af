"""Argument matching for ``expect.trace.args`` and mock ``when``, after BFCL's checker.

A spec names parameters and, for each, what the call's value must be:

- a plain JSON value: equal, where an int equals an equal float (``2 == 2.0``)
  but a boolean equals only a boolean; objects compare recursively, key by key,
  and lists element by element (same length);
- ``{any_of: [v1, v2, ...]}``: the value matches one of them (each may be a matcher);
- ``{matches: REGEX}``: the value is a string the regex finds a match in
  (Python syntax plus Ruby's ``\\A`` and ``\\z``; anchor it to match the whole);
  a search longer than ``runner.patterns.PATTERN_TIMEOUT`` is a mismatch saying so;
- ``{contains: STR}``: the value is a string containing STR, or a list with an element equal to it;
- ``{absent: true}``: the parameter is not in the call at all;
- ``{present: true}``: the parameter is in the call, with any value.

A mapping is a matcher when its only key is one of those names; any other mapping
is a nested object spec. Matching is partial by default: parameters the spec does
not name may have any value, at every depth. With ``exact`` a call may have no
parameter the spec does not name, at every depth. A parameter the spec names
with a value (not ``absent``) must be present: "missing" is a mismatch.

Source: the Berkeley Function-Calling Leaderboard AST checker
(https://github.com/ShishirPatil/gorilla/tree/main/berkeley-function-call-leaderboard),
which accepts a set of values per parameter and treats int/float alike.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from runner.patterns import pattern_found, too_slow

MATCHERS = ("any_of", "matches", "contains", "absent", "present")


def is_matcher(spec: Any) -> bool:
    """Whether ``spec`` is a matcher object (a mapping whose only key is a matcher name)."""
    return isinstance(spec, Mapping) and len(spec) == 1 and next(iter(spec)) in MATCHERS


def show(value: Any, limit: int = 80) -> str:
    """``value`` as compact JSON for messages, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def arguments_mismatch(spec: Mapping[str, Any], arguments: Mapping[str, Any] | None, exact: bool = False) -> str | None:
    """Why the call ``arguments`` (None: none given) fail ``spec``, or None when they match.

    The reason names the first parameter that differs: ``path: expected "a.txt",
    got "b.txt"``, ``limit: missing``, ``offset: expected absent, got 3``, or
    ``unexpected parameter glob`` (``exact`` only).
    """
    return _object_mismatch(spec, arguments or {}, exact, "")


def _object_mismatch(spec: Mapping[str, Any], actual: Mapping[str, Any], exact: bool, where: str) -> str | None:
    for key, wanted in spec.items():
        at = f"{where}.{key}" if where else str(key)
        absent = is_matcher(wanted) and "absent" in wanted
        if key not in actual:
            if not absent:
                return f"{at}: missing"
            continue
        if absent:
            return f"{at}: expected absent, got {show(actual[key])}"
        reason = value_mismatch(wanted, actual[key], exact, at)
        if reason:
            return reason
    if exact:
        extra = [key for key in actual if key not in spec]
        if extra:
            return f"unexpected parameter {where + '.' if where else ''}{extra[0]}"
    return None


def value_mismatch(spec: Any, actual: Any, exact: bool = False, where: str = "value") -> str | None:
    """Why ``actual`` (one present value) fails ``spec`` (a value or matcher), or None when it matches."""
    if is_matcher(spec):
        return _matcher_mismatch(spec, actual, exact, where)
    if isinstance(spec, Mapping):
        if not isinstance(actual, Mapping):
            return f"{where}: expected an object, got {show(actual)}"
        return _object_mismatch(spec, actual, exact, where)
    if isinstance(spec, list):
        if not isinstance(actual, list) or len(actual) != len(spec):
            return f"{where}: expected {show(spec)}, got {show(actual)}"
        for index, (item, got) in enumerate(zip(spec, actual)):
            reason = value_mismatch(item, got, exact, f"{where}[{index}]")
            if reason:
                return reason
        return None
    return None if scalars_equal(spec, actual) else f"{where}: expected {show(spec)}, got {show(actual)}"


def scalars_equal(expected: Any, actual: Any) -> bool:
    """Equality where an int equals an equal float and a boolean equals only a boolean."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    return type(expected) is type(actual) and expected == actual


def _matcher_mismatch(spec: Mapping[str, Any], actual: Any, exact: bool, where: str) -> str | None:
    name, operand = next(iter(spec.items()))
    if name == "present":
        return None
    if name == "absent":
        return f"{where}: expected absent, got {show(actual)}"
    if name == "any_of":
        if any(value_mismatch(option, actual, exact, where) is None for option in operand):
            return None
        return f"{where}: expected one of {show(operand)}, got {show(actual)}"
    if name == "matches":
        try:
            if isinstance(actual, str) and pattern_found(operand, actual):
                return None
        except TimeoutError:
            return f"{where}: {too_slow(operand)}"
        return f"{where}: {show(actual)} does not match /{operand}/"
    if isinstance(actual, str) and isinstance(operand, str) and operand in actual:
        return None
    if isinstance(actual, list) and any(value_mismatch(operand, item, exact) is None for item in actual):
        return None
    return f"{where}: {show(actual)} does not contain {show(operand)}"
