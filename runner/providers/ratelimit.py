"""A provider's rate limit, shared by every run of a suite: once the provider answers 429, every run
pauses until its cool-down ends and fewer requests go to it at once, so many runs at once do not turn
one 429 into a retry storm.

One RateLimiter belongs to one provider of one suite (runner.suite.engine.run_matrix makes them); every
try of every model request of its runs goes through it (runner.providers.retry.Retrier): ``acquire``
before it is sent, then ``answered``, ``limited`` (a 429) or ``failed``. Runs use it from their
threads, so its state is behind a lock.

The window of requests in flight follows TCP's congestion control (RFC 5681 section 3.1: additive
increase, multiplicative decrease): it starts at the most the suite lets go at once (``-j``, an
alias's ``max_concurrency``), is halved on a 429, never below 1, once for all the tries sent before
that cut (their 429s answer the same overload), and grows by one after as many answers in a row as
it holds, never above where it started. The cool-down is the wait the provider asked for (Retry-After,
capped at the policy's ``max_retry_after``), else ``backoff * 2**(n-1)`` for the nth overload in a
row, capped at ``max_backoff``, plus up to ``backoff`` of random jitter (runner.providers.retry.RetryPolicy).
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from runner.kinds import ErrorKind
from runner.providers.base import ProviderError
from runner.providers.retry import RetryPolicy
from runner.text import plural

_POLL = 0.1  # seconds between looks at the cancel event while waiting


@dataclass(frozen=True)
class Permit:
    """One try's place in the window: ``sent``, when it was let go (the limiter's clock, seconds), and
    ``waited``, the seconds it waited for the cool-down and a free place before that."""

    sent: float
    waited: float


class RateLimiter:
    """The rate limit of provider ``name`` for one suite.

    Args:
        name: the provider's label, as shown in output.
        ceiling: the most requests in flight at once (at least 1): the window's start and its top.
        cancel: once set, waiting tries stop (the suite was interrupted).
        clock: seconds, monotonic (tests pass a fake one).
        jitter: a random number in [0, 1) (tests pass a fixed one).
    """

    def __init__(self, name: str, ceiling: int, cancel: threading.Event | None = None,
                 clock: Callable[[], float] = time.monotonic, jitter: Callable[[], float] = random.random) -> None:
        self.name = name
        self.ceiling = max(1, ceiling)
        self.window = self.ceiling
        self.in_flight = 0
        self._cancel = cancel or threading.Event()
        self._clock = clock
        self._jitter = jitter
        self._changed = threading.Condition()
        self._until = -math.inf  # when the cool-down ends, on the clock
        self._cut = -math.inf  # when the window was last halved
        self._overloads = 0  # overloads in a row (429s of tries sent after the last cut)
        self._answers = 0  # answers since the window last changed

    def ready_in(self) -> float:
        """Seconds before a try could be sent: 0.0 now, the rest of the cool-down, or ``math.inf``
        while the window is full."""
        with self._changed:
            return self._ready_in(self._clock())

    def acquire(self, deadline: float | None = None) -> Permit:
        """Wait until a try may be sent (the cool-down over, a place free in the window) and take a place.

        ``deadline`` is the run's end on the same clock (None: none). Raises ProviderError of kind
        ``rate_limit`` when the deadline comes first (at once when the cool-down ends after it), of kind
        ``cancelled`` when the suite was interrupted while waiting.
        """
        with self._changed:
            started = now = self._clock()
            while (delay := self._ready_in(now)) > 0:
                if self._cancel.is_set():
                    raise ProviderError("cancelled: the suite was interrupted", ErrorKind.CANCELLED)
                if deadline is not None and (now >= deadline or self._until >= deadline):
                    raise ProviderError(self._too_late(now), ErrorKind.RATE_LIMIT)
                left = math.inf if deadline is None else deadline - now
                self._changed.wait(min(delay, left, _POLL))
                now = self._clock()
            self.in_flight += 1
            return Permit(now, now - started)

    def answered(self, permit: Permit) -> None:
        """The try of ``permit`` got a reply: the overloads in a row end, and after as many answers as
        the window holds it grows by one (up to ``ceiling``)."""
        with self._changed:
            self._free()
            self._overloads = 0
            self._answers += 1
            if self._answers >= self.window and self.window < self.ceiling:
                self.window, self._answers = self.window + 1, 0

    def failed(self, permit: Permit) -> None:
        """The try of ``permit`` failed for another reason than a rate limit: its place is free."""
        with self._changed:
            self._free()

    def limited(self, permit: Permit, policy: RetryPolicy, asked: float | None = None) -> float:
        """The try of ``permit`` was answered 429, ``asked`` the seconds the provider asked to wait
        (None when it did not say). A try sent after the last cut halves the window and starts a
        cool-down (``asked`` capped at ``policy.max_retry_after``, else the exponential backoff); one
        sent before adds only a longer wait it asked for. Returns the seconds left in the cool-down (the wait
        chosen when this 429 set it)."""
        with self._changed:
            self._free()
            now = self._clock()
            if permit.sent > self._cut:  # a new overload, not one more answer to the last
                self._cut, self._answers = now, 0
                self.window = max(1, self.window // 2)
                self._overloads += 1
                if asked is None:
                    backoff = policy.backoff * 2 ** (self._overloads - 1)
                    asked = min(backoff, policy.max_backoff) + policy.backoff * self._jitter()
            if asked is not None and now + min(asked, policy.max_retry_after) >= self._until:
                self._until = now + min(asked, policy.max_retry_after)
                return min(asked, policy.max_retry_after)  # as chosen, not as the clock's sums round it
            return max(0.0, self._until - now)

    def _free(self) -> None:
        self.in_flight -= 1
        self._changed.notify_all()

    def _ready_in(self, now: float) -> float:
        if self._until > now:
            return self._until - now
        return 0.0 if self.in_flight < self.window else math.inf

    def _too_late(self, now: float) -> str:
        cooling = f"its cool-down ends in {self._until - now:.1f}s" if self._until > now else (
            f"{plural(self.in_flight, 'request')} in flight, as many as it takes now")
        return (f"{self.name}: rate_limit: not sent: the run's time ran out waiting for the provider's rate limit "
                f"({cooling})")
