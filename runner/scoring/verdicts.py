"""What a rescore (``tooltrial rescore``) changed of one run's verdicts: its status, and each check that now
passes, fails, is new or is gone, with the check's message saying why.

A check of the run before is matched to one after by its name and its place among the checks of that name
(the second ``files`` check before to the second ``files`` check after), so an edited needle reads as one check
whose verdict changed, not one gone and one new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.checks.base import CheckResult
from runner.run.record import RunRecord


@dataclass(frozen=True)
class CheckChange:
    """One check whose verdict changed: ``check`` (its name), ``before`` and ``after`` (``pass``, ``fail``, or
    None where it was not made), and ``message``, why: the check's message after (before, for one gone)."""

    check: str
    before: str | None
    after: str | None
    message: str


@dataclass(frozen=True)
class VerdictChange:
    """A run whose verdicts changed: ``case``, ``arm`` (its label), ``run`` (its number), its status ``before``
    and ``after``, and ``checks``, each check whose verdict changed."""

    case: str
    arm: str
    run: int
    before: str
    after: str
    checks: tuple[CheckChange, ...]

    def to_dict(self) -> dict[str, Any]:
        """``{case, arm, run, before, after, checks: [{check, before, after, message}]}``, as report.json's
        ``rescored.changed`` holds it."""
        return {"case": self.case, "arm": self.arm, "run": self.run, "before": self.before, "after": self.after,
                "checks": [vars(c) for c in self.checks]}


def verdict_change(before: RunRecord, after: RunRecord) -> VerdictChange | None:
    """What changed between ``before`` (a saved run) and ``after`` (it rescored): None when its status and every
    check's verdict are as they were."""
    checks = tuple(_check_changes(before.checks, after.checks))
    if before.status == after.status and not checks:
        return None
    return VerdictChange(after.case, after.arm, after.run, str(before.status), str(after.status), checks)


def _check_changes(before: Sequence[CheckResult], after: Sequence[CheckResult]) -> list[CheckChange]:
    old, new = _keyed(before), _keyed(after)
    changes = []
    for key in dict.fromkeys([*new, *old]):
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and was.passed == now.passed:
            continue
        message = now.message if now is not None else was.message if was is not None else ""
        changes.append(CheckChange(key[0], _verdict(was), _verdict(now), message))
    return changes


def _keyed(checks: Sequence[CheckResult]) -> dict[tuple[str, int], CheckResult]:
    """Each check by ``(name, its place among the checks of that name)``."""
    seen: dict[str, int] = {}
    keyed = {}
    for check in checks:
        place = seen.get(check.check, 0)
        seen[check.check] = place + 1
        keyed[(check.check, place)] = check
    return keyed


def _verdict(check: CheckResult | None) -> str | None:
    return None if check is None else "pass" if check.passed else "fail"
