"""``expect.trace.calls``: per-call expectations, each paired with a call of its own.

An expected call ``{name, args?, exact_args?, strict_types?}`` may be paired with a call that ran
(runner.checks.trace ``ran``) that fits it (runner.checks.callfit: of that tool, its arguments
matching ``args``, exactly with ``exact_args``, its values of the tool's parameter types with
``strict_types``). The pairs are a maximum bipartite matching
(runner.checks.matching), so two expected calls of one tool need two calls, whatever their order;
with ``calls_ordered`` the partners must come in the expectations' order; with ``extra_calls:
false`` every call that ran must be a partner. One result, ``trace.calls``, passes when all of it holds.

Source: BFCL's parallel checker (``parallel_function_checker_no_order``) pairs each possible
answer with a distinct model call; it takes the first fitting call, greedily, where a maximum
matching never fails an assignment that exists.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.checks.base import CheckResult
from runner.checks.callfit import Mismatches, fit_table
from runner.checks.matching import maximum_matching, ordered_matching
from runner.run.trajectory import Step
from runner.spec.case import Case
from runner.spec.expect import CallExpect, TraceExpect
from runner.spec.matchers import show

Numbered = Sequence[tuple[int, Step]]  # (1-based place in the whole trace, a call that ran)


def check_calls(spec: TraceExpect, ran: Numbered, case: Case, not_run: str) -> CheckResult:
    """The ``trace.calls`` result of ``spec.calls`` against the calls that ran, numbered by their place
    in the trace; ``not_run`` is the note on the calls that did not run (``""`` when none)."""
    expected = spec.calls or ()
    reasons = fit_table(expected, [step for _, step in ran], spec, case)
    edges = [[j for j, found in enumerate(row) if found == []] for row in reasons]
    partner = ordered_matching(edges) if spec.calls_ordered else maximum_matching(edges, len(ran))
    unpaired = [_unpaired(i, expected, ran, reasons, partner) for i, mate in enumerate(partner) if mate is None]
    problems = [message for message, _ in unpaired]
    if not spec.extra_calls:  # an extra call already named as the nearest to an expected one is not named twice
        named = set(partner) | {nearest for _, nearest in unpaired}
        problems += [f"call #{number} {step.name} {show(step.arguments)} is no expected call (extra_calls: false)"
                     for j, (number, step) in enumerate(ran) if j not in named]
    if problems:
        return CheckResult("trace.calls", False, "; ".join(problems) + not_run)
    if not expected:
        return CheckResult("trace.calls", True, "0 calls expected" + (" and 0 made" if not spec.extra_calls else ""))
    pairs = ", ".join(f"#{i} {call.name} = call #{ran[mate][0]}"
                      for i, (call, mate) in enumerate(zip(expected, partner), 1) if mate is not None)
    order = " in order" if spec.calls_ordered else ""
    return CheckResult("trace.calls", True, f"{len(expected)} expected call(s) paired one to one{order}: {pairs}")


def _unpaired(index: int, expected: Sequence[CallExpect], ran: Numbered, reasons: list[list[Mismatches]],
              partner: Sequence[int | None]) -> tuple[str, int | None]:
    """``expected call #2 quadratic_roots {...} found no partner: nearest call #3 {...} (a: expected 5, got 3)``,
    and the index in ``ran`` of that nearest call (None: the tool was never called): the call of that tool
    with the fewest differences; on a tie, one no other expected call is paired with, then the first."""
    call = expected[index]
    wanted = show(call.args, 160) if call.args is not None else "(any arguments)"
    head = f"expected call #{index + 1} {call.name} {wanted} found no partner"
    taken = set(partner)
    candidates = [(len(found), j in taken, j) for j, found in enumerate(reasons[index]) if found is not None]
    if not candidates:
        return f"{head}: {call.name} was never called", None
    *_, nearest = min(candidates)
    number, step = ran[nearest]
    found = reasons[index][nearest] or []
    if found:
        why = f"{found[0]}" + (f", and {len(found) - 1} more difference(s)" if len(found) > 1 else "")
        return f"{head}: nearest call #{number} {show(step.arguments)} ({why})", nearest
    rival = next((i for i, mate in enumerate(partner) if mate == nearest), None)
    if rival is not None:
        return f"{head}: call #{number} {show(step.arguments)} fits but is the partner of expected call #{rival + 1}", nearest
    # a free call that fits is always taken by a maximum matching: only an ordered one leaves it
    return f"{head}: call #{number} {show(step.arguments)} fits but comes before the partner of an earlier one", nearest

