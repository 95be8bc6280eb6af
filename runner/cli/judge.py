"""``tooltrial judge calibrate LABELS.yml -j MODEL``: a judge's verdicts on items a person labelled, compared with
the person's (accuracy, Cohen's kappa with its interval, the confusion matrix), printed and kept by rubric
fingerprint and what the judge is (runner.checks.judge.judge_key; runner.output.calibrations)."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.checks.calibrate import Judged, judge_items, transcript
from runner.checks.judge import DEFAULT_MIN_KAPPA, DEFAULT_THRESHOLD, judge_key, refuse_judge
from runner.errors import ExitCode, UserError
from runner.output.calibrations import calibrations_path, save_calibration
from runner.output.load import read_run
from runner.providers.kind import ProviderSpec
from runner.providers.registry import precheck, resolve_provider
from runner.run.trajectory import Trajectory
from runner.scoring.agreement import VERDICTS, Agreement, agreement, one_sided
from runner.spec.config import load_config
from runner.spec.fingerprint import digest
from runner.spec.labels import Labels, read_labels
from runner.sums import known_sum
from runner.text import printable


def add(sub: argparse._SubParsersAction) -> None:
    """The ``judge`` subcommand's parser, with ``calibrate``."""
    parser = sub.add_parser("judge", help="calibrate a judge model against a person's verdicts")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=type(parser))
    calibrate = actions.add_parser("calibrate", help="judge labelled items and report agreement with the person")
    calibrate.add_argument("labels", type=Path, metavar="LABELS.yml", help="the rubric and the labelled items (docs/judges.md)")
    calibrate.add_argument("-j", "--judge", metavar="MODEL",
                           help="the judge model or alias (default: the case's expect.judge.model, else judge: in tooltrial.yml)")
    calibrate.add_argument("--config", metavar="FILE", help="project config (default: ./tooltrial.yml if it exists)")
    calibrate.add_argument("--calibrations", type=Path, metavar="FILE",
                           help="where calibrations are kept (default: $TOOLTRIAL_CALIBRATIONS, else "
                                "~/.cache/tooltrial/calibrations.json)")


def command(args: argparse.Namespace) -> int:
    """Judge each item of the labels file, print the agreement and keep it; 0. Raises UserError for a bad labels
    file or run file, no judge, a judge that cannot be reached, or no item with a usable verdict."""
    labels = read_labels(args.labels)
    config = load_config(args.config)
    name = args.judge or labels.model or config.judge
    refuse_judge(name)
    if name is None:
        raise UserError("judge calibrate needs a judge model",
                        hint="give -j MODEL, the case's expect.judge.model, or judge: in tooltrial.yml")
    precheck(name, config)
    trajectories = [_trajectory(labels, i) for i in range(len(labels.items))]
    judge = resolve_provider(name, config)
    judged = judge_items(labels, trajectories, judge)
    usable = [j for j in judged if j.verdict is not None]
    if not usable:
        raise UserError(f"judge {name} gave no usable verdict on any item: {judged[0].problem}",
                        hint='a judge answers {"score": 0..1, "reasoning": "..."}; name a model that follows instructions')
    found = agreement((j.item.verdict, j.verdict) for j in usable if j.verdict is not None)
    path = calibrations_path(args.calibrations, os.environ)
    save_calibration(path, calibration_entry(labels, judge, found))
    sys.stdout.write(render(labels, name, found, judged) + f"kept in {path}\n")
    return ExitCode.OK


def _trajectory(labels: Labels, index: int) -> Trajectory:
    """What the judge reads of item ``index``: its transcript, or its run file's messages, calls and reply."""
    item = labels.items[index]
    if item.run is None:
        return transcript(item)
    if not item.run.is_file():
        raise labels.error(f"run file {item.run} is not there", item, "run",
                           hint="give a run file, results/<run-id>/runs/*.json, relative to the labels file")
    try:
        record = read_run(item.run)
    except UserError as e:
        raise labels.error(f"run file {item.run}: {e.message}", item, "run", hint=e.hint) from e
    return Trajectory(messages=record.messages, steps=record.steps, replies=[record.final_reply])


def calibration_entry(labels: Labels, judge: ProviderSpec, found: Agreement) -> dict[str, Any]:
    """The calibration as the calibrations file keeps it: the rubric's fingerprint, the judge's key (judge_key)
    and what it is (``judge_identity``), its name as given, the threshold, the agreement's figures, the labels
    file and when (ISO 8601, UTC)."""
    return {"rubric": digest(labels.rubric), "judge_key": judge_key(judge), "judge_identity": judge.judge_identity,
            "judge": judge.name, "threshold": DEFAULT_THRESHOLD if labels.threshold is None else labels.threshold,
            "items": found.items, "agreed": found.agreed, "accuracy": found.accuracy,
            "kappa": found.kappa, "kappa_low": found.low, "kappa_high": found.high, "confusion": found.confusion,
            "labels": str(labels.path), "calibrated": datetime.now(UTC).isoformat(timespec="seconds")}


def render(labels: Labels, judge: str, found: Agreement, judged: list[Judged]) -> str:
    """The calibration as printed: the figures (kappa undefined, and why, when a rater gave one verdict only),
    the floor kappa is held to and whether it reaches it, the confusion matrix, the judge's tokens and USD when
    it reported them, then each item the two disagreed on and each the judge gave no usable verdict on
    (untrusted text made printable)."""
    threshold = DEFAULT_THRESHOLD if labels.threshold is None else labels.threshold
    lines = [f"judge {printable(judge)} on {labels.path} (rubric {digest(labels.rubric)[:12]}, threshold {threshold:g})",
             f"  items:     {found.items}",
             f"  accuracy:  {found.accuracy:.3f} ({found.agreed} of {found.items} agreed)",
             f"  kappa:     {_kappa(found)}",
             _floor(labels.min_kappa, found.kappa),
             "",
             f"  {'':<14}{'judge pass':>12}{'judge fail':>12}"]
    lines += [f"  {'person ' + p:<14}" + "".join(f"{found.confusion[p][j]:>12}" for j in VERDICTS) for p in VERDICTS]
    tokens = known_sum(j.usage.total_tokens for j in judged if j.usage is not None)
    cost = known_sum(j.usage.cost for j in judged if j.usage is not None)
    if tokens is not None or cost is not None:
        lines.append("  judge used: " + ", ".join(part for part in (
            None if tokens is None else f"{tokens} tokens", None if cost is None else f"${cost:.4f}") if part))
    for j in judged:
        if j.problem is not None:
            lines.append(f"  no verdict: {printable(j.item.name)}: {printable(j.problem)}")
        elif j.verdict != j.item.verdict:
            why = f": {printable(j.reasoning)}" if j.reasoning else ""
            lines.append(f"  disagreed: {printable(j.item.name)}: person {j.item.verdict}, judge {j.verdict} "
                         f"(score {j.score:.2f}{why})")
    return "\n".join(lines) + "\n"


def _kappa(found: Agreement) -> str:
    """Kappa and its interval, or why it is undefined: the rater(s) that gave every item one verdict."""
    if found.kappa is not None:
        return f"{found.kappa:.3f} (95% interval {found.low:.3f} to {found.high:.3f})"
    table = [[found.confusion[p][j] for j in VERDICTS] for p in VERDICTS]
    raters = one_sided(table)
    said = {"person": next(p for p in VERDICTS if any(found.confusion[p].values())),
            "judge": next(j for j in VERDICTS if any(found.confusion[p][j] for p in VERDICTS))}
    gave = " and ".join(f"the {r} gave {said[r]}" for r in raters)
    return f"undefined: {gave} on every item, so the agreement is all chance (kappa needs both verdicts from each)"


def _floor(least: float | None, kappa: float | None) -> str:
    """The line saying which least kappa applies (the case's ``min_kappa``, else DEFAULT_MIN_KAPPA) and whether
    kappa reaches it."""
    floor, whose = (DEFAULT_MIN_KAPPA, "tooltrial's default: substantial agreement, Landis and Koch 1977") \
        if least is None else (least, "the case's")
    reached = kappa is not None and kappa >= floor
    return f"  min_kappa: {floor:g} ({whose}): {'reached, calibrated' if reached else 'not reached, under-calibrated'}"
