"""The failure cause of one run: ToolEval's mutually exclusive, first-match taxonomy, each cause tied to the
checks whose failure points to it (runner.checks.table ``causes``). A pure function of the Case and its finished
RunRecord, which runner.scoring.metrics records with the run's other metrics.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from runner.checks.base import OUTCOME
from runner.checks.table import KINDS, Points
from runner.kinds import ErrorKind, FailureCause
from runner.run.record import ERROR, PASS, RunRecord
from runner.run.trajectory import Step
from runner.spec.case import Case
from runner.spec.expect import TraceExpect

_TURN_PREFIX = re.compile(r"^turns\[\d+\]\.")

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
       (a failed ``trace.calls`` whose expected tool never ran is ``wrong_tool``). Where 5 holds only because
       each needed tool that never ran was called and refused for its arguments (``_refused``: unparsed, or
       failing the schema of the tool as the arm shows it), the cause is ``wrong_args`` in 5's place.
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
    good_process_bad_outcome, unknown); tooltrial adds ``turn_limit``, ``over_budget``, ``wrong_answer`` and ``fault_not_handled``
    (runner.scoring.robustness, set after these) and ties each cause to the checks, so a run always gets one cause.
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
    if first is FailureCause.WRONG_TOOL and _refused(case, record.steps):
        return FailureCause.WRONG_ARGS  # the needed tools were called, their arguments refused
    if first is not None:
        return first
    if {c.category for c in record.failed_checks} == {OUTCOME}:
        if not record.steps:  # no call at all: no process to call good
            return FailureCause.WRONG_ANSWER
        return FailureCause.WRONG_ARGS if _unanswered(case, record.steps) else FailureCause.GOOD_PROCESS_BAD_OUTCOME
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
    wanted = {call.name for trace in _traces(case) for call in trace.calls or ()}
    return bool(wanted - {step.name for step in record.steps if step.ran})


def _refused(case: Case, steps: Sequence[Step]) -> bool:
    """Whether some tool the traces name never ran, and each such tool was called with arguments that were
    refused: unparsed, or failing its schema (``invalid arguments for write_file: ...``)."""
    missing = {n for t in _traces(case) for n in (*(t.exact or ()), *(t.exact_unordered or ()), *(t.must_include
               or ()), *(t.order or ()), *(c.name for c in t.calls or ()))} - {s.name for s in steps if s.ran}
    bad = {s.name for s in steps if s.status == "invalid" or s.result.startswith(f"Error: invalid arguments for {s.name}:")}
    return bool(missing) and missing <= bad


def _traces(case: Case) -> list[TraceExpect]:
    return [t for t in (case.expect.trace, *(turn.trace for turn in case.turn_expect)) if t is not None]


def _points() -> dict[str, Points]:
    """Result name -> the failure cause a failed result of that name points to (the check table's ``causes``)."""
    return {name: points for kind in KINDS.values() for name, points in kind.causes.items()}
