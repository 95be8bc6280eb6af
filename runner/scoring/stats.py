"""Statistics over repeated runs: pass@k, pass^k, Wilson intervals, mean/std, McNemar.

Everything here is exact arithmetic on counts (``math.comb``), with no
third-party dependency. ``n`` is the number of runs, ``c`` how many passed,
``k`` how many draws are asked about (1 <= k <= n).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

Z_95 = 1.959963984540054  # two-sided 95% standard normal quantile


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of k runs drawn without replacement from the n passes.

    ``1 - C(n-c, k) / C(n, k)``: the unbiased estimator of Chen et al. 2021,
    "Evaluating Large Language Models Trained on Code" (arXiv:2107.03374), eq. 1.
    Raises ValueError unless 0 <= c <= n and 1 <= k <= n.
    """
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that all k runs drawn without replacement from the n pass.

    ``C(c, k) / C(n, k)``: the reliability metric of Yao et al. 2024,
    "tau-bench: A Benchmark for Tool-Agent-User Interaction in Real-World
    Domains" (arXiv:2406.12045), section 4. Raises ValueError as ``pass_at_k``.
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def wilson(c: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval (Wilson 1927) for a pass rate of c out of n, as (low, high) in [0, 1].

    With no runs nothing is known: (0.0, 1.0). At c = 0 the low bound is exactly 0 and at c = n the high
    bound exactly 1 (there ``centre`` and ``half`` are equal in exact arithmetic; in floating point they
    differ by about 1e-17). Raises ValueError unless 0 <= c <= n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = c / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    low = 0.0 if c == 0 else max(0.0, centre - half)
    high = 1.0 if c == n else min(1.0, centre + half)
    return low, high


def mean_std(values: Iterable[float | int | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation (n - 1) of the values that are not None.

    (None, None) when every value is None; the deviation of one value is 0.0.
    """
    known = [float(v) for v in values if v is not None]
    if not known:
        return None, None
    return statistics.fmean(known), statistics.stdev(known) if len(known) > 1 else 0.0


def is_flaky(n: int, c: int) -> bool:
    """A case is flaky when it passed some runs but not all: 0 < c < n."""
    return 0 < c < n


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for paired pass/fail outcomes.

    ``b`` and ``c`` are the discordant pair counts (A passed and B failed, and
    the other way round). Under the null hypothesis each discordant pair goes
    either way with probability 1/2, so the p-value is the two-sided binomial
    tail ``min(1, 2 * sum_{i <= min(b, c)} C(b+c, i) / 2^(b+c))`` (McNemar 1947;
    the exact form in Fagerland, Lydersen and Laake 2013, "The McNemar test for
    binary matched-pairs data", BMC Med Res Methodol 13:91). 1.0 without any
    discordant pair. Raises ValueError for a negative count.
    """
    if b < 0 or c < 0:
        raise ValueError(f"counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)
