"""The rate limiter of one provider (runner.providers.ratelimit) on a fake clock: a 429 halves the window
of requests in flight once per overload and starts a cool-down (the provider's Retry-After, else
exponential backoff with jitter), answers grow it back by one per window's worth, never below 1 nor
above where it started; waits stop at the run's deadline and on Ctrl-C.
"""

from __future__ import annotations

import math
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.kinds import ErrorKind
from runner.providers.base import ProviderError
from runner.providers.ratelimit import Permit, RateLimiter
from runner.providers.retry import RetryPolicy

POLICY = RetryPolicy(backoff=1.0, max_backoff=3.0, max_retry_after=10.0)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _limiter(ceiling: int = 16) -> tuple[RateLimiter, Clock]:
    clock = Clock()
    return RateLimiter("fake", ceiling, clock=clock, jitter=lambda: 0.5), clock


def test_the_429s_of_one_overload_halve_the_window_once_and_a_later_one_halves_it_again() -> None:
    limiter, clock = _limiter(16)
    burst = [limiter.acquire() for _ in range(16)]
    assert (limiter.in_flight, limiter.ready_in()) == (16, math.inf)  # the window is full
    clock.now += 0.2
    waits = [limiter.limited(p, POLICY) for p in burst[:6]]  # all sent before the first cut: one overload
    assert limiter.window == 8
    assert waits == [1.5] * 6  # backoff 1 * 2**0 plus jitter 0.5 * backoff, set by the first
    assert limiter.ready_in() == 1.5
    clock.now += 1.5
    assert limiter.ready_in() == math.inf  # cool-down over, but 10 of the burst still hold more than the 8 places
    for permit in burst[6:]:  # failed otherwise (a 500, say): not an answer, so the overloads stay in a row
        limiter.failed(permit)
    assert (limiter.in_flight, limiter.ready_in()) == (0, 0.0)
    again = limiter.acquire()
    clock.now += 0.1
    assert limiter.limited(again, POLICY) == 2.5  # the second overload in a row: 1 * 2**1 + 0.5
    assert limiter.window == 4
    for expected_window, expected_wait in ((2, 3.5), (1, 3.5), (1, 3.5)):  # the backoff capped at 3, plus 0.5
        clock.now += 10
        permit = limiter.acquire()
        clock.now += 0.1
        assert (limiter.limited(permit, POLICY), limiter.window) == (expected_wait, expected_window)


def test_answers_grow_the_window_by_one_per_window_and_never_past_the_ceiling() -> None:
    limiter, clock = _limiter(4)
    limiter.limited(limiter.acquire(), POLICY)  # 4 -> 2
    clock.now += 5
    grown = []
    for _ in range(12):
        limiter.answered(limiter.acquire())
        grown.append(limiter.window)
    assert grown == [2, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4]


def test_a_retry_after_sets_the_cool_down_capped_and_a_late_429_of_the_same_overload_only_lengthens_it() -> None:
    limiter, clock = _limiter(8)
    first, second, third = (limiter.acquire() for _ in range(3))
    assert limiter.limited(first, POLICY, asked=4.0) == 4.0
    clock.now += 1
    assert limiter.limited(second, POLICY) == 3.0  # same overload, no wait asked: the cool-down stands
    assert limiter.limited(third, POLICY, asked=60.0) == 10.0  # asked for more: capped at max_retry_after
    assert (limiter.window, limiter.ready_in()) == (4, 10.0)


def test_a_try_whose_deadline_comes_before_the_cool_down_ends_fails_at_once_as_a_rate_limit() -> None:
    limiter, clock = _limiter(2)
    limiter.limited(limiter.acquire(), POLICY, asked=5.0)
    with pytest.raises(ProviderError) as caught:
        limiter.acquire(deadline=clock.now + 4.9)
    assert caught.value.kind == ErrorKind.RATE_LIMIT
    assert str(caught.value) == ("fake: rate_limit: not sent: the run's time ran out waiting for the provider's "
                                 "rate limit (its cool-down ends in 5.0s)")
    assert limiter.in_flight == 0  # it took no place


def test_a_waiting_try_goes_when_a_place_frees_and_stops_when_the_suite_is_interrupted() -> None:
    cancel = threading.Event()
    limiter = RateLimiter("fake", 1, cancel)
    held = limiter.acquire()
    threading.Timer(0.2, limiter.answered, [held]).start()
    assert limiter.acquire(deadline=time.monotonic() + 5).waited >= 0.15
    threading.Timer(0.2, cancel.set).start()
    with pytest.raises(ProviderError) as caught:
        limiter.acquire()
    assert (caught.value.kind, str(caught.value)) == (ErrorKind.CANCELLED, "cancelled: the suite was interrupted")
    full = RateLimiter("fake", 1)
    full.acquire()
    with pytest.raises(ProviderError, match=r"rate limit \(1 request in flight, as many as it takes now\)$"):
        full.acquire(deadline=time.monotonic() + 0.05)


ops = st.lists(st.tuples(st.sampled_from(["send", "answered", "limited", "failed", "tick"]),
                         st.integers(0, 63), st.none() | st.floats(0, 100)), max_size=200)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 64), ops)
def test_the_window_never_leaves_one_to_the_ceiling_and_no_try_goes_past_it(ceiling: int, steps: list) -> None:
    limiter, clock = _limiter(ceiling)
    out: list[Permit] = []
    for op, pick, asked in steps:
        if op == "send":
            if limiter.ready_in() == 0:
                out.append(limiter.acquire())
                assert limiter.in_flight <= limiter.window
        elif op == "tick":
            clock.now += pick / 4
        elif out:
            permit = out.pop(pick % len(out))
            if op == "limited":
                assert 0 <= limiter.limited(permit, POLICY, asked) <= POLICY.max_retry_after
            else:
                getattr(limiter, op)(permit)
        assert 1 <= limiter.window <= ceiling
        assert limiter.in_flight == len(out)


def test_an_answer_ends_the_overloads_in_a_row_so_the_next_backoff_starts_again() -> None:
    limiter, clock = _limiter(8)
    assert limiter.limited(limiter.acquire(), POLICY) == 1.5
    clock.now += 2
    limiter.answered(limiter.acquire())
    assert limiter.limited(limiter.acquire(), POLICY) == 1.5
