"""Sums and means over values that may be unknown (None): a token count or a cost a provider did not
report stays unknown in every total, never 0."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import TypeVar

Number = TypeVar("Number", int, float)


def known_sum(values: Iterable[Number | None]) -> Number | None:
    """The sum of the values that are not None (an int for ints, a float for floats); None when every value
    is None (unknown, never 0)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def known_mean(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are not None; None when every value is None."""
    known = [float(v) for v in values if v is not None]
    return statistics.fmean(known) if known else None
