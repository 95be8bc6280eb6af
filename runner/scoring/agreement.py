"""How well a judge agrees with a person: accuracy, Cohen's kappa with its 95% interval, the confusion matrix.

Exact arithmetic on the counts of (person's verdict, judge's verdict) pairs, with no third-party dependency
(the formulas are a few lines; SciPy and statsmodels are not among tooltrial's dependencies).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from runner.scoring.stats import Z_95

VERDICTS = ("pass", "fail")  # the rows and columns of every confusion matrix, in this order


@dataclass(frozen=True)
class Agreement:
    """A judge's verdicts against a person's on the same items.

    Attributes:
        items: how many items were judged by both.
        agreed: on how many the two verdicts were the same.
        confusion: ``confusion[person][judge]``, the count of items the person gave ``person`` and the judge
            ``judge`` (each ``pass`` or ``fail``).
        accuracy: ``agreed / items``, in [0, 1].
        kappa: Cohen's kappa (``cohen_kappa``), None where it is undefined (the person or the judge gave one
            verdict only: ``one_sided``).
        low, high: its 95% interval (``kappa_interval``), None with ``kappa``.
    """

    items: int
    agreed: int
    confusion: dict[str, dict[str, int]]
    accuracy: float
    kappa: float | None
    low: float | None
    high: float | None


def agreement(pairs: Iterable[tuple[str, str]]) -> Agreement:
    """The agreement of ``pairs`` of (person's verdict, judge's verdict), each ``pass`` or ``fail``.

    Raises ValueError for no pairs or a verdict that is neither.
    """
    confusion = {person: dict.fromkeys(VERDICTS, 0) for person in VERDICTS}
    for person, judge in pairs:
        if person not in VERDICTS or judge not in VERDICTS:
            raise ValueError(f"verdicts are pass or fail, got {person!r} and {judge!r}")
        confusion[person][judge] += 1
    table = [[confusion[p][j] for j in VERDICTS] for p in VERDICTS]
    items = sum(map(sum, table))
    if not items:
        raise ValueError("no items to compare")
    agreed = sum(table[i][i] for i in range(len(VERDICTS)))
    kappa = cohen_kappa(table)
    low, high = (None, None) if kappa is None else kappa_interval(table)
    return Agreement(items, agreed, confusion, agreed / items, kappa, low, high)


def _proportions(table: list[list[int]]) -> tuple[list[list[float]], list[float], list[float], float]:
    """The cell proportions ``p[i][j]``, the row (person) and column (judge) margins, and chance agreement."""
    n = sum(map(sum, table))
    p = [[count / n for count in row] for row in table]
    rows = [sum(row) for row in p]
    cols = [sum(p[i][j] for i in range(len(p))) for j in range(len(p))]
    return p, rows, cols, sum(r * c for r, c in zip(rows, cols, strict=True))


def cohen_kappa(table: list[list[int]]) -> float | None:
    """Cohen's kappa of a square table of counts (rows: one rater, columns: the other).

    ``(p_o - p_e) / (1 - p_e)``: the observed agreement ``p_o`` (the diagonal's share) beyond the agreement
    ``p_e`` two raters giving their verdicts at random with the same shares would reach, as a share of the most
    that could be reached beyond it (Cohen 1960, "A coefficient of agreement for nominal scales",
    Educational and Psychological Measurement 20(1), eq. 1). None (undefined) where a rater gave one verdict
    only (``one_sided``): then ``p_o = p_e`` whatever the other rater said (with column margin ``(1, 0)``,
    ``p_o = p_11 = p_1.`` and ``p_e = p_1. * 1``), so kappa is 0 (0/0 when both gave one verdict), its standard
    error 0, and it measures nothing.
    """
    if one_sided(table):
        return None
    p, _, _, expected = _proportions(table)
    observed = sum(p[i][i] for i in range(len(p)))
    return (observed - expected) / (1 - expected)


def one_sided(table: list[list[int]]) -> list[str]:
    """Which raters of a table of counts gave every item the same verdict: ``person`` (the rows), ``judge``
    (the columns), in that order; [] when each gave more than one."""
    rows = [sum(row) for row in table]
    cols = [sum(row[j] for row in table) for j in range(len(table))]
    return [rater for rater, margin in (("person", rows), ("judge", cols)) if sum(m > 0 for m in margin) < 2]


def kappa_standard_error(table: list[list[int]]) -> float:
    """The large-sample standard error of Cohen's kappa where kappa is not assumed 0.

    ``sqrt((A + B - C) / (n (1 - p_e)^2))`` with ``A = sum_i p_ii (1 - (p_i. + p_.i)(1 - k))^2``,
    ``B = (1 - k)^2 sum_{i != j} p_ij (p_.i + p_j.)^2`` and ``C = (k - p_e (1 - k))^2`` (Fleiss, Cohen and
    Everitt 1969, "Large sample standard errors of kappa and weighted kappa", Psychological Bulletin 72(5),
    eq. 13). Raises ValueError where kappa is undefined.
    """
    kappa = cohen_kappa(table)
    if kappa is None:
        raise ValueError("kappa is undefined: a rater gave one verdict only")
    p, rows, cols, expected = _proportions(table)
    size = range(len(p))
    a = sum(p[i][i] * (1 - (rows[i] + cols[i]) * (1 - kappa)) ** 2 for i in size)
    b = (1 - kappa) ** 2 * sum(p[i][j] * (cols[i] + rows[j]) ** 2 for i in size for j in size if i != j)
    c = (kappa - expected * (1 - kappa)) ** 2
    n = sum(map(sum, table))
    return math.sqrt(max(a + b - c, 0.0) / (n * (1 - expected) ** 2))


def kappa_interval(table: list[list[int]], z: float = Z_95) -> tuple[float, float]:
    """Kappa's two-sided interval, ``kappa +- z * kappa_standard_error``, held to [-1, 1] (95% by default).

    A normal approximation: with few items (under about 30) it is rough, and it is wider than it looks.
    Raises ValueError where kappa is undefined.
    """
    kappa = cohen_kappa(table)
    if kappa is None:
        raise ValueError("kappa is undefined: a rater gave one verdict only")
    half = z * kappa_standard_error(table)
    return max(-1.0, kappa - half), min(1.0, kappa + half)
