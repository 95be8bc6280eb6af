"""Process checks on the tool-call trace (``expect.trace``).

Semantics follow replio eval's declarative verifier (exact, must_include,
avoid, max_calls, min_calls, args) plus ``order`` (names as a subsequence, gaps
allowed), ``exact_unordered`` (the names as a multiset), BFCL-style argument matchers for
``args`` (runner.spec.matchers) and per-call expectations, ``calls`` (runner.checks.calls).
``expected`` and ``minimal_calls`` feed metrics (runner.scoring), not pass/fail.

The refused-call rule: a call whose tool did not run (``refused``: unknown tool, denied, arguments
invalid for its schema; ``invalid``: arguments that did not parse; ``truncated``) stays in the
record as attempted, but the checks that ask for calls (``exact``, ``exact_unordered``,
``must_include``, ``min_calls``, ``order``, ``args``, ``calls``) count only the calls that ran
(``Step.ran``), and say what they left out. The checks that forbid or bound (``avoid``,
``max_calls``) count every attempt: trying a forbidden tool, or one call too many, is the fault;
and ``min_attempts`` counts every attempt too, as BFCL's relevance check counts any call made.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from runner.checks.base import CheckContext, CheckResult
from runner.checks.callfit import call_mismatches, parameter_schemas
from runner.checks.calls import Numbered, check_calls
from runner.run.trajectory import Step
from runner.spec.expect import CallExpect, TraceExpect
from runner.spec.matchers import show
from runner.text import first_line, plural


def _result(key: str, passed: bool, message: str) -> CheckResult:
    return CheckResult(f"trace.{key}", passed, message)  # the registry stamps the category


def is_subsequence(wanted: Sequence[str], names: Sequence[str]) -> bool:
    """Whether ``wanted`` occurs in ``names`` in order, other names allowed between."""
    remaining = iter(names)
    return all(any(name == w for name in remaining) for w in wanted)


def not_run_note(steps: Sequence[Step], tool: str | None = None) -> str:
    """`` (not counted: 1 refused call of read_file: invalid arguments for read_file: ...)`` for the
    calls (of ``tool``, None: of any) that did not run, by status, each group with its first reason;
    ``""`` when every one ran."""
    groups: dict[str, list[Step]] = {}
    for step in steps:
        if not step.ran and (tool is None or step.name == tool):
            groups.setdefault(step.status, []).append(step)
    if not groups:
        return ""
    parts = []
    for status, calls in groups.items():
        of = "" if tool is not None else f" of {', '.join(dict.fromkeys(s.name for s in calls))}"
        noun = "call" if len(calls) == 1 else "calls"
        parts.append(f"{len(calls)} {status} {noun}{of}: {_why(calls[0])}")
    return f" ({'; '.join(parts)})" if tool is not None else f" (not counted: {'; '.join(parts)})"


_NOT_RUN = {"truncated": "cut off", "refused": "refused", "invalid": "unparsed"}  # how a status reads in _calls_made


def _calls_made(steps: Sequence[Step]) -> str:
    """Every call of the run, for a message: ``calls: read_file, bash`` (the names of those that ran), then how
    many did not run, by status: ``calls: read_file; 2 calls cut off``; ``2 calls cut off, none ran`` when none
    did; ``calls: no calls`` when the model made none."""
    names = ", ".join(step.name for step in steps if step.ran)
    statuses = Counter(step.status for step in steps if not step.ran)
    unrun = ", ".join(plural(n, "call") + f" {_NOT_RUN.get(status, status)}" for status, n in statuses.items())
    if not unrun:
        return f"calls: {names or 'no calls'}"
    return f"calls: {names}; {unrun}" if names else f"{unrun}, none ran"


def _why(step: Step) -> str:
    """Why a call did not run, from the error result the model got."""
    text = first_line(step.result, step.status).removeprefix("Error: ")
    return text if len(text) <= 120 else text[:117] + "..."


def check_trace(spec: TraceExpect, ctx: CheckContext) -> list[CheckResult]:
    steps = ctx.trajectory.steps
    ran: Numbered = [(number, step) for number, step in enumerate(steps, 1) if step.ran]
    names = [step.name for _, step in ran]
    attempted = [s.name for s in steps]
    shown = ", ".join(names) or "no calls"
    note = not_run_note(steps)
    results: list[CheckResult] = []
    if spec.exact is not None:
        want, listed = list(spec.exact), ", ".join(spec.exact)
        exact = names == want
        results.append(_result("exact", exact, f"tool calls were exactly [{listed}]" if exact
                               else f"tool calls were [{shown}], expected exactly [{listed}]{note}"))
    if spec.exact_unordered is not None:
        results.append(_unordered_result(list(spec.exact_unordered), names, note))
    for tool in spec.must_include or ():
        count = names.count(tool)
        results.append(_result("must_include", count > 0, f"called {tool} {count} time(s)" if count
                               else f"never called {tool}" + (not_run_note(steps, tool) or f" ({_calls_made(steps)})")))
    for tool in spec.avoid or ():
        count = attempted.count(tool)
        results.append(_result("avoid", count == 0, f"avoided {tool} (0 of {len(steps)} calls)" if count == 0
                               else f"called {tool} {count} time(s), which the case forbids"))
    if spec.max_calls is not None:
        within = len(steps) <= spec.max_calls
        results.append(_result("max_calls", within, f"{plural(len(steps), 'tool call')}, within the limit of {spec.max_calls}"
                               if within else f"{plural(len(steps), 'tool call')}, at most {spec.max_calls} allowed"))
    if spec.min_calls is not None:
        enough = len(names) >= spec.min_calls
        results.append(_result("min_calls", enough, f"{plural(len(names), 'tool call')}, meeting the minimum of {spec.min_calls}"
                               if enough else f"{plural(len(names), 'tool call')}, at least {spec.min_calls} required{note}"))
    if spec.min_attempts is not None:
        enough = len(steps) >= spec.min_attempts
        attempts = f"{plural(len(steps), 'tool call')} attempted"
        results.append(_result("min_attempts", enough, f"{attempts}, meeting the minimum of {spec.min_attempts}"
                               if enough else f"{attempts}, at least {spec.min_attempts} required"))
    if spec.order is not None:
        order = ", ".join(spec.order)
        ordered = is_subsequence(list(spec.order), names)
        results.append(_result("order", ordered, f"calls [{', '.join(names)}] contain [{order}] in that order"
                               if ordered else f"calls [{shown}] do not contain [{order}] in that order{note}"))
    schemas = parameter_schemas(ctx.case) if spec.strict_types and spec.args else {}
    for tool, wanted in (spec.args or {}).items():
        results.append(_args_result(tool, wanted, ran, spec, schemas, not_run_note(steps, tool)))
    if spec.calls is not None:
        results.append(check_calls(spec, ran, ctx.case, note))
    return results


def _unordered_result(want: list[str], names: list[str], note: str) -> CheckResult:
    """``exact_unordered``: the names form exactly this multiset; a failure says what is missing and what is extra."""
    listed, shown = ", ".join(want), ", ".join(names) or "no calls"
    missing, extra = Counter(want) - Counter(names), Counter(names) - Counter(want)
    if not missing and not extra:
        return _result("exact_unordered", True, f"tool calls [{shown}] are [{listed}] in some order")
    diff = [f"missing {n} {tool}" for tool, n in missing.items()] + [f"{n} extra {tool}" for tool, n in extra.items()]
    return _result("exact_unordered", False,
                   f"tool calls were [{shown}], expected [{listed}] in any order ({', '.join(diff)}){note}")


def _args_result(tool: str, wanted: Mapping[str, Any], ran: Numbered, spec: TraceExpect,
                 schemas: Mapping[str, Any], note: str) -> CheckResult:
    """Passes when some call of ``tool`` that ran fits ``{name: tool, args: wanted}`` with the trace's
    ``exact_args`` and ``strict_types`` (runner.checks.callfit; ``schemas`` the tools' parameters);
    else lists every such call with its first difference, and the calls of it that did not run."""
    expected = CallExpect(tool, wanted)
    reasons = []
    for number, step in ran:
        found = call_mismatches(expected, step, spec, schemas)
        if found is None:  # another tool
            continue
        if not found:
            return _result("args", True, f"call #{number} of {tool} matches {show(wanted)}")
        reasons.append(f"#{number} {show(step.arguments)} ({found[0]})")
    kind = "exactly " if spec.exact_args else ""
    calls = "; ".join(reasons) if reasons else f"{tool} was never called"
    return _result("args", False, f"no {tool} call has arguments {kind}matching {show(wanted)}: {calls}{note}")
