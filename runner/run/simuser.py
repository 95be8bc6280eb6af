"""The simulated user: a model that plays the user in place of a case's fixed turns (``user:``).

As tau-bench's user simulator does, the user model gets the persona as its system prompt and sees
the conversation with the roles flipped: the agent's replies are its ``user`` messages, its own
lines its ``assistant`` ones. Its history opens with tau-bench's greeting (``OPENING``) as the
agent's first line, so every provider gets a user message first. It replies to each agent reply
until a reply holds the stop marker (that reply is not sent to the agent) or it has sent
``max_turns`` messages. Its model goes through the same provider machinery as the agent's
(runner.providers.registry; retries, classified errors) but not the agent's turn limit, and its
usage is kept apart from the agent's, so it never counts against the case's budgets.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.errors import Location, UserError
from runner.kinds import ErrorKind, UserStop
from runner.providers.base import Attempt, OutOfTime, Provider, ProviderError, Usage
from runner.providers.kind import ProviderSpec
from runner.providers.registry import kind_of
from runner.run.trajectory import RunCancelled, RunTimeout
from runner.spec.case import Case, SimulatedUser

OPENING = "Hi! How can I help you today?"  # tau-bench's first agent line, which the user model answers
NO_TEXT = "(no text)"  # what the user model sees for an agent reply without text: providers refuse empty messages


@dataclass(frozen=True)
class UserTurn:
    """One message of the simulated user: ``content`` as written; ``sent``: whether it went to the agent
    (False for the reply that held the stop marker); ``by``: ``case`` (the case's ``first``) or ``model``;
    ``usage``: its request's tokens and cost (USD), None when unreported or not asked of a model;
    ``latency``: seconds the request took (None for ``first``); ``attempts``: the request's tries."""

    content: str
    sent: bool = True
    by: str = "model"
    usage: Usage | None = None
    latency: float | None = None
    attempts: list[Attempt] = field(default_factory=list)


class UserSide:
    """The user's side of one run's conversation: called with the agent's replies so far, it gives the
    next message for the agent, or None once the conversation is over (runner.run.trajectory.NextTurn).

    After the run, ``turns`` holds every user message, ``stop`` why the user ended the conversation
    (None when the agent loop stopped first) and ``failure`` the user model's error, if it failed.
    Raises RunTimeout when the run's time runs out waiting for the user model, RunCancelled once
    ``cancel`` is set; no other error: a failed user model ends the conversation with ``failure``.
    """

    def __init__(self, user: SimulatedUser, provider: Provider, persona: str, first: str | None,
                 deadline: float | None = None, cancel: threading.Event | None = None) -> None:
        self.user, self.model = user, provider
        self.turns: list[UserTurn] = []
        self.stop: UserStop | None = None
        self.failure: ProviderError | None = None
        self._first, self._deadline, self._cancel = first, deadline, cancel
        self._messages: list[dict[str, Any]] = [{"role": "system", "content": persona},
                                                {"role": "user", "content": OPENING}]

    def __call__(self, replies: Sequence[str]) -> str | None:
        if replies:
            self._messages.append({"role": "user", "content": replies[-1] or NO_TEXT})
        if sum(turn.sent for turn in self.turns) >= self.user.max_turns:
            self.stop = UserStop.MAX_USER_TURNS
            return None
        if not self.turns and self._first is not None:
            return self._say(UserTurn(self._first, by="case"))
        if self._cancel is not None and self._cancel.is_set():
            raise RunCancelled("cancelled: the suite was interrupted")
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise RunTimeout(f"waiting for the simulated user {self.model.name}")
        try:
            reply = self.model.complete(list(self._messages), [], self._deadline)
        except OutOfTime as e:
            raise RunTimeout(f"{e} (the simulated user)") from e
        except ProviderError as e:
            self._fail(e)
            return None
        text = reply.content or ""
        sent = bool(text.strip()) and self.user.stop not in text
        turn = UserTurn(text, sent, "model", reply.usage, reply.latency, list(reply.attempts))
        if not text.strip():
            self.turns.append(turn)
            self._fail(ProviderError("the user model's reply held no text", ErrorKind.EMPTY_REPLY))
            return None
        if not turn.sent:
            self.turns.append(turn)
            self.stop = UserStop.MARKER
            return None
        return self._say(turn)

    @property
    def cause(self) -> str:
        """The run's cause for a failed user model: ``simulated user MODEL failed (KIND): MESSAGE``."""
        failure = self.failure or ProviderError("no failure")
        return f"simulated user {self.user.model} failed ({failure.kind}): {failure}"

    def _say(self, turn: UserTurn) -> str:
        self.turns.append(turn)
        self._messages.append({"role": "assistant", "content": turn.content})
        return turn.content

    def _fail(self, error: ProviderError) -> None:
        self.failure, self.stop = error, UserStop.USER_ERROR


def user_provider(case: Case, users: Mapping[str, ProviderSpec]) -> Provider:
    """A fresh model for the simulated user of ``case``: the one its model's kind plays without being resolved
    (``scripted``: its own script), else the provider ``users`` resolved for its model. Raises ProviderError
    for a model ``users`` lacks."""
    assert case.user is not None
    own = kind_of(case.user.model, ()).user
    if own is not None:
        return own(case)
    spec = users.get(case.user.model)
    if spec is None:
        raise ProviderError(f"no provider resolved for the user model {case.user.model!r}", ErrorKind.USER_ERROR)
    return spec.create(case)


def resolve_users(cases: Sequence[Case], resolve: Callable[[str], ProviderSpec]) -> dict[str, ProviderSpec]:
    """The user models the cases name that are resolved (``user.model`` of a kind that plays no user of its
    own: not ``scripted``), each resolved once by ``resolve`` (runner.providers.registry.resolve_provider).
    Raises its UserError for one it cannot reach, placed at the first case naming it unless the error has a
    place of its own (an alias's entry)."""
    users: dict[str, ProviderSpec] = {}
    for case in cases:
        if case.user is None or case.user.model in users or kind_of(case.user.model, ()).user is not None:
            continue
        model = case.user.model
        try:
            users[model] = resolve(model)
        except UserError as e:
            if e.location is not None:
                raise
            raise UserError(e.message, Location(str(case.source), case.line), f"{case.full_id}.user.model", e.hint) from e
    return users
