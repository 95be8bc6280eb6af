"""The scripted provider: replays the replies written in a case's ``script:``.

It is how tooltrial runs offline (CI, demos, checking a suite's checks): the
agent loop, tools, workspace and checks are all real; only the model is a
recording. It reports no token usage (null, never guessed).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from runner.providers.base import Completion, ProviderError, ToolCall


class ScriptExhausted(ProviderError):
    """The agent asked for more replies than the script holds: the agent went off script, not the API down."""

    kind = "script_exhausted"


class ScriptedProvider:
    """Serves ``script`` items in order, one per model request.

    Args:
        script: items ``{content?: str, tool_calls?: [{name, arguments}]}`` as in the case file.

    Raises ScriptExhausted on the request after the last item.
    """

    name = "scripted"

    def __init__(self, script: Sequence[Mapping[str, Any]]) -> None:
        self._script = list(script)
        self._next = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Completion:
        if self._next >= len(self._script):
            raise ScriptExhausted(
                f"script exhausted: the model was asked for reply {self._next + 1} "
                f"but the case's script has {len(self._script)}"
            )
        item = self._script[self._next]
        self._next += 1
        calls = tuple(
            ToolCall(id=f"call_{self._next}_{i}", name=str(c["name"]), arguments=dict(c.get("arguments") or {}))
            for i, c in enumerate(item.get("tool_calls") or ())
        )
        return Completion(
            content=item.get("content"),
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
        )
