"""Argument matching for ``expect.trace.args``, ``expect.trace.calls`` and mock ``when``, after BFCL's checker.

A spec names parameters and, for each, what the call's value must be:

- a plain JSON value: equal, where an int equals an equal float (``2 == 2.0``)
  but a boolean equals only a boolean; objects compare recursively, key by key,
  and lists element by element (same length);
- ``{any_of: [m1, m2, ...]}``: the value matches one of them (each may be a matcher);
- ``{all_of: [m1, m2, ...]}``: the value matches every one of them;
- ``{matches: REGEX}``: the value is a string the regex finds a match in
  (Python syntax plus Ruby's ``\\A`` and ``\\z``; anchor it to match the whole);
  a search longer than ``runner.patterns.PATTERN_TIMEOUT`` is a mismatch saying so;
- ``{contains: STR}``: the value is a string containing STR, or a list with an element equal to it;
- ``{normalized: STR}``: the value is a string equal to STR once both are normalised as BFCL
  does (``normalize``: lower case, spaces and ``, . / - _ * ^`` removed, ``'`` read as ``"``);
- ``{type: T}`` or ``{type: [T, ...]}``: the value is of that JSON Schema type (runner.spec.jsontypes:
  ``integer`` rejects ``5.0``, ``number`` accepts ``5``, a boolean is neither);
- ``{optional: M}``: the parameter is not in the call, or its value matches M;
- ``{exact: SPEC}``: an object matching the object spec SPEC with no key SPEC does not name,
  at every depth below;
- ``{absent: true}``: the parameter is not in the call at all;
- ``{present: true}``: the parameter is in the call, with any value.

A mapping is a matcher when its only key is one of those names; any other mapping
is a nested object spec. Matching is partial by default: parameters the spec does
not name may have any value, at every depth. With ``exact`` a call may have no
parameter the spec does not name, at every depth. A parameter the spec names
must be present unless its spec accepts absence: ``absent`` and ``optional`` do,
an ``any_of`` does when one of its options does, an ``all_of`` when all of them do,
at every depth; else "missing" is a mismatch.

Source: the Berkeley Function-Calling Leaderboard AST checker
(https://github.com/ShishirPatil/gorilla/tree/main/berkeley-function-call-leaderboard,
``bfcl_eval/eval_checker/ast_eval/ast_checker.py``), which accepts a list of values per
parameter, ``""`` among them marking it optional, treats an int as a float, compares strings
after ``standardize_string`` and allows no parameter its answer does not name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from runner.patterns import pattern_found, too_slow
from runner.spec.jsontypes import type_mismatch

MATCHERS = ("any_of", "all_of", "matches", "contains", "normalized", "type", "optional", "exact", "absent", "present")
_NOISE = re.compile(r"[ ,./\-_*^]")  # BFCL's standardize_string removes these


def is_matcher(spec: Any) -> bool:
    """Whether ``spec`` is a matcher object (a mapping whose only key is a matcher name)."""
    return isinstance(spec, Mapping) and len(spec) == 1 and next(iter(spec)) in MATCHERS


def show(value: Any, limit: int = 80) -> str:
    """``value`` as compact JSON for messages, cut to ``limit`` characters."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def normalize(text: str) -> str:
    """``text`` as BFCL compares strings: spaces and ``, . / - _ * ^`` removed, lower case, ``'`` as ``"``
    (``"San Francisco, CA"`` -> ``"sanfranciscoca"``). Source: BFCL's ``standardize_string``."""
    return _NOISE.sub("", text).lower().replace("'", '"')


def arguments_mismatch(spec: Mapping[str, Any], arguments: Mapping[str, Any] | None, exact: bool = False) -> str | None:
    """Why the call ``arguments`` (None: none given) fail ``spec``, or None when they match.

    The reason names the first parameter that differs: ``path: expected "a.txt",
    got "b.txt"``, ``limit: missing``, ``offset: expected absent, got 3``, or
    ``unexpected parameter glob`` (``exact`` only).
    """
    reasons = arguments_mismatches(spec, arguments, exact)
    return reasons[0] if reasons else None


def arguments_mismatches(spec: Mapping[str, Any], arguments: Mapping[str, Any] | None, exact: bool = False) -> list[str]:
    """Every reason the call ``arguments`` fail ``spec``, one per parameter that differs (its first
    difference) and one per unexpected parameter, in spec order then call order; [] when they match."""
    return _object_mismatches(spec, arguments or {}, exact, "")


def accepts_absence(spec: Any) -> bool:
    """Whether a parameter with this spec may be left out of the call: ``absent``, ``optional``, an
    ``any_of`` with an option that may, an ``all_of`` whose options all may."""
    if not is_matcher(spec):
        return False
    name, operand = next(iter(spec.items()))
    if name in ("absent", "optional"):
        return True
    if name == "any_of":
        return any(accepts_absence(option) for option in operand)
    return name == "all_of" and all(accepts_absence(option) for option in operand)


def _object_mismatches(spec: Mapping[str, Any], actual: Mapping[str, Any], exact: bool, where: str) -> list[str]:
    reasons = []
    for key, wanted in spec.items():
        at = f"{where}.{key}" if where else str(key)
        if key not in actual:
            if not accepts_absence(wanted):
                reasons.append(f"{at}: missing")
            continue
        reason = value_mismatch(wanted, actual[key], exact, at)
        if reason:
            reasons.append(reason)
    if exact:
        reasons += [f"unexpected parameter {where + '.' if where else ''}{key}" for key in actual if key not in spec]
    return reasons


def value_mismatch(spec: Any, actual: Any, exact: bool = False, where: str = "value") -> str | None:
    """Why ``actual`` (one present value) fails ``spec`` (a value or matcher), or None when it matches."""
    if is_matcher(spec):
        return _matcher_mismatch(spec, actual, exact, where)
    if isinstance(spec, Mapping):
        if not isinstance(actual, Mapping):
            return f"{where}: expected an object, got {show(actual)}"
        reasons = _object_mismatches(spec, actual, exact, where)
        return reasons[0] if reasons else None
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
    if name == "optional":
        return value_mismatch(operand, actual, exact, where)
    if name == "exact":
        return _exact_object(operand, actual, where)
    if name == "type":
        return type_mismatch(operand, actual, where)
    if name == "any_of":
        if any(value_mismatch(option, actual, exact, where) is None for option in operand):
            return None
        return f"{where}: expected one of {show(operand)}, got {show(actual)}"
    if name == "all_of":
        return next((r for option in operand if (r := value_mismatch(option, actual, exact, where))), None)
    if name == "normalized":
        if isinstance(actual, str) and normalize(actual) == normalize(operand):
            return None
        return f"{where}: expected {show(operand)} (normalized), got {show(actual)}"
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


def _exact_object(operand: Mapping[str, Any], actual: Any, where: str) -> str | None:
    """``{exact: SPEC}``: SPEC is always an object spec, even a one-key mapping named like a matcher
    (``{exact: {type: file}}`` is the object ``{"type": "file"}`` and nothing more)."""
    if not isinstance(actual, Mapping):
        return f"{where}: expected an object, got {show(actual)}"
    reasons = _object_mismatches(operand, actual, True, where)
    return reasons[0] if reasons else None
