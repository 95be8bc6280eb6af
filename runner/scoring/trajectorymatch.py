"""Trajectory match: one run's tool calls scored against the case's reference list of calls.

The reference is ``expect.trace.calls`` (names, and argument specs where given) or, without it,
``expect.trace.expected`` (names only). Only the calls that ran count (``Step.ran``: executed or
recovered), as for the trace checks; refused, invalid and truncated calls were attempts, not calls.

A reference call *matches* an actual call when the names are equal and, where the reference
gives ``args``, the call fits it as ``expect.trace.calls`` pairs them (runner.checks.callfit: the
arguments match ``args`` with that call's ``exact_args`` and ``strict_types``). With ``n``
actual calls, ``r`` reference calls and ``m`` the size of a maximum one-to-one matching (a
reference call pairs with at most one actual call):

- ``exact``: ``n == r`` and the i-th actual call matches the i-th reference call, for every i;
- ``in_order``: the reference calls match actual calls in their order, other calls allowed
  between and around (a subsequence);
- ``any_order``: every reference call matches a distinct actual call (``m == r``), in any order,
  other calls allowed;
- ``name_precision = m_name / n`` and ``name_recall = m_name / r``, where ``m_name`` pairs calls by
  name alone (the multiset intersection of the names);
- ``call_precision = m / n`` and ``call_recall = m / r``, pairing by name and arguments; None
  when no reference call gives ``args`` (they would equal the name-level figures).

A precision with no actual call is 1.0 when the reference is empty too, else 0.0; a recall with
an empty reference is 1.0 (nothing was missed).

Sources: Google Vertex AI's trajectory metrics (``trajectory_exact_match``,
``trajectory_in_order_match``, ``trajectory_any_order_match``, ``trajectory_precision``,
``trajectory_recall``: https://cloud.google.com/vertex-ai/generative-ai/docs/models/evaluation-agents)
and LangChain agentevals' trajectory match modes (strict, unordered, superset:
https://github.com/langchain-ai/agentevals), whose unordered and superset modes pair calls one to
one as here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runner.checks.callfit import fit_table
from runner.checks.matching import maximum_matching, ordered_matching
from runner.run.trajectory import Step
from runner.spec.case import Case

Pairs = Callable[[int, int], bool]  # (reference index, actual index) -> whether they match


@dataclass(frozen=True)
class TrajectoryMatch:
    """One run's calls against the reference (definitions in the module docstring); fractions in [0, 1]."""

    exact: bool
    in_order: bool
    any_order: bool
    name_precision: float
    name_recall: float
    call_precision: float | None
    call_recall: float | None


def run_trajectory_match(case: Case, steps: Sequence[Step]) -> TrajectoryMatch | None:
    """The trajectory match of a run of ``case`` that made ``steps``; None when the case gives no
    reference (neither ``expect.trace.calls`` nor ``expect.trace.expected``)."""
    trace = case.expect.trace
    ran = [step for step in steps if step.ran]
    names = [step.name for step in ran]
    if trace is not None and trace.calls is not None:
        reference = [call.name for call in trace.calls]
        if all(call.args is None for call in trace.calls):
            return trajectory_match(reference, names)
        table = fit_table(trace.calls, ran, trace, case)
        return trajectory_match(reference, names, lambda i, j: table[i][j] == [])
    if trace is None or trace.expected is None:
        return None
    return trajectory_match(trace.expected, names)


def trajectory_match(reference: Sequence[str], names: Sequence[str], pairs: Pairs | None = None) -> TrajectoryMatch:
    """Score the actual call ``names`` (counted calls only, in order) against the ``reference`` names.

    ``pairs(i, j)`` says whether reference call ``i`` matches actual call ``j`` by name and
    arguments; None when no reference call gives arguments (calls then match by name, and the
    ``call_*`` figures are None).
    """
    by_name: Pairs = lambda i, j: reference[i] == names[j]
    match = pairs or by_name
    r, n = len(reference), len(names)
    edges = [[j for j in range(n) if match(i, j)] for i in range(r)]
    paired = sum(mate is not None for mate in maximum_matching(edges, n))
    named = sum((Counter(reference) & Counter(names)).values())
    return TrajectoryMatch(
        exact=n == r and all(match(i, i) for i in range(r)),
        in_order=all(mate is not None for mate in ordered_matching(edges)),
        any_order=paired == r,
        name_precision=_ratio(named, n, r),
        name_recall=_ratio(named, r, r),
        call_precision=None if pairs is None else _ratio(paired, n, r),
        call_recall=None if pairs is None else _ratio(paired, r, r),
    )


def _ratio(part: int, whole: int, reference: int) -> float:
    """``part / whole``; of nothing, 1.0 when the reference is empty (nothing to find), else 0.0."""
    if whole:
        return part / whole
    return 1.0 if reference == 0 else 0.0
