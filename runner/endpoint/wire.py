"""What the endpoint reads from an agent's request, in one shape for both wire formats.

Both formats are read into the OpenAI chat-completions shapes that every provider takes
(runner.providers.base): messages with ``role``/``content``/``tool_calls``/``tool_call_id``, tools as
``{type: function, function: {name, description, parameters}}``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

NESTING_LIMIT = 100  # levels of arrays and objects a request body may nest; a chat request needs about 10


class WireError(Exception):
    """A request body the endpoint cannot read: answered 400 with this message."""


def parse_body(body: bytes) -> Any:
    """The JSON of a request body (an empty one is null). Raises WireError for arrays and objects nested
    deeper than NESTING_LIMIT, and ValueError for a body that is not JSON text (UTF-8, -16 or -32)."""
    text = body.decode(json.detect_encoding(body), "surrogatepass")
    try:
        data = json.loads(text or "null")
    except RecursionError:  # far deeper than the limit: Python's json stops at its recursion limit
        raise WireError(_TOO_DEEP) from None
    if text.count("[") + text.count("{") > NESTING_LIMIT and _depth(text) > NESTING_LIMIT:
        raise WireError(_TOO_DEEP)
    return data


_TOO_DEEP = f"its JSON nests arrays and objects more than {NESTING_LIMIT} levels deep"
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # one JSON string, in text that is JSON
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 if b in b"]}" else 0 for b in range(256)]


def _depth(text: str) -> int:
    """How deep the arrays and objects of ``text``, valid JSON, nest: its strings left out (outside them
    JSON is ASCII), the deepest count of brackets opened and not yet closed."""
    brackets = _STRING.sub("", text).encode("ascii").translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


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
        sent: the body's ``messages`` as the agent sent them; for Messages, its ``system`` first as
            ``{role: system, content}`` (the content as sent: a string or blocks).
        sent_tools: the body's ``tools`` as the agent sent them.
    """

    api: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    stream: bool = False
    model: str = ""
    failed_results: frozenset[str] = frozenset()
    include_usage: bool = False
    sent: list[dict[str, Any]] = field(default_factory=list)
    sent_tools: list[dict[str, Any]] = field(default_factory=list)


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
    """``body`` when it is a JSON object with a list of ``messages`` and a list of ``tools`` (or none), each
    an object; raises WireError otherwise."""
    if not isinstance(body, dict):
        raise WireError("the request body is not a JSON object")
    if not isinstance(body.get("messages"), list):
        raise WireError("'messages' must be a list")
    if not all(isinstance(m, dict) for m in body["messages"]):
        raise WireError("each of 'messages' must be an object")
    tools = body.get("tools") or []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise WireError("'tools' must be a list of objects")
    return body
