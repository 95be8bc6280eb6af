"""Metrics of one run: accuracy, redundant calls, errors, outcome and process scores, failure cause.

Everything here is a pure function of the Case and its finished RunRecord; the
engine calls ``fill_metrics`` once per run, whatever its status. A run ended by an error not of
the agent's making (runner.scoring.gates.is_infrastructure_error: provider or judge failed, setup,
the case's data, tooltrial's own bug) is not scored: its accuracy, outcome and process are None,
whatever checks did run, so no mean or pass rate counts it. The split of
a run's quality into an *outcome* score and a *process* score, the efficiency
ratio, and the first-match failure taxonomy follow ToolEval (an agent-agnostic
tool-use harness: "outcome vs process, variance, failure cause"); the trace
metrics (accuracy, redundant, errors) follow replio eval.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from runner.checks.base import OUTCOME, CheckResult
from runner.checks.table import KINDS, Points
from runner.kinds import ErrorKind, FailureCause, Status
from runner.run.agent import Step
from runner.run.record import ERROR, PASS, RunRecord
from runner.scoring.gates import is_infrastructure_error
from runner.spec.case import Case
from runner.spec.expect import TraceExpect
from runner.spec.offered import offered_tools

FAILURE_CAUSES = tuple(FailureCause)  # in first-match order
_TURN_PREFIX = re.compile(r"^turns\[\d+\]\.")


@dataclass(frozen=True)
class Metrics:
    """The scores of one run; see each function below for its definition."""

    accuracy: int | None
    redundant: int
    errors: int
    outcome: float | None
    process: float | None
    failure: FailureCause | None


def fill_metrics(case: Case, record: RunRecord) -> None:
    """Set ``record``'s accuracy, redundant, errors, outcome, process and failure from ``score``."""
    for name, value in vars(score(case, record)).items():
        setattr(record, name, value)


def score(case: Case, record: RunRecord) -> Metrics:
    """Every metric of ``record``, a finished run of ``case``; accuracy, outcome and process are None
    for a run ended by an error not of the agent's making (``is_infrastructure_error``)."""
    trace = case.expect.trace or TraceExpect()
    names = record.names
    offered = frozenset(offered_tools(case.tools, (mock["name"] for mock in case.mocks)))
    scored = not is_infrastructure_error(record)
    return Metrics(
        accuracy=accuracy(names, trace.expected) if scored else None,
        redundant=redundant(record.steps),
        errors=error_count(record.steps, record.status),
        outcome=outcome_score(record.checks) if scored else None,
        process=(process_score(trace, names, offered, turn_traces(case, record.steps))
                 if scored and record.requests else None),
        failure=failure_cause(case, record),
    )


def accuracy(names: Sequence[str], expected: Sequence[str] | None) -> int | None:
    """1 when the called tool names equal ``expected`` exactly (order and count), 0 otherwise,
    None when the case gives no ``expect.trace.expected``. Not a pass condition (replio eval)."""
    return None if expected is None else int(list(names) == list(expected))


def canonical(arguments: Mapping[str, Any] | None) -> str:
    """Arguments as canonical JSON (sorted keys, no spaces); ``null`` for unparseable ones."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def redundant(steps: Sequence[Step]) -> int:
    """How many calls repeat an earlier call exactly: same name and same canonical JSON arguments.

    Three identical ``read_file {"path": "a"}`` calls count 2; a call with other arguments counts 0.
    """
    seen: set[tuple[str, str]] = set()
    count = 0
    for step in steps:
        key = (step.name, canonical(step.arguments))
        count += key in seen
        seen.add(key)
    return count


def error_count(steps: Sequence[Step], status: Status) -> int:
    """Loop errors plus error results: one per tool result that is an error (unknown or denied
    tool, arguments refused by the schema, a tool's failure, a mock's ``error``), plus one when
    the run itself ended in an error (setup, turn limit, provider, timeout...)."""
    return sum(step.is_error for step in steps) + int(status == ERROR)


def outcome_score(checks: Sequence[CheckResult]) -> float | None:
    """The fraction of outcome checks (verify, files, response_*) that passed; None without any
    (no outcome check in the case, or the run ended before checks ran)."""
    outcome = [c.passed for c in checks if c.category == OUTCOME]
    return sum(outcome) / len(outcome) if outcome else None


def turn_traces(case: Case, steps: Sequence[Step]) -> list[tuple[TraceExpect, list[str]]]:
    """Per turn whose ``expect`` has a ``trace``, in turn order: ``(that trace, the tool names called
    during that turn)``, the calls attributed by ``Step.turn`` as the per-turn checks see them
    (runner.checks.turns); a turn the run never reached has no calls."""
    return [
        (expect.trace, [step.name for step in steps if step.turn == index])
        for index, expect in enumerate(case.turn_expect)
        if expect.trace is not None
    ]


def process_score(
    trace: TraceExpect,
    names: Sequence[str],
    offered: frozenset[str],
    turns: Sequence[tuple[TraceExpect, Sequence[str]]] = (),
) -> float | None:
    """The mean of every process component the case defines (ToolEval's process score), in [0, 1].

    The components come from the case's ``expect.trace`` (``trace``) evaluated on every tool call of
    the run (``names``), and from each per-turn ``expect.trace`` in ``turns`` (``(turn trace, names
    called during that turn)``, see ``turn_traces``) evaluated on that turn's calls only. All are
    pooled, each weighing the same: ``process = sum(components) / len(components)``.

    Each trace gives these components, each only when the trace defines it:

    - required: the fraction of ``must_include`` tools called at least once;
    - forbidden: the fraction of ``avoid`` tools *that were offered* which were never called
      (an avoided tool the model could not call is neither credit nor blame; none offered: no component);
    - efficiency: ``min(1, minimal_calls / calls)``, 0 when there were no calls.

    None when no trace defines any component (or, in ``score``, when the model never answered).

    Source: ToolEval's process score (required, forbidden, efficiency over one run's calls);
    tooltrial adds the per-turn traces' components to the same mean, each on its own turn's calls.
    """
    parts = _process_components(trace, names, offered)
    for turn_trace, turn_names in turns:
        parts += _process_components(turn_trace, turn_names, offered)
    return sum(parts) / len(parts) if parts else None


def _process_components(trace: TraceExpect, names: Sequence[str], offered: frozenset[str]) -> list[float]:
    """The required, forbidden and efficiency components ``trace`` defines, evaluated on ``names``."""
    parts: list[float] = []
    required = list(trace.must_include or ())
    if required:
        parts.append(sum(tool in names for tool in required) / len(required))
    forbidden = [tool for tool in trace.avoid or () if tool in offered]
    if forbidden:
        parts.append(sum(tool not in names for tool in forbidden) / len(forbidden))
    if trace.minimal_calls is not None:
        parts.append(min(1.0, trace.minimal_calls / len(names)) if names else 0.0)
    return parts


_ERROR_CAUSES = {ErrorKind.TURN_LIMIT: FailureCause.TURN_LIMIT, ErrorKind.TRUNCATED: FailureCause.TRUNCATED,
                 ErrorKind.MALFORMED_CALL: FailureCause.MALFORMED_CALL}


def failure_cause(case: Case, record: RunRecord) -> FailureCause | None:
    """The one failure cause of a non-passing run, None for a pass: the first of these that holds.

    1. ``run_error``: the run ended in an error other than those of 2 (setup command,
       provider failure, empty replies, script exhausted, timeout, template or internal error).
    2. ``turn_limit``: the model made more requests than ``expect.max_turns``; ``truncated``: its
       replies were cut off at the output limit twice in a row; ``malformed_call``: the provider
       kept rejecting its calls as malformed (the run's error kind of the same name, each).
    3. ``calls_as_text``: no tool call at all, but some reply wrote calls of offered tools as text
       in its content (``<tool_call>...</tool_call>`` and the like; runner.providers.textcalls), never
       run; else ``no_tools``: no tool call at all, where the case's trace wants some (``expected``,
       ``exact``, ``must_include``, ``order`` or ``args`` given, or ``min_calls`` / ``minimal_calls`` >= 1);
       ToolEval's do-nothing signature.
    Causes 4 to 9 are those the failed results point to (runner.checks.table ``causes``), the first
    in this order:

    4. ``called_forbidden``: a failed ``trace.avoid`` check, or a call to a tool in ``deny``.
    5. ``wrong_tool``: the calls were not the needed ones: a failed ``trace.must_include``,
       ``trace.exact``, ``trace.exact_unordered``, ``trace.order`` or ``trace.min_calls`` check.
    6. ``missing_output``: what the case checks was never produced: a file that must exist
       does not (``files.exists``), or the final reply is empty and a ``response_contains``
       or ``response_matches`` check failed.
    7. ``wrong_args``: the right tools, wrong arguments: a failed ``trace.args`` or ``trace.calls`` check.
    8. ``excessive_calls``: a failed ``trace.max_calls`` check.
    9. ``over_budget``: the run used more tokens or USD than ``expect.max_tokens`` / ``max_cost``.
    10. ``good_process_bad_outcome``: every process check passed, some outcome check failed.
    11. ``unknown``: none of the above (e.g. a failed check of a kind this list does not know).

    Source: ToolEval's mutually exclusive, first-match taxonomy (run_error, no_tools,
    called_forbidden, wrong_tool, missing_output, wrong_args, excessive_calls,
    good_process_bad_outcome, unknown); tooltrial adds ``turn_limit`` and ``over_budget`` and ties each
    cause to the checks above, so the same run always gets the same cause.
    """
    if record.status == PASS:
        return None
    if record.status == ERROR:
        cause = _ERROR_CAUSES.get(record.error_kind) if record.error_kind is not None else None
        return cause or FailureCause.RUN_ERROR
    failed = {_TURN_PREFIX.sub("", c.check) for c in record.failed_checks}  # a per-turn check counts as its kind
    if not record.steps and any(r.text_calls for r in record.model_requests):
        return FailureCause.CALLS_AS_TEXT
    if not record.steps and case.expect.trace is not None and case.expect.trace.wants_calls:
        return FailureCause.NO_TOOLS
    empty = not record.final_reply.strip()
    points = _points()
    pointed = {p.cause for name in failed if (p := points.get(name)) is not None and (empty or not p.empty_reply)}
    if set(case.deny) & set(record.names):
        pointed.add(FailureCause.CALLED_FORBIDDEN)
    first = next((cause for cause in FailureCause if cause in pointed), None)  # the enum is in first-match order
    if first is not None:
        return first
    if {c.category for c in record.failed_checks} == {OUTCOME}:
        return FailureCause.GOOD_PROCESS_BAD_OUTCOME
    return FailureCause.UNKNOWN


def _points() -> dict[str, Points]:
    """Result name -> the failure cause a failed result of that name points to (the check table's ``causes``)."""
    return {name: points for kind in KINDS.values() for name, points in kind.causes.items()}
