"""tooltrial's vocabulary: a run's status, an error's kind and who is to blame for it, why the agent
loop stopped, a check's category, a failure's cause.

Each is a ``StrEnum``: a member is its string, so run files, report.json, JUnit and the printed
lines carry exactly these values, and a value read back from a file compares equal to its member.
The schemas' enums (``schemas/run.schema.json``, ``schemas/report.schema.json``) list the same
values; tests/test_kinds.py holds them together.
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """A run's status: every check passed, some check failed, or the run could not be judged."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


class Blame(StrEnum):
    """Who an error run, or a gate it broke, is down to, in the order the exit code takes them
    (runner.scoring.gates.exit_code): tooltrial's own bug first (3), then the case's data (4), the
    agent (1), and last the infrastructure: provider, judge, setup commands, the machine (6)."""

    INTERNAL = "internal"
    CASE = "case"
    AGENT = "agent"
    INFRASTRUCTURE = "infrastructure"


class ErrorKind(StrEnum):
    """What made a run an ERROR (``RunRecord.error_kind``), or a check one that could not be made
    (``CheckResult.error_kind``)."""

    SETUP = "setup"  # a setup command failed or timed out, or a setup or agent command names a file the sandbox hides
    WORKSPACE = "workspace"  # the case's fixture or files could not be put into the workspace
    TEMPLATE = "template"  # a prompt template did not render
    TURN_LIMIT = "turn_limit"  # more model requests than expect.max_turns
    PROVIDER_ERROR = "provider_error"  # a model request failed for good, for none of the reasons below
    RATE_LIMIT = "rate_limit"  # the provider kept answering 429: too many requests or tokens for now
    QUOTA_EXHAUSTED = "quota_exhausted"  # the account's quota, credit or daily limit is used up
    CONTEXT_OVERFLOW = "context_overflow"  # the conversation outgrew the model's context window
    AUTH = "auth"  # the key was refused (401, 403, an invalid key)
    BAD_REQUEST = "bad_request"  # the provider refused the request as sent (400, 404, 413, 422)
    SERVER_ERROR = "server_error"  # the provider failed (5xx, 529 overloaded, an error mid-stream)
    PROVIDER_TIMEOUT = "provider_timeout"  # the provider did not answer within the request timeout
    CONNECTION = "connection"  # the provider could not be reached
    MALFORMED_RESPONSE = "malformed_response"  # the provider answered with something that is not a reply
    SCRIPT_EXHAUSTED = "script_exhausted"  # the agent asked the scripted provider for more replies than it holds
    TIMEOUT = "timeout"  # the run's time ran out
    JUDGE_ERROR = "judge_error"  # the judge was unreachable or gave no usable verdict
    CHECK_ERROR = "check_error"  # an expect.check command's program was not found, or its verdict line was malformed
    USER_ERROR = "user_error"  # the simulated user's model failed for good, or its script ran out
    PATTERN_TIMEOUT = "pattern_timeout"  # a case's regex took too long to search: the case's pattern
    CANCELLED = "cancelled"  # the suite was interrupted; such a run counts as not run
    TRUNCATED = "truncated"  # replies cut off at the output limit, twice in a row
    EMPTY_REPLY = "empty_reply"  # the provider kept sending replies with no text and no calls
    MALFORMED_CALL = "malformed_call"  # the provider kept rejecting the model's call as malformed (Gemini)
    AGENT_FAILED = "agent_failed"  # an external agent program exited non-zero or passed its own timeout
    WORKER_LOST = "worker_lost"  # the Ray worker or node running the run went away (run --executor ray)
    START_FAILED = "start_failed"  # a command or thread the run needed could not be started (the machine, the sandbox)
    INTERNAL = "internal"  # a bug in tooltrial

    @property
    def blame(self) -> Blame:
        """Who the error is down to: the agent for a stop of its own making (turn limit, timeout, an
        exhausted script, replies truncated or calls malformed again and again, an external agent program that
        exited non-zero or passed its timeout, a conversation grown past the
        context window), the case for data it gives (fixture, files, templates, a pattern too slow
        to search, a check command that cannot give a verdict), tooltrial for its own bug, else the infrastructure (provider, judge, setup)."""
        if self in _AGENT_STOPS:
            return Blame.AGENT
        if self in _CASE_DATA:
            return Blame.CASE
        return Blame.INTERNAL if self is ErrorKind.INTERNAL else Blame.INFRASTRUCTURE

    @property
    def from_provider(self) -> bool:
        """Whether a model request failing for good makes a run an error of this kind."""
        return self in _PROVIDER_FAILURES


_AGENT_STOPS = frozenset({ErrorKind.TURN_LIMIT, ErrorKind.TIMEOUT, ErrorKind.SCRIPT_EXHAUSTED, ErrorKind.TRUNCATED,
                          ErrorKind.MALFORMED_CALL, ErrorKind.CONTEXT_OVERFLOW, ErrorKind.AGENT_FAILED})
_PROVIDER_FAILURES = frozenset({
    ErrorKind.PROVIDER_ERROR, ErrorKind.RATE_LIMIT, ErrorKind.QUOTA_EXHAUSTED, ErrorKind.CONTEXT_OVERFLOW,
    ErrorKind.AUTH, ErrorKind.BAD_REQUEST, ErrorKind.SERVER_ERROR, ErrorKind.PROVIDER_TIMEOUT, ErrorKind.CONNECTION,
    ErrorKind.MALFORMED_RESPONSE})
_CASE_DATA = frozenset({ErrorKind.WORKSPACE, ErrorKind.TEMPLATE, ErrorKind.PATTERN_TIMEOUT, ErrorKind.CHECK_ERROR})


class StopReason(StrEnum):
    """Why the agent loop ended before the last turn's reply (``Trajectory.stop``); each is the
    ErrorKind of the same name that it makes the run (a failed model request stops it with the
    request's kind)."""

    TURN_LIMIT = "turn_limit"
    PROVIDER_ERROR = "provider_error"
    RATE_LIMIT = "rate_limit"
    QUOTA_EXHAUSTED = "quota_exhausted"
    CONTEXT_OVERFLOW = "context_overflow"
    AUTH = "auth"
    BAD_REQUEST = "bad_request"
    SERVER_ERROR = "server_error"
    PROVIDER_TIMEOUT = "provider_timeout"
    CONNECTION = "connection"
    MALFORMED_RESPONSE = "malformed_response"
    SCRIPT_EXHAUSTED = "script_exhausted"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    TRUNCATED = "truncated"
    EMPTY_REPLY = "empty_reply"
    MALFORMED_CALL = "malformed_call"
    AGENT_FAILED = "agent_failed"

    @property
    def error_kind(self) -> ErrorKind:
        """The ErrorKind of the same name: what the stop makes the run."""
        return ErrorKind(self.value)


class UserStop(StrEnum):
    """Why a conversation with a simulated user ended (``RunRecord.user_stop``): its reply held the stop
    marker, it had sent its most turns, the agent loop stopped first (runner.kinds.StopReason), its own
    model failed, the run's time ran out, or the suite was interrupted."""

    MARKER = "marker"
    MAX_USER_TURNS = "max_user_turns"
    AGENT_ERROR = "agent_error"
    USER_ERROR = "user_error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"


class Category(StrEnum):
    """What a check is about: the result of the work, how the tools were used, or what it cost."""

    OUTCOME = "outcome"
    PROCESS = "process"
    BUDGET = "budget"


class FailureCause(StrEnum):
    """The one failure cause of a run that did not pass, in first-match order
    (runner.scoring.metrics.failure_cause gives each its meaning)."""

    RUN_ERROR = "run_error"
    TURN_LIMIT = "turn_limit"
    AGENT_FAILED = "agent_failed"
    TRUNCATED = "truncated"
    MALFORMED_CALL = "malformed_call"
    FAULT_NOT_HANDLED = "fault_not_handled"
    CALLS_AS_TEXT = "calls_as_text"
    NO_TOOLS = "no_tools"
    CALLED_FORBIDDEN = "called_forbidden"
    WRONG_TOOL = "wrong_tool"
    MISSING_OUTPUT = "missing_output"
    WRONG_ARGS = "wrong_args"
    EXCESSIVE_CALLS = "excessive_calls"
    OVER_BUDGET = "over_budget"
    CHECK_FAILED = "check_failed"
    GOOD_PROCESS_BAD_OUTCOME = "good_process_bad_outcome"
    WRONG_ANSWER = "wrong_answer"
    UNKNOWN = "unknown"
