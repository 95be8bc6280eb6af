"""Metrics of one run: accuracy, redundant calls, errors, outcome and process scores, failure cause.

Everything here is a pure function of the Case and its finished RunRecord; the engine calls ``fill_metrics``
once per run, whatever its status. A run ended by an error not of the agent's making
(runner.scoring.gates.is_infrastructure_error: provider or judge failed, setup, the case's data, tooltrial's own
bug) is not scored: its accuracy, outcome and process are None, whatever checks did run, so no mean or pass rate
counts it. The split of a run's quality into an *outcome* score and a *process* score, the efficiency ratio, and
the first-match failure taxonomy follow ToolEval (an agent-agnostic tool-use harness: "outcome vs process,
variance, failure cause"); the trace metrics (accuracy, redundant, errors) follow replio eval.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.checks.base import OUTCOME, PROCESS, CheckResult
from runner.checks.table import KINDS, Points
from runner.kinds import ErrorKind, FailureCause, Status
from runner.run.record import ERROR, PASS, RunRecord
from runner.run.trajectory import Step
from runner.scoring.gates import infrastructure_error
from runner.scoring.robustness import fill_faults
from runner.scoring.trajectorymatch import TrajectoryMatch, run_trajectory_match
from runner.spec.case import Case
from runner.spec.expect import TraceExpect
from runner.spec.offered import offered_tools, offers
from runner.tools.registry import READ_ONLY_TOOLS

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
    trajectory_match: TrajectoryMatch | None


def fill_metrics(case: Case, record: RunRecord) -> None:
    """Set ``record``'s accuracy, redundant, errors, outcome, process, failure and trajectory_match from ``score``,
    then its fault counts and ``fault_not_handled`` (runner.scoring.robustness.fill_faults)."""
    for name, value in vars(score(case, record)).items():
        setattr(record, name, value)
    fill_faults(record)


def score(case: Case, record: RunRecord) -> Metrics:
    """Every metric of ``record``, a finished run of ``case``; accuracy, outcome, process and
    trajectory_match are None for a run ended by an error not of the agent's making (``is_infrastructure_error``)."""
    trace = case.expect.trace or TraceExpect()
    ran = [step.name for step in record.steps if step.ran]  # refused, unparsed, truncated calls were only attempted
    mocks, servers = (mock["name"] for mock in case.mocks), (server["name"] for server in case.mcp)
    offered = frozenset(offered_tools(case.tools, mocks, servers))
    if record.agent is not None:  # an external agent's tools are those it offered its model (runner.run.external)
        offered = frozenset(record.agent.get("tools", ()))
    scored = not infrastructure_error(record.status, record.error_kind)
    return Metrics(
        accuracy=accuracy(ran, trace.expected) if scored else None,
        redundant=redundant(record.steps),
        errors=error_count(record.steps, record.status),
        outcome=outcome_score(record.checks) if scored else None,
        # model_requests, not requests: a reply replayed from run --cache was sent no request, yet answered
        process=process_score(case, record.checks, record.steps, offered) if scored and record.model_requests else None,
        failure=failure_cause(case, record),
        trajectory_match=run_trajectory_match(case, record.steps) if scored else None,
    )


def accuracy(names: Sequence[str], expected: Sequence[str] | None) -> int | None:
    """1 when the names of the calls that ran equal ``expected`` exactly (order and count), 0 otherwise,
    None when the case gives no ``expect.trace.expected``. Not a pass condition (replio eval)."""
    return None if expected is None else int(list(names) == list(expected))


def canonical(arguments: Mapping[str, Any] | None) -> str:
    """Arguments as canonical JSON (sorted keys, no spaces); ``null`` for unparseable ones."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


_RAN = frozenset({"executed", "recovered"})  # step statuses of calls that ran, so may have changed the world


def redundant(steps: Sequence[Step]) -> int:
    """How many calls repeat an earlier call that nothing since could have changed the answer of.

    A call is redundant when an earlier call had the same name and the same canonical JSON
    arguments, and no call between the two could have changed its result: every call that ran
    (status ``executed`` or ``recovered``) may change the world unless it is one of
    READ_ONLY_TOOLS (the builtins runner.tools.registry marks ``read_only``), so a ``write_file``,
    ``edit_file``, ``bash`` or any mock (a mock stands for a world that calls may change:
    ``cancel_order`` then ``get_order``) in between makes the repeat
    a fresh look. A call whose arguments did not parse, or that was cut off (``truncated``), is
    neither compared nor a change. Three identical ``read_file {"path": "a"}`` calls count 2;
    ``bash "pytest"``, ``edit_file``, ``bash "pytest"`` counts 0; two ``bash "pytest"`` in a row count 1.
    """
    seen: set[tuple[str, str]] = set()
    count = 0
    for step in steps:
        if step.arguments is None or step.status == "truncated":
            continue
        key = (step.name, canonical(step.arguments))
        count += key in seen
        if step.status in _RAN and step.name not in READ_ONLY_TOOLS:
            seen.clear()  # what was seen before may read differently now
        seen.add(key)
    return count


def error_count(steps: Sequence[Step], status: Status) -> int:
    """Loop errors plus error results: one per tool result that is an error (unknown or denied
    tool, arguments refused by the schema, a tool's failure, a mock's ``error``), plus one when
    the run itself ended in an error (setup, turn limit, provider, timeout...)."""
    return sum(step.is_error for step in steps) + int(status == ERROR)


def outcome_score(checks: Sequence[CheckResult]) -> float | None:
    """The mean credit of the outcome checks (verify, files, response_*, check): 1 for a pass, 0 for a fail, an
    ``expect.check`` command's own ``score`` when it gave one; None without any (no outcome check in the case, or
    the run ended before checks ran)."""
    outcome = [credit(c) for c in checks if c.category == OUTCOME]
    return sum(outcome) / len(outcome) if outcome else None


def credit(result: CheckResult) -> float:
    """What ``result`` adds to its score: an ``expect.check`` command's partial credit (its ``score``) when it
    gave one, else 1.0 for a pass and 0.0 for a fail."""
    return result.score if result.check == "check" and result.score is not None else float(result.passed)


def process_score(case: Case, checks: Sequence[CheckResult], steps: Sequence[Step],
                  offered: frozenset[str]) -> float | None:
    """The mean of every process component the case defines (ToolEval's process score), in [0, 1].

    Components come from each trace of the case: ``expect.trace``, on every call of the run, and each
    turn's ``expect.trace``, on that turn's calls only (``Step.turn``, as runner.checks.turns sees them).
    All are pooled, each weighing the same: ``process = sum(components) / len(components)``. A trace gives:

    - one component per trace check it defines, whatever its kind (``must_include``, ``avoid``, ``exact``,
      ``order``, ``args``, ``min_calls``, ``max_calls``, ``calls``...): the fraction of that check's
      results (in ``checks``, the run's results, named ``trace.<kind>`` or ``turns[i].trace.<kind>``) that
      passed; an ``avoid`` result about a tool that was not offered is neither credit nor blame (no
      avoided tool offered: no component);
    - with ``minimal_calls``, efficiency (``efficiency``) over the calls that ran (``Step.ran``: executed or recovered);
    - and each ``expect.check`` command with ``process: true``, one component of its own (``credit``).
    - a turn that never finished: its checks never ran, so its trace gives one component, 0.

    A trace that wants calls (runner.spec.expect.TraceExpect.wants_calls) where none was counted scores 0 on
    every component: doing nothing is no process (ToolEval's do-nothing signature). None when no trace
    defines any component (or, in ``score``, when the model never answered).

    Source: ToolEval's process score (required, forbidden, efficiency over one run's calls); tooltrial
    counts every other trace check the same way and adds the per-turn traces to the same mean.
    """
    scopes = [("", case.expect.trace, list(steps))] if case.expect.trace is not None else []
    scopes += [(f"turns[{index}].", expect.trace, [s for s in steps if s.turn == index])
               for index, expect in enumerate(case.turn_expect) if expect.trace is not None]
    unfinished = {c.check for c in checks if c.check.startswith("turns[") and c.check.endswith("]")}
    parts: list[float] = []
    for prefix, trace, scope_steps in scopes:
        if prefix and prefix[:-1] in unfinished:
            parts.append(0.0)
            continue
        kinds: dict[str, list[CheckResult]] = {}  # trace.<kind> -> its results, in the order they ran
        for c in checks:
            if c.category == PROCESS and c.check.startswith(prefix + "trace."):
                kinds.setdefault(c.check[len(prefix + "trace."):], []).append(c)
        parts += _components(trace, kinds, sum(s.ran for s in scope_steps), len(scope_steps), offered)
    parts += [credit(c) for c in checks if c.category == PROCESS and c.check == "check"]
    return sum(parts) / len(parts) if parts else None


def _components(trace: TraceExpect, kinds: dict[str, list[CheckResult]], calls: int, attempts: int,
                offered: frozenset[str]) -> list[float]:
    """One trace's components: the fraction passed of each of its check kinds' results (``kinds``), then
    efficiency of the ``calls`` that ran among the ``attempts``; all 0 when it wants calls and none ran."""
    if "avoid" in kinds:  # one result per avoided tool, in the order the case lists them
        kinds["avoid"] = [r for tool, r in zip(trace.avoid or (), kinds["avoid"]) if offers(offered, tool)]
    parts = [sum(r.passed for r in kind) / len(kind) for kind in kinds.values() if kind]
    if trace.minimal_calls is not None:
        parts.append(efficiency(calls, trace.minimal_calls, attempts))
    return [0.0] * len(parts) if trace.wants_calls and not calls else parts


def efficiency(calls: int, minimal: int, attempts: int | None = None) -> float:
    """How close the number of calls came to the fewest the task needs: ``min(calls, minimal) /
    max(attempts, minimal)``, where ``calls`` ran and ``attempts`` (default ``calls``; never fewer) counts the
    refused, unparsed and truncated ones too; 1.0 when all are equal (0 and 0 too). Too few calls cost as much
    as too many: 2 or 8 calls where 4 are needed both score 0.5; none where one is needed scores 0; a refused
    attempt earns no credit but costs like an extra call (1 ran of 2 attempted where 1 is needed: 0.5).

    Source: ToolEval's efficiency ``min(1, minimal / calls)`` penalises only extra calls; tooltrial takes the
    ratio of the smaller count to the larger so that a run that did too little is not scored as efficient.
    """
    attempts = max(calls, calls if attempts is None else attempts)
    return 1.0 if calls == minimal == attempts else min(calls, minimal) / max(attempts, minimal)


_ERROR_CAUSES = {ErrorKind.TURN_LIMIT: FailureCause.TURN_LIMIT, ErrorKind.TRUNCATED: FailureCause.TRUNCATED,
                 ErrorKind.MALFORMED_CALL: FailureCause.MALFORMED_CALL, ErrorKind.AGENT_FAILED: FailureCause.AGENT_FAILED}


def failure_cause(case: Case, record: RunRecord) -> FailureCause | None:
    """The one failure cause of a non-passing run, None for a pass: the first of these that holds.

    1. ``run_error``: the run ended in an error other than those of 2 (setup command,
       provider failure, empty replies, script exhausted, timeout, template or internal error).
    2. ``turn_limit``: the model made more requests than ``expect.max_turns``; ``truncated``: its
       replies were cut off at the output limit twice in a row; ``malformed_call``: the provider
       kept rejecting its calls as malformed; ``agent_failed``: an external agent program exited non-zero
       or passed its own timeout (the run's error kind of the same name, each).
    3. ``calls_as_text``: no tool call at all, but some reply wrote calls of offered tools as text
       in its content (``<tool_call>...</tool_call>`` and the like; runner.providers.textcalls), never
       run; else ``no_tools``: no tool call at all, where the case's trace wants some (``expected``,
       ``exact``, ``must_include``, ``order`` or ``args`` given, or ``min_calls`` / ``min_attempts`` /
       ``minimal_calls`` >= 1);
       ToolEval's do-nothing signature.
    Causes 4 to 10 are those the failed results point to (runner.checks.table ``causes``), the first
    in this order:

    4. ``called_forbidden``: a failed ``trace.avoid`` check, or a call to a tool in ``deny``.
    5. ``wrong_tool``: the calls were not the needed ones: a failed ``trace.must_include``,
       ``trace.exact``, ``trace.exact_unordered``, ``trace.order``, ``trace.min_calls`` or
       ``trace.min_attempts`` check.
    6. ``missing_output``: what the case checks was never produced: a file that must exist
       does not (``files.exists``), or the final reply is empty and a ``response_contains``,
       ``response_matches``, ``response_not_contains`` or ``response_json`` check failed.
    7. ``wrong_args``: the right tools, wrong arguments: a failed ``trace.args`` or ``trace.calls`` check
       (a failed ``trace.calls`` whose expected tool never ran is ``wrong_tool``).
    8. ``excessive_calls``: a failed ``trace.max_calls`` check.
    9. ``over_budget``: the run used more tokens or USD than ``expect.max_tokens`` / ``max_cost``.
    10. ``check_failed``: a failed ``expect.check`` command (an outcome or a process check).
    11. ``good_process_bad_outcome``: every process check passed, some outcome check failed, and some call
        got an answer; when every call got an error result instead (``_unanswered``) the cause is ``wrong_args``:
        the right tools, called so that none answered, which the process checks did not see.
    12. ``wrong_answer``: only outcome checks failed and no tool call was made (none wanted): no process to credit.
    13. ``unknown``: none of the above (e.g. a failed check of a kind this list does not know).

    Source: ToolEval's mutually exclusive, first-match taxonomy (run_error, no_tools,
    called_forbidden, wrong_tool, missing_output, wrong_args, excessive_calls,
    good_process_bad_outcome, unknown); tooltrial adds ``turn_limit``, ``over_budget``, ``wrong_answer`` and
    ``fault_not_handled`` (runner.scoring.robustness, set after these) and ties each cause to the checks.
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
    if "trace.calls" in failed and _uncalled(case, record):
        pointed.add(FailureCause.WRONG_TOOL)  # not other arguments: the tool itself never ran
    first = next((cause for cause in FailureCause if cause in pointed), None)  # the enum is in first-match order
    if first is not None:
        return first
    if {c.category for c in record.failed_checks} == {OUTCOME}:  # no call at all: no process to call good
        return (FailureCause.WRONG_ANSWER if not record.steps else FailureCause.WRONG_ARGS
                if _unanswered(case, record.steps) else FailureCause.GOOD_PROCESS_BAD_OUTCOME)
    return FailureCause.UNKNOWN


def _unanswered(case: Case, steps: Sequence[Step]) -> bool:
    """Whether the run made calls and every one got an error result (refused, unparsed, cut off, a tool's
    failure, a mock with no response for its arguments or only its fallback's error), so no call got an answer
    however well its process checks passed. An error a mock of the case declares for arguments it names (an
    ``error:`` response with a ``when``) is the world's answer to a right call, not a failed one: ``division
    by zero`` for ``calculate {"expression": "10 / 0"}``."""
    declared = {(mock["name"], f"Error: {response['error']}") for mock in case.mocks for response in mock["responses"]
                if response.get("error") is not None and response.get("when") is not None}
    return bool(steps) and all(step.is_error and (step.name, step.result) not in declared for step in steps)


def _uncalled(case: Case, record: RunRecord) -> bool:
    """Whether some tool that a ``trace.calls`` entry (the case's or a turn's) expects never ran."""
    traces = [case.expect.trace, *(turn.trace for turn in case.turn_expect)]
    wanted = {call.name for trace in traces if trace is not None for call in trace.calls or ()}
    return bool(wanted - {step.name for step in record.steps if step.ran})


def _points() -> dict[str, Points]:
    """Result name -> the failure cause a failed result of that name points to (the check table's ``causes``)."""
    return {name: points for kind in KINDS.values() for name, points in kind.causes.items()}
