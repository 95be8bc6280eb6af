"""Process checks on the tool-call trace (``expect.trace``).

Semantics follow replio eval's declarative verifier (exact, must_include,
avoid, max_calls, min_calls, args) plus ``order`` (names as a subsequence).
``expected`` and ``minimal_calls`` feed metrics, not pass/fail.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from runner.checks.base import PROCESS, CheckContext, CheckResult


def _result(key: str, passed: bool, message: str) -> CheckResult:
    return CheckResult(f"trace.{key}", passed, message, PROCESS)


def _is_subsequence(wanted: Sequence[str], names: Sequence[str]) -> bool:
    remaining = iter(names)
    return all(any(name == w for name in remaining) for w in wanted)


def values_equal(expected: Any, actual: Any) -> bool:
    """Equality where an int matches an equal float and objects compare recursively."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual if isinstance(expected, bool) and isinstance(actual, bool) else False
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return float(expected) == float(actual)
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return expected.keys() == actual.keys() and all(values_equal(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
        return len(expected) == len(actual) and all(values_equal(e, a) for e, a in zip(expected, actual))
    return expected == actual


def _args_match(wanted: Mapping[str, Any], arguments: Mapping[str, Any] | None) -> bool:
    args = arguments or {}
    return all(param in args and values_equal(value, args[param]) for param, value in wanted.items())


def check_trace(spec: Mapping[str, Any], ctx: CheckContext) -> list[CheckResult]:
    names = [s.name for s in ctx.trajectory.steps]
    shown = ", ".join(names) or "no calls"
    results: list[CheckResult] = []
    if "exact" in spec:
        want = list(spec["exact"])
        results.append(_result("exact", names == want, f"tool calls were [{shown}], expected exactly [{', '.join(want)}]"))
    for tool in spec.get("must_include", []):
        results.append(_result("must_include", tool in names, f"never called {tool} (calls: {shown})"))
    for tool in spec.get("avoid", []):
        count = names.count(tool)
        results.append(_result("avoid", count == 0, f"called {tool} {count} time(s), which the case forbids"))
    if "max_calls" in spec:
        results.append(_result("max_calls", len(names) <= spec["max_calls"],
                               f"{len(names)} tool calls, at most {spec['max_calls']} allowed"))
    if "min_calls" in spec:
        results.append(_result("min_calls", len(names) >= spec["min_calls"],
                               f"{len(names)} tool calls, at least {spec['min_calls']} required"))
    if "order" in spec:
        want = list(spec["order"])
        results.append(_result("order", _is_subsequence(want, names),
                               f"calls [{shown}] do not contain [{', '.join(want)}] in that order"))
    for tool, wanted in spec.get("args", {}).items():
        seen = [s.arguments for s in ctx.trajectory.steps if s.name == tool]
        ok = any(_args_match(wanted, a) for a in seen)
        results.append(_result("args", ok, f"no {tool} call with {wanted} (saw {seen or 'no calls'})"))
    return results
