"""Process checks on the tool-call trace (``expect.trace``).

Semantics follow replio eval's declarative verifier (exact, must_include,
avoid, max_calls, min_calls, args) plus ``order`` (names as a subsequence, gaps
allowed) and BFCL-style argument matchers for ``args`` (runner.spec.matchers).
``expected`` and ``minimal_calls`` feed metrics (runner.scoring), not pass/fail.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from runner.checks.base import CheckContext, CheckResult
from runner.run.agent import Step
from runner.spec.expect import TraceExpect
from runner.spec.matchers import arguments_mismatch, show
from runner.text import plural


def _result(key: str, passed: bool, message: str) -> CheckResult:
    return CheckResult(f"trace.{key}", passed, message)  # the registry stamps the category


def is_subsequence(wanted: Sequence[str], names: Sequence[str]) -> bool:
    """Whether ``wanted`` occurs in ``names`` in order, other names allowed between."""
    remaining = iter(names)
    return all(any(name == w for name in remaining) for w in wanted)


def check_trace(spec: TraceExpect, ctx: CheckContext) -> list[CheckResult]:
    steps = ctx.trajectory.steps
    names = [s.name for s in steps]
    shown = ", ".join(names) or "no calls"
    results: list[CheckResult] = []
    if spec.exact is not None:
        want, listed = list(spec.exact), ", ".join(spec.exact)
        exact = names == want
        results.append(_result("exact", exact, f"tool calls were exactly [{listed}]" if exact
                               else f"tool calls were [{shown}], expected exactly [{listed}]"))
    for tool in spec.must_include or ():
        count = names.count(tool)
        results.append(_result("must_include", count > 0, f"called {tool} {count} time(s)" if count
                               else f"never called {tool} (calls: {shown})"))
    for tool in spec.avoid or ():
        count = names.count(tool)
        results.append(_result("avoid", count == 0, f"avoided {tool} (0 of {len(names)} calls)" if count == 0
                               else f"called {tool} {count} time(s), which the case forbids"))
    if spec.max_calls is not None:
        within = len(names) <= spec.max_calls
        results.append(_result("max_calls", within, f"{plural(len(names), 'tool call')}, within the limit of {spec.max_calls}"
                               if within else f"{plural(len(names), 'tool call')}, at most {spec.max_calls} allowed"))
    if spec.min_calls is not None:
        enough = len(names) >= spec.min_calls
        results.append(_result("min_calls", enough, f"{plural(len(names), 'tool call')}, meeting the minimum of {spec.min_calls}"
                               if enough else f"{plural(len(names), 'tool call')}, at least {spec.min_calls} required"))
    if spec.order is not None:
        want = ", ".join(spec.order)
        ordered = is_subsequence(list(spec.order), names)
        results.append(_result("order", ordered, f"calls [{', '.join(names)}] contain [{want}] in that order"
                               if ordered else f"calls [{shown}] do not contain [{want}] in that order"))
    for tool, wanted in (spec.args or {}).items():
        results.append(_args_result(tool, wanted, steps, spec.exact_args))
    return results


def _args_result(tool: str, wanted: Mapping[str, Any], steps: Sequence[Step], exact: bool) -> CheckResult:
    """Passes when some call of ``tool`` matches ``wanted``; else lists every call of it with its first difference."""
    seen = [(number, step) for number, step in enumerate(steps, 1) if step.name == tool]
    reasons = []
    for number, step in seen:
        reason = arguments_mismatch(wanted, step.arguments, exact)
        if reason is None:
            return _result("args", True, f"call #{number} of {tool} matches {show(wanted)}")
        reasons.append(f"#{number} {show(step.arguments)} ({reason})")
    kind = "exactly " if exact else ""
    calls = "; ".join(reasons) if reasons else f"{tool} was never called"
    return _result("args", False, f"no {tool} call has arguments {kind}matching {show(wanted)}: {calls}")
