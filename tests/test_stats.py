"""runner.scoring.stats against values computed by hand (and the published tables where there are some)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.scoring.stats import (
    is_flaky,
    mcnemar_exact,
    mean_std,
    pass_at_k,
    pass_hat_k,
    wilson,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),  # pass@1 is the pass rate
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (5, 0, 3, 0.0),  # c = 0: never
        (5, 5, 3, 1.0),  # c = n: always
        (4, 1, 4, 1.0),  # n = k with one pass: some draw holds it
        (4, 0, 4, 0.0),  # n = k, c = 0
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),  # pass^1 is the pass rate too
        (5, 2, 2, 1 / 10),  # C(2,2)/C(5,2)
        (4, 3, 2, 3 / 6),  # C(3,2)/C(4,2)
        (10, 8, 3, 56 / 120),  # C(8,3)/C(10,3)
        (5, 0, 2, 0.0),  # c = 0
        (5, 5, 5, 1.0),  # c = n = k
        (5, 4, 5, 0.0),  # n = k with one failure: not all k pass
    ],
)
def test_pass_hat_k(n: int, c: int, k: int, expected: float) -> None:
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_never_below_pass_hat_k() -> None:
    for n in range(1, 8):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) >= pass_hat_k(n, c, k) - 1e-12


@pytest.mark.parametrize("args", [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4)])
def test_bad_counts_raise(args: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        pass_at_k(*args)
    with pytest.raises(ValueError):
        pass_hat_k(*args)


@pytest.mark.parametrize(
    ("c", "n", "low", "high"),
    [
        (0, 10, 0.0, 0.2775),  # Newcombe 1998, table I
        (5, 10, 0.2366, 0.7634),
        (10, 10, 0.7225, 1.0),
        (81, 263, 0.2553, 0.3662),  # Newcombe 1998 example: 81/263
    ],
)
def test_wilson_interval(c: int, n: int, low: float, high: float) -> None:
    got = wilson(c, n)
    assert got == pytest.approx((low, high), abs=5e-5)


@given(st.integers(1, 2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_bounds_are_fractions_exact_at_the_ends(counts: tuple[int, int]) -> None:
    c, n = counts
    low, high = wilson(c, n)
    assert 0.0 <= low <= c / n <= high <= 1.0
    assert (low == 0.0) == (c == 0) and (high == 1.0) == (c == n)  # 0 of 3 gave a low bound of 5.6e-17


def test_wilson_without_runs_knows_nothing() -> None:
    assert wilson(0, 0) == (0.0, 1.0)


def test_mean_std_skips_unscored_runs() -> None:
    mean, std = mean_std([1, 0, None, 1, 0])
    assert mean == 0.5
    assert std == pytest.approx(math.sqrt(1 / 3))  # sample deviation: sum of squares 1, over n - 1 = 3
    assert mean_std([0.7]) == (0.7, 0.0)
    assert mean_std([None, None]) == (None, None)


def test_flaky_only_between_never_and_always() -> None:
    assert [is_flaky(5, c) for c in range(6)] == [False, True, True, True, True, False]


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # no discordant pair
        (1, 0, 1.0),
        (5, 0, 2 / 32),
        (6, 0, 2 / 64),
        (1, 7, 2 * (1 + 8) / 256),  # C(8,0) + C(8,1) over 2^8, two-sided
        (10, 2, 2 * (1 + 12 + 66) / 4096),
        (3, 3, 1.0),  # symmetric: capped at 1
    ],
)
def test_mcnemar_exact(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    assert mcnemar_exact(c, b) == pytest.approx(expected)  # two-sided: order does not matter


def test_mcnemar_large_counts_stay_exact() -> None:
    assert mcnemar_exact(600, 400) < 1e-9
    assert mcnemar_exact(500, 500) == 1.0
