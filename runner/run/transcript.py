"""The conversation as it was sent, as the run record keeps it: the run's one list of messages, the tools
offered, and per model request the range of that list it carried, so a run of many requests stays linear in
size. A message's text longer than TEXT_LIMIT characters is kept as its head and tail around a
``[... N characters left out ...]`` line, each such cut recorded (``Cut``) with the text's full length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

TEXT_LIMIT = 32768  # characters of one message's text (its content, or one part of it) kept: 16384 head + 16384 tail
_HALF = TEXT_LIMIT // 2


@dataclass(frozen=True)
class Cut:
    """One text the record keeps cut: ``message``, its 0-based index in the run's messages; ``part``, the
    0-based index of the content part whose ``text`` was cut, None for a string ``content``; ``chars``,
    the text's full length and ``left_out``, the characters left out of its middle (both in characters)."""

    message: int
    part: int | None
    chars: int
    left_out: int


@dataclass
class Transcript:
    """The conversation as sent (data only: the built-in loop's is its append-only history, runner.run.agent;
    an external agent's is gathered by its endpoint, runner.endpoint.server).

    Attributes:
        messages: every message, in order, each once (OpenAI chat shape for the built-in loop; for an
            external agent, each as the agent sent it).
        tools: the tools offered, as sent (OpenAI function-tool specs for the built-in loop).
        spans: per model request, in order, ``(start, end)``: it carried ``messages[start:end]``.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    tools: list[dict[str, Any]] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)


def bounded(messages: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Cut]]:
    """``messages`` with each text over TEXT_LIMIT characters cut to its head and tail (a string
    ``content``, or the ``text`` of a part of a list ``content``), and the cuts made; the others as they are."""
    kept: list[dict[str, Any]] = []
    cuts: list[Cut] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, str) and len(content) > TEXT_LIMIT:
            cuts.append(Cut(index, None, len(content), len(content) - TEXT_LIMIT))
            message = {**message, "content": _cut(content)}
        elif isinstance(content, list):
            parts = list(content)
            for number, part in enumerate(parts):
                text = part.get("text") if isinstance(part, dict) else None
                if isinstance(text, str) and len(text) > TEXT_LIMIT:
                    cuts.append(Cut(index, number, len(text), len(text) - TEXT_LIMIT))
                    parts[number] = {**part, "text": _cut(text)}
            message = {**message, "content": parts} if parts != content else message
        kept.append(message)
    return kept, cuts


def _cut(text: str) -> str:
    return f"{text[:_HALF]}\n[... {len(text) - TEXT_LIMIT} characters left out ...]\n{text[-_HALF:]}"
