"""``run``'s judge options: ``--judge-repeats K``, ``--calibrations FILE`` and ``--require-calibrated-judges``,
made into the runs' JudgeSettings (runner.checks.base) with every judged case's calibration looked up first."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.checks.base import CALIBRATED, JudgeSettings
from runner.checks.judge import calibration
from runner.cli.options import positive_int
from runner.errors import UserError
from runner.output.calibrations import calibrations_path, read_calibrations
from runner.providers.kind import ProviderSpec
from runner.spec.case import Case
from runner.text import printable


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """The judge options of ``run``."""
    parser.add_argument("--judge-repeats", type=positive_int, default=1, metavar="K",
                        help="ask the judge K times per run: the score is the mean, the spread is reported apart "
                        "from run-to-run variance (default 1)")
    parser.add_argument("--calibrations", type=Path, metavar="FILE",
                        help="the judge calibrations tooltrial judge calibrate kept (default: $TOOLTRIAL_CALIBRATIONS, "
                        "else ~/.cache/tooltrial/calibrations.json)")
    parser.add_argument("--require-calibrated-judges", action="store_true",
                        help="refuse to run cases whose judge is not calibrated on their rubric (or below their "
                        "min_kappa, default 0.6)")


def judge_settings(args: argparse.Namespace, cases: Sequence[Case], judges: Mapping[str | None, ProviderSpec],
                   env: Mapping[str, str] = os.environ) -> JudgeSettings:
    """The runs' JudgeSettings: ``--judge-repeats`` and the calibrations kept (read only when some case is judged),
    by rubric fingerprint and judge key (what each judge is: runner.checks.judge.judge_key).

    Raises UserError for a calibrations file that cannot be read and, with ``--require-calibrated-judges``, naming
    each judged case whose judge (``judges``, resolve_judges') is not calibrated on its rubric, or whose kappa is
    below the floor (the case's ``min_kappa``, else tooltrial's default, DEFAULT_MIN_KAPPA)."""
    if not judges:
        return JudgeSettings(args.judge_repeats)
    kept = read_calibrations(calibrations_path(args.calibrations, env))
    settings = JudgeSettings(args.judge_repeats, {(e["rubric"], e["judge_key"]): e.get("kappa") for e in kept
                                                  if "judge_key" in e})
    if args.require_calibrated_judges:
        refused = []
        for case in cases:
            if case.expect.judge is not None:
                mark = calibration(case.expect.judge, judges[case.expect.judge.model], settings)
                if mark.status != CALIBRATED:
                    floor = "the case's" if case.expect.judge.min_kappa is not None else "tooltrial's default"
                    why = (f"kappa {mark.kappa:.2f} < min_kappa {mark.min_kappa:.2f}, {floor}"
                           if mark.kappa is not None and mark.min_kappa is not None else mark.status)
                    refused.append(f"{case.full_id} (judge {printable(mark.judge)}: {why})")
        if refused:
            raise UserError(f"--require-calibrated-judges: {len(refused)} judged case(s) have no calibrated judge: "
                            + ", ".join(refused),
                            hint="calibrate each judge on the case's rubric: tooltrial judge calibrate LABELS.yml -j "
                            "JUDGE (docs/judges.md), or give --calibrations FILE")
    return settings
