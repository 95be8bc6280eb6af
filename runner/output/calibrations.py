"""Where judge calibrations are kept: one JSON file, each calibration keyed by the rubric's fingerprint (the
SHA-256 that run provenance records, runner.spec.fingerprint.digest) and ``judge_key``, the fingerprint of what
the judge is (runner.checks.judge.judge_key: a scripted judge's file's text, a live judge's model string and
answer-changing request parameters), kept as ``judge_identity`` beside it; ``judge`` is the name it was given,
for reading only. ``tooltrial judge calibrate`` writes it; ``run`` reads it to mark the runs of uncalibrated
judges. An entry with no ``judge_key`` (written before judges were keyed so) matches no judge.

The file is ``--calibrations FILE``, else ``$TOOLTRIAL_CALIBRATIONS``, else
``$XDG_CACHE_HOME/tooltrial/calibrations.json`` (``~/.cache/tooltrial/calibrations.json`` when that is unset).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.errors import Location, UserError
from runner.output.store import to_json, write_replace

ENV = "TOOLTRIAL_CALIBRATIONS"
_FIELDS: dict[str, type | tuple[type, ...]] = {"rubric": str, "judge": str, "items": int, "agreed": int, "accuracy": (int, float)}


def calibrations_path(explicit: Path | None, env: Mapping[str, str]) -> Path:
    """The calibrations file: ``explicit``, else ``env[TOOLTRIAL_CALIBRATIONS]``, else the user's cache folder's."""
    if explicit is not None:
        return explicit
    if env.get(ENV):
        return Path(env[ENV])
    cache = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(cache) / "tooltrial" / "calibrations.json"


def read_calibrations(path: Path) -> list[dict[str, Any]]:
    """The calibrations kept in ``path`` (none when it does not exist), each a dict as ``calibration_entry``
    makes. Raises UserError for a file that cannot be read or is not one tooltrial wrote."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the calibrations file: {e}", Location(str(path))) from e
    try:
        data = json.loads(text)
    except ValueError as e:
        raise _foreign(path, f"not JSON ({e})") from e
    entries = data.get("calibrations") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise _foreign(path, "it has no calibrations list")
    for i, entry in enumerate(entries):
        wrong = [k for k, kind in _FIELDS.items() if not isinstance(entry, dict) or not isinstance(entry.get(k), kind)]
        kappa = entry.get("kappa") if isinstance(entry, dict) else None
        if not wrong and kappa is not None and (isinstance(kappa, bool) or not isinstance(kappa, (int, float))
                                                or not -1 <= kappa <= 1):
            wrong = ["kappa"]
        if not wrong and not isinstance(entry.get("judge_key", ""), str):
            wrong = ["judge_key"]
        if wrong:
            raise _foreign(path, f"calibrations[{i}] has no valid {wrong[0]}")
    return entries


def find_calibration(entries: list[dict[str, Any]], rubric: str, judge_key: str) -> dict[str, Any] | None:
    """The calibration of the rubric fingerprinted ``rubric`` by the judge keyed ``judge_key``, or None."""
    return next((e for e in entries if e["rubric"] == rubric and e.get("judge_key") == judge_key), None)


def save_calibration(path: Path, entry: dict[str, Any]) -> None:
    """Keep ``entry`` in ``path``, replacing the earlier calibration of its rubric and judge key (an atomic
    write). Raises UserError as read_calibrations, or when the file cannot be written."""
    kept = [e for e in read_calibrations(path)
            if (e["rubric"], e.get("judge_key")) != (entry["rubric"], entry["judge_key"])]
    try:
        write_replace(path, to_json({"calibrations": [*kept, entry]}))
    except OSError as e:
        raise UserError(f"cannot write the calibrations file: {e}", Location(str(path)),
                        hint="give a file that can be written with --calibrations FILE") from e


def _foreign(path: Path, why: str) -> UserError:
    return UserError(f"{path} is not a calibrations file: {why}", Location(str(path)),
                     hint="give the file tooltrial judge calibrate wrote, or remove it to start afresh")
