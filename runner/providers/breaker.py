"""A circuit breaker per provider arm: once a provider cannot be reached by several runs in a row,
the arm's remaining runs stop at once instead of each retrying a server that is not there.

One Breaker belongs to one provider arm of one suite (runner.suite.engine.run_matrix makes them); runs
of the arm share it from their threads, so its state is behind a lock. Runs already waiting on the
provider when it opens finish as they would have.
"""

from __future__ import annotations

import threading
from typing import Any

from runner.kinds import ErrorKind
from runner.providers.base import Completion, Provider, ProviderError

CIRCUIT_AFTER = 3  # runs in a row that could not connect before the arm's other runs are not sent


class Breaker:
    """Counts the arm's runs in a row whose model request could not connect (kind ``connection``);
    at ``after`` it opens, and every later request of the arm fails at once: the first with the whole
    story (``not sent: NAME is unreachable: 3 runs in a row could not connect; its remaining runs are
    not sent``), the others with its first part only, so the story is told once.

    Args:
        name: the arm's provider label, as shown in output.
        after: consecutive connection failures that open it (at least 1).
    """

    def __init__(self, name: str, after: int = CIRCUIT_AFTER) -> None:
        self.name = name
        self.after = after
        self._lock = threading.Lock()
        self._failures = 0
        self._open = False
        self._told = False

    def check(self) -> None:
        """Raise the ProviderError (kind ``connection``, no attempts) of an open breaker; else nothing."""
        with self._lock:
            if not self._open:
                return
            told, self._told = self._told, True
        short = f"not sent: {self.name} is unreachable"
        raise ProviderError(short if told else f"{short}: {self.after} runs in a row could not connect; its "
                            "remaining runs are not sent", ErrorKind.CONNECTION)

    def failed(self, error: ProviderError) -> None:
        """Count a request that failed for good: a connection failure adds one, any other resets."""
        with self._lock:
            if error.kind != ErrorKind.CONNECTION:
                self._failures = 0
                return
            self._failures += 1
            self._open = self._open or self._failures >= self.after

    def answered(self) -> None:
        """Count a request that got a reply: the provider is up, the count starts again (an open
        breaker stays open: the runs it refused are not sent again)."""
        with self._lock:
            self._failures = 0


class Guarded:
    """A Provider whose requests go through ``breaker``: refused at once while it is open, and
    counted as they succeed or fail."""

    def __init__(self, provider: Provider, breaker: Breaker) -> None:
        self.provider = provider
        self.name = provider.name
        self.breaker = breaker

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        """The provider's reply; raises ProviderError at once while the breaker is open."""
        self.breaker.check()
        try:
            completion = self.provider.complete(messages, tools, deadline)
        except ProviderError as e:
            self.breaker.failed(e)
            raise
        self.breaker.answered()
        return completion
