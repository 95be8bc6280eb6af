"""Retrying model requests: which failures are transient, how long to wait, and what each try was.

The loop itself is tenacity's (imported when a request is retried, not at module import).
What a failure is comes from ``runner.providers.errors.classify``: rate limits, server errors,
timeouts, lost connections and malformed replies are retried; a used-up quota, a refused key, a
bad or too large request and an overflowing context are not. The wait is what the provider asked
for (``runner.providers.errors.retry_hint``), capped at ``max_retry_after``, else exponential
backoff with jitter; no retry is made whose wait would reach the run's deadline. With a rate limiter
(runner.providers.ratelimit, one per provider of a suite) each try waits for it before it is sent, and a
429's wait is the limiter's cool-down, which every run of the provider waits out, not one of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from runner.kinds import ErrorKind
from runner.providers.base import Attempt, OutOfTime, ProviderError
from runner.providers.errors import classify, retry_hint
from runner.text import first_line

if TYPE_CHECKING:
    from tenacity.stop import stop_base

    from runner.providers.ratelimit import Permit, RateLimiter

T = TypeVar("T")
_MESSAGE_LIMIT = 300  # characters of a failure's message kept in an Attempt
CUT_SHORT = "cut short by the run's deadline"  # the message of the Attempt the deadline cut short


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried. Times are seconds.

    ``attempts`` counts every try (1 means no retry). Wait before retry n
    (1-based) is ``backoff * 2**(n-1)`` capped at ``max_backoff``, plus up to
    ``backoff`` of random jitter; a wait the provider asked for replaces it, capped at
    ``max_retry_after``.
    """

    attempts: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_retry_after: float = 60.0


class Retrier:
    """The retry loop of one model request, and the record of its tries.

    Args:
        policy: how often and how long to retry.
        deadline: ``time.monotonic()`` value no wait may reach (None: no deadline); the time left is
            measured when the Retrier is made.
        sleep: called with the seconds to wait between tries (tests pass a recorder).
        limiter: the provider's rate limiter, which every try waits for before it is sent and is told
            how it went (None: none); its waits are each Attempt's ``rate_limited``.

    Call it as ``retrier(fn, *args)``: it returns ``fn``'s result or re-raises its last error as is.
    ``attempts`` then lists every try (runner.providers.base.Attempt), failed ones with their kind,
    status, message and the wait that followed.
    """

    def __init__(self, policy: RetryPolicy, deadline: float | None = None,
                 sleep: Callable[[float], None] = time.sleep, limiter: RateLimiter | None = None) -> None:
        import openai  # litellm's exceptions derive from the OpenAI client's; anything else is never retried
        import tenacity

        self.policy = policy
        self.attempts: list[Attempt] = []
        self._backoff = tenacity.wait_exponential_jitter(multiplier=policy.backoff, max=policy.max_backoff,
                                                         jitter=policy.backoff)
        self._next: tuple[float, str] = (0.0, "backoff")
        self._deadline = deadline
        self._limiter = limiter
        self._cooldown: float | None = None  # the limiter's cool-down after the last try, when it was a 429
        self._current: tuple[int, float, float] | None = None  # the try in flight: number, start, limiter wait
        stop: stop_base = tenacity.stop_after_attempt(policy.attempts)
        if deadline is not None:
            stop = stop | tenacity.stop_before_delay(max(0.0, deadline - time.monotonic()))
        transient = tenacity.retry_if_exception(lambda e: isinstance(e, openai.OpenAIError) and is_retryable(e))
        self._loop = tenacity.Retrying(stop=stop, wait=self._wait, retry=transient, reraise=True, sleep=sleep,
                                       before_sleep=self._slept)

    def __call__(self, fn: Callable[..., T], *args: Any) -> T:
        result: T = self._loop(self._try, fn, *args)
        return result

    def gave_up(self, name: str, error: BaseException) -> ProviderError:
        """The error to raise for model ``name`` when the loop re-raised ``error``: OutOfTime when only
        the deadline kept another try from being made, else a ProviderError of the failure's kind
        (``name: rate_limit (HTTP 429) after 3 attempts: <the provider's message>``)."""
        failure = classify(error)
        tries = len(self.attempts)
        if self._deadline is not None and failure.retryable and tries < self.policy.attempts:
            return self.out_of_time(name)
        after = f" after {tries} attempts" if tries > 1 else ""
        code = f", code {failure.error_code}" if failure.error_code is not None else ""
        status = f" (HTTP {failure.status}{code})" if failure.status is not None else ""
        reason = first_line(failure.message, type(error).__name__)
        return ProviderError(f"{name}: {failure.kind}{status}{after}: {reason}", failure.kind, failure.status,
                             tuple(self.attempts))

    def out_of_time(self, name: str, cut: bool = False, status: int | None = None) -> OutOfTime:
        """The run's deadline came first: OutOfTime saying how many tries model ``name`` was given.

        ``cut``: the deadline cut short the try in flight, one that was sent (not when none was sent, nor
        when the deadline kept the next try from being made); that try is then the last Attempt, of kind
        ``timeout``, its duration up to the cut, its ``status`` the HTTP status it got before the cut
        (200 for a stream that had begun, None when no answer had come).
        """
        if cut and self._current is not None:
            number, started, waited = self._current
            self.attempts.append(Attempt(number, time.monotonic() - started, ErrorKind.TIMEOUT, status,
                                         CUT_SHORT, rate_limited=waited))
        tries = max(1, len(self.attempts))
        return OutOfTime(f"waiting for the model {name} ({tries} attempt{'s' if tries > 1 else ''})",
                         attempts=tuple(self.attempts))

    def _try(self, fn: Callable[..., T], *args: Any) -> T:
        import openai

        self._cooldown = None
        permit = self._admit()
        waited = permit.waited if permit else 0.0
        started = time.monotonic()
        number = len(self.attempts) + 1
        self._current = (number, started, waited)
        try:
            result = fn(*args)
        except openai.OpenAIError as e:
            failure = classify(e)
            self._release(permit, error=e)
            self.attempts.append(Attempt(number, time.monotonic() - started, failure.kind, failure.status,
                                         failure.message[:_MESSAGE_LIMIT], rate_limited=waited,
                                         error_code=failure.error_code))
            raise
        except BaseException:
            self._release(permit)
            raise
        self._release(permit, answered=True)
        self.attempts.append(Attempt(number, time.monotonic() - started, rate_limited=waited))
        return result

    def _admit(self) -> Permit | None:
        """The limiter's leave to send the next try, once it gives it (None without a limiter); its
        ProviderError (out of time, cancelled) carries the tries made so far and is not retried."""
        if self._limiter is None:
            return None
        try:
            return self._limiter.acquire(self._deadline)
        except ProviderError as e:
            raise ProviderError(str(e), e.kind, None, tuple(self.attempts)) from e

    def _release(self, permit: Permit | None, answered: bool = False, error: BaseException | None = None) -> None:
        """Tell the limiter how the try of ``permit`` went: ``answered``, a 429 (``error``: its cool-down is
        kept for ``_wait``), or failed otherwise."""
        if self._limiter is None or permit is None:
            return
        failure = classify(error) if error is not None else None
        if answered:
            self._limiter.answered(permit)
        elif error is not None and failure is not None and failure.kind == ErrorKind.RATE_LIMIT:
            hint = retry_hint(error, failure)
            self._cooldown = self._limiter.limited(permit, self.policy, hint[0] if hint else None)
        else:
            self._limiter.failed(permit)

    def _wait(self, state: Any) -> float:
        error = state.outcome.exception() if state.outcome else None
        hint = retry_hint(error, classify(error)) if error is not None else None
        if self._cooldown is not None:  # a 429 with a limiter: the next try waits out its cool-down in acquire
            self._next = (self._cooldown, hint[1] if hint else "backoff")
            return 0.0
        if hint is not None:
            self._next = (min(hint[0], self.policy.max_retry_after), hint[1])
        else:
            self._next = (float(self._backoff(state)), "backoff")
        return self._next[0]

    def _slept(self, state: Any) -> None:
        """tenacity's before_sleep: the last try is followed by the wait just chosen."""
        wait, source = self._next
        self.attempts[-1] = replace(self.attempts[-1], wait=wait, wait_source=source)


def is_retryable(error: BaseException) -> bool:
    """Whether retrying can help (``runner.providers.errors.classify(error).retryable``)."""
    return classify(error).retryable
