"""Retrying model requests: which failures are transient, and how long to wait.

The loop itself is tenacity's (imported when a policy is used, not at module
import). Transient: HTTP 408, 409, 429 and 5xx, timeouts and connection
errors. The wait is exponential backoff with jitter, or what the server asked
for in ``retry-after-ms`` / ``Retry-After`` (seconds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RetryPolicy:
    """How transient failures are retried. Times are seconds.

    ``attempts`` counts every try (1 means no retry). Wait before retry n
    (1-based) is ``backoff * 2**(n-1)`` capped at ``max_backoff``, plus up to
    ``backoff`` of random jitter; a Retry-After header replaces it, capped at
    ``max_retry_after``.
    """

    attempts: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    max_retry_after: float = 60.0


def retrying(policy: RetryPolicy, deadline: float | None = None) -> Any:
    """A ``tenacity.Retrying`` for ``policy`` that re-raises the last error as is, and makes no
    retry whose wait would reach ``deadline`` (``time.monotonic()``; None: no deadline).

    Call it as ``retrying(policy)(fn, *args)`` at once (the time left is measured now);
    afterwards ``.statistics["attempt_number"]`` says how many tries were made.
    """
    import tenacity

    stop = tenacity.stop_after_attempt(policy.attempts)
    if deadline is not None:
        stop = stop | tenacity.stop_before_delay(max(0.0, deadline - time.monotonic()))
    return tenacity.Retrying(
        stop=stop,
        wait=_Wait(policy, tenacity.wait_exponential_jitter(
            multiplier=policy.backoff, max=policy.max_backoff, jitter=policy.backoff)),
        retry=tenacity.retry_if_exception(is_retryable),
        reraise=True,
    )


def is_retryable(error: BaseException) -> bool:
    """Whether retrying can help: 408/409/429/5xx responses, timeouts and connection errors."""
    import openai  # litellm's exceptions derive from the OpenAI client's

    if isinstance(error, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in (408, 409, 429) or status >= 500)


def retry_after(error: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, else ``Retry-After`` in seconds), else None.

    Headers are read from litellm's ``litellm_response_headers`` or the HTTP response.
    """
    headers = getattr(error, "litellm_response_headers", None)
    if not headers:
        headers = getattr(getattr(error, "response", None), "headers", None)
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in dict(headers).items()}
    for key, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            value = float(lowered[key]) * scale
        except (KeyError, ValueError):
            continue
        if value >= 0:
            return value
    return None


class _Wait:
    """tenacity wait strategy: what the server asked for, else the backoff."""

    def __init__(self, policy: RetryPolicy, backoff: Any) -> None:
        self.policy = policy
        self.backoff = backoff

    def __call__(self, state: Any) -> float:
        error = state.outcome.exception() if state.outcome else None
        asked = retry_after(error) if error is not None else None
        if asked is not None:
            return min(asked, self.policy.max_retry_after)
        return float(self.backoff(state))
