"""The turn-limit wrapper every model request passes through."""

from __future__ import annotations

import time
from typing import Any

from runner.providers.base import Attempt, Completion, Provider, ProviderError


class TurnLimitExceeded(Exception):
    """The case made more model requests than ``expect.max_turns`` allows."""


class TurnLimited:
    """Wraps a provider; counts requests and keeps every completion, and in ``failed`` the tries of
    a request that failed for good; ``started`` holds when each request sent was first tried, epoch
    seconds (one per completion, then one for the request that failed), and ``carried`` how many messages
    each carried (the first that many of the loop's append-only history, runner.run.agent).

    Request number ``max_turns + 1`` raises TurnLimitExceeded before it is sent.
    """

    def __init__(self, provider: Provider, max_turns: int) -> None:
        self.provider = provider
        self.name = provider.name
        self.max_turns = max_turns
        self.completions: list[Completion] = []
        self.failed: tuple[Attempt, ...] = ()
        self.started: list[float] = []
        self.carried: list[int] = []

    @property
    def requests(self) -> int:
        return len(self.completions)

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None
    ) -> Completion:
        if self.requests >= self.max_turns:
            raise TurnLimitExceeded(f"turn limit {self.max_turns} exceeded")
        self.started.append(time.time())
        self.carried.append(len(messages))
        try:
            completion = self.provider.complete(messages, tools, deadline)
        except ProviderError as e:
            self.failed = e.attempts
            raise
        self.completions.append(completion)
        return completion
