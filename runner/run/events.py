"""What a run tells as it happens, for a live view (``run --live``): it started, a model request
was answered, a tool call was done. Data flows one way: the run layer emits these to a Listener
(runner.run.agent, runner.run.execute), runner.terminal.live prints them. Every text in them is
the model's or a tool's: untrusted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class RunRef:
    """Which run an event is of: the case's full id, the arm's label, the run number (1-based)."""

    case: str
    arm: str
    run: int


@dataclass(frozen=True)
class RunStarted:
    """The run's workspace is ready and its first model request is about to go."""


@dataclass(frozen=True)
class RequestDone:
    """A model request answered: ``index`` (0-based in the run), the case ``turn`` (0-based) it
    served, the provider's ``finish_reason``, ``prompt_tokens`` and ``completion_tokens`` (None
    when not reported), ``latency`` in seconds (retries included), how many ``calls`` its reply held."""

    index: int
    turn: int
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency: float
    calls: int


@dataclass(frozen=True)
class CallDone:
    """A tool call dealt with: its ``name`` and ``arguments`` (None when they did not parse), the
    step ``status`` (``executed``, ``recovered``, ``invalid``, ``truncated``, ...), whether its result
    ``is_error``, the ``result`` text, ``duration`` in seconds, and the kind of injected ``fault`` it got, if any."""

    name: str
    arguments: dict[str, Any] | None
    status: str
    is_error: bool
    result: str
    duration: float
    fault: str | None = None


Event = RunStarted | RequestDone | CallDone
Listener = Callable[[RunRef, Event], None]  # called as each event happens, in the run's thread (or its endpoint's)
