"""The judge of a calibration (``tooltrial judge calibrate``): each labelled item graded with the rubric, as the
judge check grades a run (runner.checks.judge: the same system prompt, user message and verdict parsing), and
its score turned into a verdict at the threshold."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.checks.judge import DEFAULT_THRESHOLD, SYSTEM, judge_prompt, parse_verdict
from runner.errors import UserError
from runner.providers.base import NoVerdict, OutOfTime, ProviderError, Usage
from runner.providers.kind import ProviderSpec
from runner.run.trajectory import Step, Trajectory
from runner.spec.case import Case
from runner.spec.expect import Expect, JudgeExpect
from runner.spec.labels import LabelItem, Labels


@dataclass(frozen=True)
class Judged:
    """The judge's grade of one item: ``score`` in [0, 1] and its ``reasoning``, ``verdict`` (``pass`` when the
    score reaches the threshold, else ``fail``), or ``problem`` (why the reply held no usable verdict: score and
    verdict None, the item left out of the agreement); ``usage``: the judge's tokens and cost (USD), None when
    it reported none."""

    item: LabelItem
    score: float | None
    reasoning: str
    verdict: str | None
    problem: str | None = None
    usage: Usage | None = None


def transcript(item: LabelItem) -> Trajectory:
    """A transcript item as the trajectory the judge reads: its turns, its calls (each a step of turn 0), its reply."""
    steps = [Step(0, f"call-{i}", c.name, c.arguments, c.result, c.error, 0.0) for i, c in enumerate(item.calls, 1)]
    return Trajectory(messages=[{"role": "user", "content": turn} for turn in item.turns], steps=steps,
                      replies=[item.reply])


def judge_items(labels: Labels, trajectories: Sequence[Trajectory], judge: ProviderSpec) -> list[Judged]:
    """Each item of ``labels`` (its trajectory at the same index) graded by ``judge``, in order.

    Raises UserError when the judge cannot be reached or runs out of time (nothing is compared then).
    """
    threshold = DEFAULT_THRESHOLD if labels.threshold is None else labels.threshold
    case = Case(group="labels", id="calibration", source=Path(labels.path), line=1, turns=(),
                expect=Expect(judge=JudgeExpect(labels.rubric, threshold=labels.threshold)))
    provider = judge.create(case)
    judged = []
    for item, trajectory in zip(labels.items, trajectories, strict=True):
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": judge_prompt(labels.rubric, trajectory)}]
        try:
            reply = provider.complete(messages, [])
        except NoVerdict as e:  # the judge says why it gives none (a scripted judge: no rule matches)
            judged.append(Judged(item, None, "", None, str(e)))
            continue
        except (OutOfTime, ProviderError) as e:
            raise UserError(f"judge {judge.name} failed on {item.name}: {e}",
                            hint="check the judge's alias and that its server answers (tooltrial doctor)") from e
        try:
            score, reasoning = parse_verdict(reply.content or "")
        except ValueError as e:
            judged.append(Judged(item, None, "", None, str(e), reply.usage))
            continue
        judged.append(Judged(item, score, reasoning, "pass" if score >= threshold else "fail", usage=reply.usage))
    return judged
