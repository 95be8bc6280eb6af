"""Tool calls a model wrote as text in its reply instead of calling: found so a zero score is explained.

Models served without a tool-call parser write their calls into ``content``, in the forms their
chat templates use: Hermes / Qwen ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
(https://github.com/NousResearch/Hermes-Function-Calling), Llama 3.x
``<function=NAME>{...}</function>``
(https://www.llama.com/docs/model-cards-and-prompt-formats/llama3_1/), or the whole reply being one
JSON object ``{"name": ..., "arguments"|"parameters": {...}}``, or vLLM's
``{"type": "function", "function": {"name": ..., "parameters": {...}}}``, (or a list of them), maybe in a code
fence. Pure: no I/O; the text is untrusted, so only its first MAX_SCAN characters are read and the
patterns are non-greedy between fixed tags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from runner.providers.base import ToolCall
from runner.providers.parse import parse_arguments

MAX_SCAN = 100_000  # characters of a reply searched for calls
_TAGGED = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FUNCTION = re.compile(r"<function=([A-Za-z0-9_.-]{1,128})>(.*?)</function>", re.DOTALL)
_FENCE = re.compile(r"\A```[A-Za-z]*\n(.*)\n```\Z", re.DOTALL)


def find_text_calls(text: str | None, offered: Collection[str]) -> tuple[ToolCall, ...]:
    """The calls of offered tools written in ``text``, in order, ids ``text_1``, ``text_2``...

    A call names a tool in ``offered``; its arguments are an object or a JSON string of one (anything
    else gives ``arguments=None`` and ``error``, as for a native call). Nothing in ``text`` raises.
    """
    if not text:
        return ()
    text = text[:MAX_SCAN]
    found: list[tuple[str, Any]] = []
    for inner in _TAGGED.findall(text):
        found += _named(_json(inner))
    for name, inner in _FUNCTION.findall(text):
        found.append((name, inner.strip()))
    if not found:
        bare = text.strip()
        fenced = _FENCE.match(bare)
        found = _named(_json(fenced.group(1) if fenced else bare))
    calls: list[ToolCall] = []
    for name, arguments in found:
        if name in offered:
            parsed, error, raw, _ = parse_arguments(arguments)
            calls.append(ToolCall(f"text_{len(calls) + 1}", name, parsed, error, raw))
    return tuple(calls)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _named(value: Any) -> list[tuple[str, Any]]:
    """``(name, arguments)`` of an object ``{name, arguments|parameters}`` (or one wrapped as
    ``{type: function, function: {...}}``) or of a list of such."""
    items = value if isinstance(value, list) else [value]
    named = []
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "function" and isinstance(item.get("function"), Mapping):
            item = item["function"]
        if isinstance(item, Mapping) and isinstance(item.get("name"), str) and ("arguments" in item
                                                                               or "parameters" in item):
            arguments = item.get("arguments", item.get("parameters"))
            if isinstance(arguments, (Mapping, str)) or arguments is None:
                named.append((str(item["name"]), arguments))
    return named
