"""The run record: everything tooltrial keeps about one run of one case in one arm."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.checks.base import CheckResult
from runner.kinds import ErrorKind, FailureCause, Status, UserStop
from runner.providers.base import Usage
from runner.run.faulted import FaultUse
from runner.run.injected import InjectionOutcome
from runner.run.plain import plain
from runner.run.provenance import Provenance
from runner.run.requests import JSON_KEY, RequestStats, Tokens
from runner.run.savedfiles import SavedFile
from runner.run.simuser import UserTurn
from runner.run.trajectory import Step
from runner.run.transcript import Cut
from runner.sandbox.command import CommandResult, Confinement
from runner.scoring.trajectorymatch import TrajectoryMatch
from runner.sums import known_sum

PASS, FAIL, ERROR = Status.PASS, Status.FAIL, Status.ERROR


COMMAND_OUTPUT_LIMIT = 8192  # bytes of each stream a setup or verify command keeps: 4 KiB head + 4 KiB tail


@dataclass(frozen=True)
class CommandRun:
    """One setup, agent, verify or check command as it ran: ``phase`` (``setup``, ``agent``: an external agent
    program's invocation for one turn, ``verify``, or ``check``: an ``expect.check`` command), the ``command``,
    its ``exit_code`` (None when it was killed for time), ``timed_out``, ``duration`` (seconds), and
    its ``stdout`` and ``stderr`` apart, each decoded as UTF-8 and capped at COMMAND_OUTPUT_LIMIT bytes
    (head and tail kept around a ``[... N bytes left out ...]`` line). The text is the command's:
    untrusted."""

    phase: str
    command: str
    exit_code: int | None
    timed_out: bool
    duration: float
    stdout: str
    stderr: str

    @classmethod
    def of(cls, phase: str, command: str, result: CommandResult) -> CommandRun:
        """The record of ``result``, a command run with ``split`` (runner.sandbox.command.Sandbox.run)."""
        return cls(phase, command, result.exit_code, result.timed_out, result.duration, result.output,
                   result.stderr or "")

    @property
    def failed(self) -> bool:
        """Whether it timed out or exited non-zero."""
        return self.timed_out or self.exit_code != 0


@dataclass(frozen=True)
class CacheUse:
    """What ``run --cache`` did for one run: ``hits`` (replies replayed, no request sent), ``misses``
    (requests sent, a failed one too), and ``total_tokens`` (``tokens`` in the run file) and ``cost`` (USD): what
    the hits' replies cost when they were first made (None when none reported it). Those are part of the run's ``tokens`` and
    ``cost``, which its budget checks read, so a replayed run scores as the original did; they were not
    spent again."""

    hits: int = 0
    misses: int = 0
    total_tokens: int | None = field(default=None, metadata={JSON_KEY: "tokens"})
    cost: float | None = None

    @classmethod
    def of(cls, requests: Sequence[RequestStats]) -> CacheUse:
        """The use of a run's ``requests`` (RequestStats, each marked ``hit`` or ``miss``)."""
        hits = [r for r in requests if r.cache == "hit"]
        return cls(len(hits), sum(r.cache == "miss" for r in requests), Tokens.of(hits).total_tokens,
                   known_sum(r.cost for r in hits))

    def to_dict(self) -> dict[str, Any]:
        """``{hits, misses, tokens, cost}``, as the run file and the report write it."""
        return dict(plain(self))


@dataclass(frozen=True)
class EarlierAttempt:
    """An earlier attempt of a run that ``run --resume RESULTS --retry-errors`` ran again because it ended in an
    error not of the agent's making (runner.scoring.gates.is_infrastructure_error): its ``error_kind``, ``cause``,
    ``started`` (epoch seconds, None when its record had none) and ``duration`` (seconds), as its record had them."""

    error_kind: ErrorKind | None
    cause: str | None
    started: float | None
    duration: float

    @classmethod
    def of(cls, record: RunRecord) -> EarlierAttempt:
        """What ``record``, an errored run about to be run again, leaves of itself on the new record."""
        return cls(record.error_kind, record.cause, record.started, record.duration)


def arm_label(provider: str, prompt: str, tool_defs: str | None = None, faults: str | None = None) -> str:
    """How output, reports and run files name an arm: ``provider · prompt``, then ``· TOOLS`` (the tool definitions'
    name) with ``-T`` and ``· faults NAME`` with a fault arm, in that order."""
    label = f"{provider} · {prompt}" if tool_defs is None else f"{provider} · {prompt} · {tool_defs}"
    return label if faults is None else f"{label} · faults {faults}"


def prompt_slot(prompt: str, fault_arm: str | None) -> str:
    """A run key's prompt slot (runner.suite.engine.run_key, report.json's ``unfinished``): the prompt name, then
    ``· faults NAME`` for a run of fault arm ``NAME`` as its arm label has it, so that a suite without
    ``--faults`` keys its runs as ever while each fault arm's runs resume, shard and merge as an arm of their own."""
    return prompt if fault_arm is None else f"{prompt} · faults {fault_arm}"


@dataclass
class RunRecord:
    """One run of one case in one arm (provider x prompt, x tool definitions with ``-T``: ``tool_defs`` names
    them, None without; runner.spec.tooldefs).

    Attributes:
        run: the run's number among the case's repeats in its arm, 1-based (0-based in run files
            written before ``commands`` was recorded: runner.output.load reads those one up).
        status: ``pass`` (every check passed), ``fail`` (some check failed) or ``error``.
        cause: for an error, the human cause (``setup command failed (exit 2): make``...).
        error_kind: for an error, its kind (runner.kinds.ErrorKind: ``setup``, ``workspace``,
            ``turn_limit``, ``provider_error``, ``script_exhausted``, ``timeout``, ``judge_error``...).
        requests: model requests sent: every try counts, retries included (each model request's ``attempts``
            lists them). duration: wall-clock seconds. started: when it began, epoch seconds (None in older records).
        tokens, cost: the agent's own usage (tokens; USD), each None when no request reported it;
            judges' usage is apart, in ``judge_tokens`` and ``judge_cost``.
        latency: seconds spent waiting on the model, summed over requests (None before any request).
        model_requests: per-request tokens, cost, latency, finish reason and tries, in order; a request
            that failed for good is the last, with no finish reason.
        changes: workspace paths ``{"added": [...], "changed": [...], "deleted": [...]}``; files: the added and changed
            ones' final contents, bounded (runner.run.savedfiles.SavedFile), for ``tooltrial rescore``; {} in older records.
        outcome, process: scores in [0, 1] (runner.scoring), None when the case has no such checks.
        accuracy: 1/0 against ``expect.trace.expected``, None without it.
        trajectory_match: the calls scored against the case's reference list (``expect.trace.calls``,
            else ``expect.trace.expected``; runner.scoring.trajectorymatch), None without one.
        redundant, errors: counts of repeated identical calls and of error results plus loop errors.
        failure: the failure cause of a non-passing run (runner.scoring taxonomy), None for a pass.
        sandbox: how the run's commands were confined (runner.sandbox.command.Confinement); None in
            records written before tooltrial recorded it.
        script: the model's replies in ``script:`` form (runner.providers.scripted.script_reply),
            one per request; replaying them with the scripted provider repeats the run.
        warnings: what went wrong beside the run without changing its result, one line each
            (a workspace cleanup could not remove entirely, naming what is left).
        commands: every setup and verify command that ran, in order (CommandRun: exit code, output,
            duration); empty in records of earlier versions.
        prompt_used: the system prompt template the run rendered: the arm's (``prompt``), or the case's
            own ``system``, named ``group/id.system``; None in records of earlier versions or a run that
            never got that far. prompt_overridden: whether it was the case's own, not the arm's.
        truncated_reply: whether the final reply was cut off at the output limit (finish reason
            ``length``) and so judged as it stood.
        queued: seconds the run waited for a free slot of its provider (an alias's ``max_concurrency``)
            before it started; not part of ``duration``. rate_limited: seconds its tries waited for their provider's
            rate limiter (runner.providers.ratelimit), each Attempt's ``rate_limited`` summed; not in ``duration``.
        cache: what the response cache did (CacheUse), None when the run used none (no ``--cache``,
            or the scripted provider).
        user_model, user_stop, user_turns: a simulated user's model, why its conversation ended
            (runner.kinds.UserStop) and its messages (runner.run.simuser.UserTurn); None, None, [] without one.
            Its usage is apart from the agent's, in ``user_tokens`` and ``user_cost``.
        agent: the external agent program that ran instead of the built-in loop, ``{name, command, wire, tools}``
            (runner.spec.agentspec; ``wire``: each request its endpoint answered, ``tools``: the names of the
            tools it offered its model; runner.run.external), None for the built-in loop; each of its invocations is in ``commands``
            (phase ``agent``), and ``steps`` and ``model_requests`` are rebuilt from its endpoint's wire.
        earlier: the attempts of this run that ended in an error not of the agent's making and were run again
            (``run --resume RESULTS --retry-errors``), oldest first (EarlierAttempt); empty for a run's first attempt.
            The run file and the report write ``attempt`` beside it: this one's number, ``len(earlier) + 1``.
        provenance: fingerprints of what the run ran on (runner.run.provenance), None in records of earlier
            versions or a run that stopped before its tools were offered.
        messages: the conversation as sent (runner.run.transcript), each message once: the built-in loop's
            history as it went to the provider (rendered system prompt, turns, the assistant messages as returned,
            tool results as sent back); an external agent's requests' messages as it sent them, the history it
            sends again kept once. Each of ``model_requests`` says which it carried (``messages: [start, end]``).
        message_cuts: the texts of ``messages`` kept cut to their head and tail (runner.run.transcript.Cut:
            over TEXT_LIMIT characters). tools: the tools offered, as sent, once (for an external agent,
            those of its first request that offered any). faults: its fault arm, seed and what it received and
            how it coped (runner.run.faulted.FaultUse), None for a run of no fault arm and a case without faults.
        injection: its part in a prompt-injection measurement (runner.run.injected), None for a case without one.
    """
    case: str
    provider: str
    prompt: str
    run: int = 1
    status: Status = ERROR
    cause: str | None = None
    error_kind: ErrorKind | None = None
    checks: list[CheckResult] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    final_reply: str = ""
    requests: int = 0
    tokens: Tokens = field(default_factory=Tokens)
    cost: float | None = None
    latency: float | None = None
    model_requests: list[RequestStats] = field(default_factory=list)
    duration: float = 0.0
    changes: dict[str, list[str]] = field(default_factory=dict)
    files: dict[str, SavedFile] = field(default_factory=dict)
    workspace: str | None = None
    outcome: float | None = None
    process: float | None = None
    accuracy: int | None = None
    redundant: int = 0
    errors: int = 0
    failure: FailureCause | None = None
    trajectory_match: TrajectoryMatch | None = None
    sandbox: Confinement | None = None
    script: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    commands: list[CommandRun] = field(default_factory=list)
    prompt_used: str | None = None
    prompt_overridden: bool = False
    truncated_reply: bool = False
    queued: float = 0.0
    rate_limited: float = 0.0
    started: float | None = None
    cache: CacheUse | None = None
    user_model: str | None = None
    user_stop: UserStop | None = None
    user_turns: list[UserTurn] = field(default_factory=list)
    agent: dict[str, Any] | None = None
    earlier: list[EarlierAttempt] = field(default_factory=list)
    provenance: Provenance | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    message_cuts: list[Cut] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    faults: FaultUse | None = None
    tool_defs: str | None = None
    injection: InjectionOutcome | None = None

    @property
    def names(self) -> list[str]:
        """The called tool names, in order."""
        return [step.name for step in self.steps]

    @property
    def calls(self) -> int:
        """How many tool calls the run made."""
        return len(self.steps)

    @property
    def judge_tokens(self) -> Tokens:
        """Tokens the judges used grading this run, summed over its checks; a field is None when no judge reported it."""
        return Tokens.of(self._judge_usages())

    @property
    def judge_cost(self) -> float | None:
        """USD the judges cost grading this run, summed over its checks; None when no judge's cost is known."""
        return known_sum(u.cost for u in self._judge_usages())

    def _judge_usages(self) -> list[Usage]:
        return [c.usage for c in self.checks if c.usage is not None]

    @property
    def user_tokens(self) -> Tokens:
        """Tokens the simulated user's model used, summed over its requests (``unreported``: those that reported none)."""
        return Tokens.of([t.usage for t in self.user_turns if t.by == "model"])

    @property
    def user_cost(self) -> float | None:
        """USD the simulated user's model cost; None when no request's cost is known."""
        return known_sum(t.usage.cost for t in self.user_turns if t.usage is not None)

    @property
    def failed_checks(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    @property
    def fault_arm(self) -> str | None:
        """Its fault arm's name (``run --faults``: ``off``, ``case`` or a profile's), None without one."""
        return None if self.faults is None else self.faults.arm

    @property
    def arm(self) -> str:
        return arm_label(self.provider, self.prompt, self.tool_defs, self.fault_arm)

    @property
    def key_prompt(self) -> str:
        """Its run key's prompt slot (``prompt_slot``): the prompt name, then ``· faults NAME`` in a fault arm."""
        return prompt_slot(self.prompt, self.fault_arm)

    @property
    def attempt(self) -> int:
        """Which attempt of the run this is, 1-based: 1 plus its ``earlier`` attempts."""
        return len(self.earlier) + 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (under its run-file key), with ``judge_tokens`` (Tokens) and ``judge_cost``
        (USD), the same of the simulated user, ``user_tokens`` and ``user_cost``, and the ``attempt`` number."""
        return {**plain(self), "judge_tokens": plain(self.judge_tokens), "judge_cost": self.judge_cost,
                "user_tokens": plain(self.user_tokens), "user_cost": self.user_cost, "attempt": self.attempt}
