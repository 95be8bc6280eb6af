"""Synthetic run records for tests of aggregation, gates, results files and reports."""

from __future__ import annotations

from runner.checks.base import CheckResult
from runner.run.record import ERROR, FAIL, PASS, RunRecord

_KINDS = {"E": "provider_error", "T": "turn_limit", "I": "internal", "W": "workspace"}


def record(case: str, status: str, run: int = 1, prompt: str = "a", provider: str = "scripted", **fields) -> RunRecord:
    """A RunRecord; a failed one carries one failed check, an error one a cause."""
    made = RunRecord(case=case, provider=provider, prompt=prompt, run=run, status=status, **fields)
    if status == FAIL and not made.checks:
        made.checks = [CheckResult("verify", False, "verify failed (exit 1): test -f out.txt")]
    if status == ERROR and made.cause is None:
        made.cause, made.error_kind = "model unreachable", made.error_kind or "provider_error"
    return made


def runs(case: str, pattern: str, prompt: str = "a", **fields) -> list[RunRecord]:
    """One record per letter of ``pattern`` (runs 1, 2, ...): P pass, F fail, E infrastructure error, T turn limit,
    I internal error, W workspace (case data) error."""
    out = []
    for number, letter in enumerate(pattern, start=1):
        status = {"P": PASS, "F": FAIL}.get(letter, ERROR)
        out.append(record(case, status, number, prompt, error_kind=_KINDS.get(letter), **fields))
    return out


def matrix(cells: dict[tuple[str, str], str]) -> list[RunRecord]:
    """Records for ``{(case, prompt): pattern}``."""
    return [r for (case, prompt), pattern in cells.items() for r in runs(case, pattern, prompt)]

