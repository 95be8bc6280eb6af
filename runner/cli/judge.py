"""``tooltrial judge calibrate LABELS.yml -j MODEL``: a judge's verdicts on items a person labelled, compared with
the person's (accuracy, Cohen's kappa with its interval, the confusion matrix), printed and kept by rubric
fingerprint and judge (runner.output.calibrations)."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.checks.calibrate import Judged, judge_items, transcript
from runner.checks.judge import DEFAULT_THRESHOLD, refuse_judge
from runner.errors import ExitCode, UserError
from runner.output.calibrations import calibrations_path, save_calibration
from runner.output.load import read_run
from runner.providers.registry import precheck, resolve_provider
from runner.run.trajectory import Trajectory
from runner.scoring.agreement import VERDICTS, Agreement, agreement
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
    judged = judge_items(labels, trajectories, resolve_provider(name, config))
    usable = [j for j in judged if j.verdict is not None]
    if not usable:
        raise UserError(f"judge {name} gave no usable verdict on any item: {judged[0].problem}",
                        hint='a judge answers {"score": 0..1, "reasoning": "..."}; name a model that follows instructions')
    found = agreement((j.item.verdict, j.verdict) for j in usable if j.verdict is not None)
    path = calibrations_path(args.calibrations, os.environ)
    save_calibration(path, calibration_entry(labels, name, found))
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


def calibration_entry(labels: Labels, judge: str, found: Agreement) -> dict[str, Any]:
    """The calibration as the calibrations file keeps it: the rubric's fingerprint, the judge, the threshold,
    the agreement's figures, the labels file and when (ISO 8601, UTC)."""
    return {"rubric": digest(labels.rubric), "judge": judge,
            "threshold": DEFAULT_THRESHOLD if labels.threshold is None else labels.threshold,
            "items": found.items, "agreed": found.agreed, "accuracy": found.accuracy,
            "kappa": found.kappa, "kappa_low": found.low, "kappa_high": found.high, "confusion": found.confusion,
            "labels": str(labels.path), "calibrated": datetime.now(UTC).isoformat(timespec="seconds")}


def render(labels: Labels, judge: str, found: Agreement, judged: list[Judged]) -> str:
    """The calibration as printed: the figures, the confusion matrix, the judge's tokens and USD when it reported
    them, then each item the two disagreed on and each the judge gave no usable verdict on (untrusted text made
    printable)."""
    threshold = DEFAULT_THRESHOLD if labels.threshold is None else labels.threshold
    kappa = "undefined (both gave one verdict only)" if found.kappa is None else (
        f"{found.kappa:.3f} (95% interval {found.low:.3f} to {found.high:.3f})")
    lines = [f"judge {printable(judge)} on {labels.path} (rubric {digest(labels.rubric)[:12]}, threshold {threshold:g})",
             f"  items:     {found.items}",
             f"  accuracy:  {found.accuracy:.3f} ({found.agreed} of {found.items} agreed)",
             f"  kappa:     {kappa}",
             *_least(labels.min_kappa, found.kappa),
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
            lines.append(f"  disagreed: {printable(j.item.name)}: person {j.item.verdict}, judge {j.verdict} "
                         f"(score {j.score:.2f}: {printable(j.reasoning)})")
    return "\n".join(lines) + "\n"


def _least(least: float | None, kappa: float | None) -> list[str]:
    """The line saying whether kappa reaches the case's ``min_kappa``; none when it sets none."""
    if least is None:
        return []
    reached = kappa is not None and kappa >= least
    return [f"  min_kappa: {least:g} (the case's): {'reached, calibrated' if reached else 'not reached, under-calibrated'}"]
