"""What the endpoint reads from an agent's request, in one shape for both wire formats.

Both formats are read into the OpenAI chat-completions shapes that every provider takes
(runner.providers.base): messages with ``role``/``content``/``tool_calls``/``tool_call_id``, tools as
``{type: function, function: {name, description, parameters}}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class WireError(Exception):
    """A request body the endpoint cannot read: answered 400 with this message."""


@dataclass(frozen=True)
class WireRequest:
    """One model request of an agent, read from its body.

    Attributes:
        api: ``chat`` (OpenAI chat completions) or ``messages`` (Anthropic Messages).
        messages: the conversation as the provider gets it (OpenAI chat shape).
        tools: the tools the agent offers its model (OpenAI function-tool specs).
        stream: whether the agent asked for a stream (``stream: true``).
        model: the model name the agent asked for (answered by the arm's provider whatever it is).
        failed_results: ids of the tool calls whose result the agent marked as an error
            (Anthropic ``tool_result`` with ``is_error``); the chat format has no such mark.
        include_usage: whether a chat stream ends with a usage chunk (``stream_options.include_usage``).
    """

    api: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    stream: bool = False
    model: str = ""
    failed_results: frozenset[str] = frozenset()
    include_usage: bool = False


def text_of(content: Any) -> str:
    """The text of a message's ``content``: a string as is, a list of parts as their ``text`` joined
    (chat ``{type: text, text}`` parts, Messages ``text`` blocks); anything else as ``""``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and isinstance(part.get("text", ""), str))
    return ""


def body_object(body: Any) -> dict[str, Any]:
    """``body`` when it is a JSON object with a list of ``messages``; raises WireError otherwise."""
    if not isinstance(body, dict):
        raise WireError("the request body is not a JSON object")
    if not isinstance(body.get("messages"), list):
        raise WireError("'messages' must be a list")
    if not all(isinstance(m, dict) for m in body["messages"]):
        raise WireError("each of 'messages' must be an object")
    if not isinstance(body.get("tools", []), list):
        raise WireError("'tools' must be a list")
    return body
