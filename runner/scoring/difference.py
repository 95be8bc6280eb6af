"""The interval of a paired difference: B's figure minus A's over the same (case, run) pairs, with its 95%
confidence interval. For pass rates Newcombe's square-and-add interval for paired proportions; for outcome and
process scores the percentile interval of a seeded paired bootstrap (the normal interval above 500 pairs). Standard library only: neither scipy
nor statsmodels has a paired-proportion interval, and the bootstrap is a few lines."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from runner.scoring.stats import Z_95, wilson

RESAMPLES = 2000  # bootstrap resamples: the interval's ends move by about 0.005 between seeds at this count
SEED = 0  # the bootstrap's seed, so the same runs give the same interval in every report
BOOTSTRAP_LIMIT = 500  # pairs; above, the normal interval (at 500 its 1.96 and the t quantile, 1.965, differ by 0.3%)


@dataclass(frozen=True)
class Difference:
    """B minus A: ``estimate`` and its 95% confidence interval ``low`` to ``high``, all in the figure's units
    (a pass rate's or a score's, so between -1 and 1), over ``pairs`` paired runs; ``method`` names the interval
    (``newcombe``, ``bootstrap`` or ``normal``)."""

    estimate: float
    low: float
    high: float
    pairs: int
    method: str

    def text(self, a: str, b: str) -> str:
        """``b - a = +0.08 (-0.03 to +0.19)``."""
        return f"{b} - {a} = {self.estimate:+.2f} ({self.low:+.2f} to {self.high:+.2f})"


def newcombe_paired(both: int, a_only: int, b_only: int, neither: int, z: float = Z_95) -> Difference:
    """B's pass rate minus A's over paired runs, with Newcombe's interval (method 10, the square-and-add of two
    Wilson intervals corrected for the pairs' correlation).

    ``both`` pairs passed in both arms, ``a_only`` in A alone (pass->fail), ``b_only`` in B alone (fail->pass),
    ``neither`` in neither. With n pairs, B's rate p1 = (both + b_only) / n with Wilson interval (l1, u1), A's
    p2 = (both + a_only) / n with (l2, u2), and phi the correlation of the table, ``(both * neither -
    a_only * b_only)`` less n/2 when above n/2, 0 up to n/2, over the root of the four margins' product (0 when a
    margin is 0): low = (p1 - p2) - sqrt((p1 - l1)^2 + (u2 - p2)^2 - 2 phi (p1 - l1)(u2 - p2)), high = (p1 - p2)
    + sqrt((p2 - l2)^2 + (u1 - p1)^2 - 2 phi (p2 - l2)(u1 - p1)). Newcombe 1998, "Improved confidence intervals
    for the difference between binomial proportions based on paired data", Statistics in Medicine
    17:2635-2650, method 10; as written in Fagerland, Lydersen and Laake 2017, "Statistical Analysis of
    Contingency Tables", section 8.5 (their example 59, 6, 16, 80 gives -0.0621, -0.1186 to -0.0046).
    Raises ValueError for a negative count or no pairs.
    """
    counts = (both, a_only, b_only, neither)
    if min(counts) < 0 or not sum(counts):
        raise ValueError(f"need counts >= 0 and at least one pair, got {counts}")
    n = sum(counts)
    p1, p2 = (both + b_only) / n, (both + a_only) / n
    l1, u1 = wilson(both + b_only, n, z)
    l2, u2 = wilson(both + a_only, n, z)
    margins = (both + b_only) * (a_only + neither) * (both + a_only) * (b_only + neither)
    cross = both * neither - a_only * b_only
    phi = 0.0 if not margins else (cross - n / 2 if cross > n / 2 else min(cross, 0)) / math.sqrt(margins)
    low = p1 - p2 - math.sqrt(max(0.0, (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2)))
    high = p1 - p2 + math.sqrt(max(0.0, (p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1)))
    return Difference(p1 - p2, max(-1.0, low), min(1.0, high), n, "newcombe")


def mean_difference(differences: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED) -> Difference | None:
    """The mean of the paired ``differences`` (B's score minus A's, one a pair) with its 95% interval. Up to
    BOOTSTRAP_LIMIT pairs, the percentile interval of a paired bootstrap: ``resamples`` means of as many
    differences drawn with replacement, their 2.5th and 97.5th percentiles (Efron and Tibshirani 1993, "An
    Introduction to the Bootstrap", chapter 13), seeded, so the same differences give the same interval. Above
    it, the normal interval the bootstrap converges to, mean +- 1.96 s / sqrt(n) (s the sample standard
    deviation; the central limit theorem), which costs nothing where a bootstrap of 10,000 pairs takes seconds.
    None without any difference."""
    if not differences:
        return None
    values = list(differences)
    mean = statistics.fmean(values)
    if len(values) > BOOTSTRAP_LIMIT:
        half = Z_95 * statistics.stdev(values) / math.sqrt(len(values))
        return Difference(mean, mean - half, mean + half, len(values), "normal")
    draw = random.Random(seed).choices
    means = sorted(statistics.fmean(draw(values, k=len(values))) for _ in range(resamples))
    low, high = means[int(0.025 * resamples)], means[math.ceil(0.975 * resamples) - 1]
    return Difference(mean, low, high, len(values), "bootstrap")
