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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.checks.base import OUTCOME, PROCESS, CheckResult
from runner.kinds import FailureCause, Status
from runner.run.record import ERROR, RunRecord
from runner.run.trajectory import Step
from runner.scoring.causes import failure_cause
from runner.scoring.gates import infrastructure_error
from runner.scoring.robustness import fill_faults
from runner.scoring.trajectorymatch import TrajectoryMatch, run_trajectory_match
from runner.spec.case import Case
from runner.spec.expect import TraceExpect
from runner.spec.offered import offered_tools, offers
from runner.tools.registry import READ_ONLY_TOOLS

FAILURE_CAUSES = tuple(FailureCause)  # in first-match order


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
