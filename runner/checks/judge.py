"""LLM-as-judge (``expect.judge: {rubric, model?, threshold?}``).

A separate judge model, reached through the same Provider protocol as the
agent, reads the rubric, the turns, a summary of the tool calls and the final
reply, and answers ``{"score": 0..1, "reasoning": "..."}``. The check passes
when the score reaches ``threshold`` (default 0.5); score and reasoning are
recorded on the CheckResult, with the judge's own token usage and cost
(``usage``), kept apart from the agent's: grading never counts against the
case's budgets. A judge that cannot be reached, or whose reply has no usable
score, gives a ``judge_error`` result: the run becomes an infrastructure
ERROR, never a crash. The judge's request ends with the run's time
(``CheckContext.deadline``); one cut short gives a ``timeout`` result.

``--judge-repeats K`` asks the judge K times (``CheckContext.judging``): the score is the mean, each answer
is recorded (``scores``), the reasoning is the first. Every grade records how far its judge is calibrated on
the rubric (``calibration``: runner.output.calibrations, ``tooltrial judge calibrate``), keyed by what the judge
is (``judge_key``), not by the name it was given.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Callable, Sequence

from runner.checks.base import (
    CALIBRATED,
    UNCALIBRATED,
    UNDER_CALIBRATED,
    CheckContext,
    CheckResult,
    JudgeCalibration,
    JudgeSettings,
)
from runner.errors import Location, UserError
from runner.kinds import ErrorKind
from runner.names import JUDGE_HINT, provider_kind
from runner.providers.base import NoVerdict, OutOfTime, ProviderError, Usage
from runner.providers.kind import ProviderSpec
from runner.providers.registry import PROVIDER_KINDS
from runner.run.trajectory import Trajectory
from runner.spec.case import Case
from runner.spec.expect import JudgeExpect
from runner.spec.fingerprint import digest
from runner.sums import known_sum

DEFAULT_THRESHOLD = 0.5
# The least kappa of a calibrated judge whose case sets no min_kappa: "substantial" agreement (0.61 to 0.80) in
# Landis and Koch 1977, "The measurement of observer agreement for categorical data", Biometrics 33(1), p. 165.
DEFAULT_MIN_KAPPA = 0.6
_RESULT_CHARS = 300
_MOST_CALLS = 60

SYSTEM = """\
You grade the work of an AI agent that used tools to carry out a task.
Judge only against the rubric. Answer with one JSON object and nothing else:
{"score": <number from 0 to 1>, "reasoning": "<one or two sentences>"}
A score of 1 means the rubric is fully met, 0 that it is not met at all."""


def check_judge(spec: JudgeExpect, ctx: CheckContext) -> list[CheckResult]:
    judge = ctx.judges.get(spec.model)
    if judge is None:
        return [_broken(f"no judge model for {spec.model or 'this case'}")]
    threshold = DEFAULT_THRESHOLD if spec.threshold is None else float(spec.threshold)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": judge_prompt(spec.rubric, ctx.trajectory)}]
    provider, repeats = judge.create(ctx.case), max(1, ctx.judging.repeats)
    scores: list[float] = []
    reasons: list[str] = []
    usages: list[Usage | None] = []
    for _ in range(repeats):  # --judge-repeats: the same question again, for the judge's own spread
        try:
            reply = provider.complete(messages, [], ctx.deadline)
        except NoVerdict as e:
            return [_broken(f"judge {judge.name} gave no verdict: {e}", _summed(usages))]
        except OutOfTime:
            return [CheckResult("judge", False, f"waiting for the judge {judge.name}", error_kind=ErrorKind.TIMEOUT,
                                usage=_summed(usages))]
        except ProviderError as e:
            return [_broken(f"judge {judge.name} unreachable: {e}", _summed(usages))]
        usages.append(reply.usage)
        try:
            score, reasoning = parse_verdict(reply.content or "")
        except ValueError as e:
            return [_broken(f"judge {judge.name} gave no usable verdict: {e}", _summed(usages))]
        scores.append(score)
        reasons.append(reasoning)
    score = statistics.fmean(scores)
    verdict = "reached" if score >= threshold else "is below"
    asked = f" (mean of {repeats}, {min(scores):.2f} to {max(scores):.2f})" if repeats > 1 else ""
    message = f"judge score {score:.2f}{asked} {verdict} {threshold:.2f}: {reasons[0]}"
    return [CheckResult("judge", score >= threshold, message, score=score, reasoning=reasons[0], usage=_summed(usages),
                        scores=scores if repeats > 1 else [], calibration=None if ctx.judging.calibrations is None
                        else calibration(spec, judge, ctx.judging))]


def calibration(spec: JudgeExpect, judge: ProviderSpec, judging: JudgeSettings) -> JudgeCalibration:
    """How far ``judge`` is calibrated on ``spec``'s rubric (runner.output.calibrations, keyed by the rubric's
    fingerprint and ``judge_key``): ``uncalibrated`` without a calibration kept, ``under-calibrated`` when its
    kappa is undefined or below the floor (``spec.min_kappa``, else DEFAULT_MIN_KAPPA), the mark's ``min_kappa``."""
    key, kept = (digest(spec.rubric), judge_key(judge)), judging.calibrations or {}
    floor = DEFAULT_MIN_KAPPA if spec.min_kappa is None else spec.min_kappa
    if key not in kept:
        return JudgeCalibration(judge.name, UNCALIBRATED, None, floor)
    kappa = kept[key]
    low = kappa is None or kappa < floor
    return JudgeCalibration(judge.name, UNDER_CALIBRATED if low else CALIBRATED, kappa, floor)


def judge_key(judge: ProviderSpec) -> str:
    """The key a judge's calibrations are kept by: the fingerprint of what it is (its ``judge_identity``: a
    scripted judge's file's SHA-256, a live judge's model string and answer-changing request parameters)."""
    return digest(judge.judge_identity)


def _summed(usages: Sequence[Usage | None]) -> Usage | None:
    """The usage of several requests, field by field (each None where no request reported it); None for none."""
    known = [u for u in usages if u is not None]
    if not known:
        return None
    return Usage(**{f.name: known_sum(getattr(u, f.name) for u in known) for f in dataclasses.fields(Usage)})


def _broken(message: str, usage: Usage | None = None) -> CheckResult:
    return CheckResult("judge", False, message, error_kind=ErrorKind.JUDGE_ERROR, usage=usage)


def judge_prompt(rubric: str, trajectory: Trajectory) -> str:
    """The judge's user message: rubric, the turns, the tool calls (results cut short) and the final reply."""
    turns = [m["content"] for m in trajectory.messages if m.get("role") == "user"]
    lines = ["Rubric:", rubric.strip(), "", "Task (the user's turns):"]
    lines += [f"{i}. {t}" for i, t in enumerate(turns, 1)]
    lines += ["", f"Tool calls ({len(trajectory.steps)}):"]
    for i, step in enumerate(trajectory.steps[:_MOST_CALLS], 1):
        result = step.result if len(step.result) <= _RESULT_CHARS else step.result[:_RESULT_CHARS] + " [...]"
        status = "error" if step.is_error else "ok"
        lines.append(f"{i}. {step.name} {json.dumps(step.arguments, ensure_ascii=False)} -> {status}: {result}")
    if len(trajectory.steps) > _MOST_CALLS:
        lines.append(f"[... {len(trajectory.steps) - _MOST_CALLS} more calls]")
    lines += ["", "Final reply:", trajectory.final_reply or "(none)"]
    return "\n".join(lines)


def parse_verdict(reply: str) -> tuple[float, str]:
    """(score, reasoning) from the judge's reply: the outermost ``{...}`` in it, as JSON.

    Raises ValueError when there is none, it is not JSON, or ``score`` is not a number in [0, 1].
    """
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end < start:
        raise ValueError(f"no JSON object in {reply[:80]!r}")
    try:
        data = json.loads(reply[start : end + 1])
    except ValueError as e:
        raise ValueError(f"not JSON: {e}") from e
    score = data.get("score") if isinstance(data, dict) else None
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        raise ValueError(f"score must be a number from 0 to 1, got {score!r}")
    return float(score), str(data.get("reasoning", "")).strip()


def judge_names(cases: Sequence[Case], default: str | None) -> dict[str | None, str]:
    """The judges the judged cases need (those with ``expect.judge``; none when no case has one): each
    ``expect.judge.model`` (key: that model) and ``default`` (key None) for the cases that name none,
    mapped to the ``-p``-style name to resolve, in first-use order.

    Raises UserError for a judged case with no model when there is no default, or one whose
    ``expect.judge.model`` is of a kind that cannot judge (its ``not_a_judge``: ``scripted``), at the case's
    line; such a ``default`` is refused where it is given (refuse_judge, runner.spec.config).
    """
    names: dict[str | None, str] = {}
    for case in cases:
        if case.expect.judge is None:
            continue
        model = case.expect.judge.model
        resolved = model or default
        if resolved is None:
            raise UserError(f"case {case.full_id} has expect.judge but no judge model",
                            hint="give --judge MODEL, judge: in tooltrial.yml, or expect.judge.model in the case")
        why = _not_a_judge(model)
        if why:
            raise UserError(why, Location(str(case.source), case.line), "expect.judge.model", hint=JUDGE_HINT)
        names.setdefault(model, resolved)
    return names


def refuse_judge(judge: str | None) -> None:
    """Refuse a ``--judge`` of a kind that cannot judge (``--judge scripted``) before anything runs.
    Raises UserError (exit 4)."""
    why = _not_a_judge(judge)
    if why:
        raise UserError(f"--judge {judge}: {why}", hint=JUDGE_HINT)


def _not_a_judge(name: str | None) -> str | None:
    """Why the provider ``name`` cannot judge (runner.providers.kind.ProviderKind.not_a_judge), or None."""
    return provider_kind(name, (), PROVIDER_KINDS).not_a_judge if name is not None else None


def resolve_judges(
    cases: Sequence[Case], default: str | None, resolve: Callable[[str], ProviderSpec]
) -> dict[str | None, ProviderSpec]:
    """The judge providers the cases need (judge_names), each resolved by ``resolve``: key as there.

    Raises UserError as judge_names does, or for a model ``resolve`` cannot reach.
    """
    return {model: resolve(name) for model, name in judge_names(cases, default).items()}
