"""Power of the paired comparison: the smallest difference in pass rate a number of paired runs can detect,
and the paired runs a difference needs, from the share of pairs whose arms disagree (the discordance).

Connor's normal approximation for McNemar's test: n pairs detect a difference d at two-sided level alpha with
power 1 - beta when n = (z(1 - alpha/2) sqrt(psi) + z(1 - beta) sqrt(psi - d^2))^2 / d^2, psi the discordance
(Connor 1987, "Sample size for testing differences in proportions for the paired-sample design", Biometrics
43:207-211, eq. 3). A difference cannot exceed the discordance (it is the pass->fail share less the fail->pass
share, and psi is their sum), so d is taken in (0, psi]. Normal quantiles from ``statistics.NormalDist``.

The exact McNemar test tooltrial reports (runner.scoring.stats.mcnemar_exact) is more cautious than the normal
approximation: at Connor's n it reaches 0.76 to 0.78 where 0.80 is asked. ``pairs_needed`` therefore goes on from
Connor's n to the n at which the exact test's own power (``exact_power``) reaches the target.
"""

from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05  # two-sided significance level, as the paired verdict's (runner.scoring.paired)
POWER = 0.8  # the chance of a significant result when the difference is real


def connor_pairs(difference: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """Connor's paired runs (module docstring), rounded up, for a pass-rate ``difference`` (a fraction, 0 <
    difference <= discordance) at two-sided level ``alpha`` with chance ``power`` when a share ``discordance``
    of pairs disagree. Raises ValueError outside those ranges."""
    _check(alpha, power)
    if not 0 < difference <= discordance <= 1:
        raise ValueError(f"need 0 < difference <= discordance <= 1, got {difference} and {discordance}")
    return math.ceil(_needed(difference, discordance, alpha, power) - 1e-9)


def pairs_needed(difference: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """The fewest paired runs at which the exact McNemar test detects ``difference`` with chance ``power``
    (``exact_power``), searched from Connor's n up (``connor_pairs``; its arguments and errors). The exact test's
    power rises with n in a saw-tooth, so the n is the one a bisection finds: power reached there, not one
    pair before."""
    low = high = connor_pairs(difference, discordance, alpha, power)
    while exact_power(high, difference, discordance, alpha) < power:
        low, high = high, math.ceil(high * 1.1) + 1
    if low == high:
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if exact_power(middle, difference, discordance, alpha) >= power else (middle, high)
    return high


def exact_power(pairs: int, difference: float, discordance: float, alpha: float = ALPHA) -> float:
    """The chance that the exact McNemar test rejects at two-sided ``alpha`` over ``pairs`` pairs, a share
    ``discordance`` of which disagree, ``difference`` more of them one way than the other (both fractions).

    Given D disagreeing pairs (binomial, n and psi), one way's count B is binomial (D, (psi + d) / (2 psi)), and
    the test rejects when min(B, D - B) <= k_D, the largest k with 2 P(Bin(D, 1/2) <= k) < alpha; the power is
    the sum over D of P(D) P(reject | D) (the unconditional power of the conditional test, as in Suissa and
    Shuster 1991, "The 2 x 2 matched-pairs trial: exact unconditional design and analysis", Biometrics
    47:361-372, section 2). D is summed within 9 standard deviations of its mean. Raises ValueError as
    ``connor_pairs``."""
    _check(alpha, 0.5)
    if pairs < 0 or not 0 <= difference <= discordance <= 1:
        raise ValueError(f"need pairs >= 0 and 0 <= difference <= discordance <= 1, got {pairs}, {difference}, {discordance}")
    spread = 9 * math.sqrt(pairs * discordance * (1 - discordance))
    first, last = max(0, math.floor(pairs * discordance - spread)), min(pairs, math.ceil(pairs * discordance + spread))
    one_way = (discordance + difference) / (2 * discordance) if discordance else 0.5
    total = 0.0
    for d in range(first, last + 1):
        k = _critical(d, alpha)
        if k >= 0:
            reject = _cdf(k, d, one_way) + 1 - _cdf(d - k - 1, d, one_way)
            total += math.exp(_log_pmf(d, pairs, discordance)) * reject
    return min(1.0, total)


def detectable_difference(pairs: int, discordance: float, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest pass-rate difference (a fraction) that ``pairs`` paired runs detect at two-sided level
    ``alpha`` with chance ``power`` when a share ``discordance`` of pairs disagree: Connor's formula solved for d
    by bisection (it needs fewer pairs the larger d is). None when no difference up to the discordance can be
    detected with that many pairs (no pair disagreed, or too few pairs). Raises ValueError for a discordance
    outside [0, 1] or pairs below 0."""
    _check(alpha, power)
    if pairs < 0 or not 0 <= discordance <= 1:
        raise ValueError(f"need pairs >= 0 and 0 <= discordance <= 1, got {pairs} and {discordance}")
    if discordance == 0 or _needed(discordance, discordance, alpha, power) > pairs:
        return None
    low, high = 0.0, discordance
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (low, middle) if _needed(middle, discordance, alpha, power) <= pairs else (middle, high)
    return high


def _needed(d: float, psi: float, alpha: float, power: float) -> float:
    z = NormalDist().inv_cdf
    return (z(1 - alpha / 2) * math.sqrt(psi) + z(power) * math.sqrt(max(0.0, psi - d * d))) ** 2 / (d * d)


def _critical(d: int, alpha: float) -> int:
    """The largest k with 2 P(Bin(d, 1/2) <= k) < alpha, or -1."""
    k = max(-1, math.floor(d / 2 - NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt(d) / 2))
    while k >= 0 and 2 * _cdf(k, d, 0.5) >= alpha:
        k -= 1
    while k + 1 < d / 2 and 2 * _cdf(k + 1, d, 0.5) < alpha:
        k += 1
    return k


def _log_pmf(i: int, n: int, p: float) -> float:
    if p in (0.0, 1.0):
        return 0.0 if i == round(n * p) else -math.inf
    return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)


def _cdf(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) <= k), summed from k away from the mean, where the terms shrink (to 1e-17 of the sum), each
    term from the one before by the ratio of binomial probabilities."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p in (0.0, 1.0):
        return 1.0 if p == 0.0 else 0.0
    below = k < n * p
    i = k if below else k + 1
    term = math.exp(_log_pmf(i, n, p))
    total, odds = term, p / (1 - p)
    while term >= 1e-17 * total and (i > 0 if below else i < n):
        term *= i / ((n - i + 1) * odds) if below else (n - i) * odds / (i + 1)
        i += -1 if below else 1
        total += term
    return total if below else 1 - total


def _check(alpha: float, power: float) -> None:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"need alpha and power between 0 and 1, got {alpha} and {power}")
