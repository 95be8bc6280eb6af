"""Power of the paired comparison: the smallest difference in pass rate a number of paired runs can detect,
and the paired runs a difference needs, from the share of pairs whose arms disagree (the discordance).

Connor's normal approximation for McNemar's test: n pairs detect a difference d at two-sided level alpha with
power 1 - beta when n = (z(1 - alpha/2) sqrt(psi) + z(1 - beta) sqrt(psi - d^2))^2 / d^2, psi the discordance
(Connor 1987, "Sample size for testing differences in proportions for the paired-sample design", Biometrics
43:207-211, eq. 3). A difference cannot exceed the discordance (it is the pass->fail share less the fail->pass
share, and psi is their sum), so d is taken in (0, psi]. Normal quantiles from ``statistics.NormalDist``.
"""

from __future__ import annotations

import math
from statistics import NormalDist

ALPHA = 0.05  # two-sided significance level, as the paired verdict's (runner.scoring.paired)
POWER = 0.8  # the chance of a significant result when the difference is real


def pairs_needed(difference: float, discordance: float, alpha: float = ALPHA, power: float = POWER) -> int:
    """The paired runs (a whole number, rounded up) that detect a pass-rate ``difference`` (a fraction, 0 <
    difference <= discordance) at two-sided level ``alpha`` with chance ``power``, when a share ``discordance``
    of pairs disagree: Connor's formula (module docstring). Raises ValueError outside those ranges."""
    _check(alpha, power)
    if not 0 < difference <= discordance <= 1:
        raise ValueError(f"need 0 < difference <= discordance <= 1, got {difference} and {discordance}")
    return math.ceil(_needed(difference, discordance, alpha, power) - 1e-9)


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


def _check(alpha: float, power: float) -> None:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"need alpha and power between 0 and 1, got {alpha} and {power}")
