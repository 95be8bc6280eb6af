"""A reply the response cache keeps: a Completion as JSON text of one declared shape, and back.

The shape (``REPLY``, ``USAGE``, ``CALL``) names every field and what it may hold; reading back
checks all of them and refuses any other field, so an entry from elsewhere (edited, truncated,
another format) is a ValueError, never a Completion with a wrong type inside. What a kept reply
leaves out belongs to one request: its latency, tries and cache mark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import orjson

from runner.providers.base import Completion, ToolCall, Usage

FORMAT = 2  # of a kept reply (2: a call says how its arguments were repaired); in every key, so another is a miss
Check = tuple[Callable[[Any], bool], str]  # a test of one JSON value, and what it says the value must be


def _optional(check: Check) -> Check:
    test, said = check
    return (lambda value: value is None or test(value)), f"{said} or null"


TEXT: Check = (lambda value: type(value) is str, "text")
COUNT: Check = (lambda value: type(value) is int and value >= 0, "a whole number, 0 or more")
NUMBER: Check = (lambda value: type(value) in (int, float) and value >= 0, "a number, 0 or more")
OBJECT: Check = (lambda value: type(value) is dict, "an object")
USAGE = {"prompt_tokens": _optional(COUNT), "completion_tokens": _optional(COUNT), "total_tokens": _optional(COUNT),
         "cost": _optional(NUMBER), "reasoning_tokens": _optional(COUNT),
         "cached_tokens": _optional(COUNT), "cache_write_tokens": _optional(COUNT)}
CALL = {"id": TEXT, "name": TEXT, "arguments": _optional(OBJECT), "error": _optional(TEXT),
        "raw_arguments": _optional(TEXT), "repaired": _optional(TEXT)}
REPLY = {
    "format": (lambda value: type(value) is int and value == FORMAT, f"{FORMAT}"),
    "content": _optional(TEXT), "finish_reason": _optional(TEXT), "reasoning": _optional(TEXT),
    "native_finish_reason": _optional(TEXT), "ttft": _optional(NUMBER),
    "streamed": (lambda value: type(value) is bool, "true or false"),
    "message": _optional((lambda value: type(value) is dict and value.get("role") == "assistant",
                          "an assistant message")),
    "usage": _optional((lambda value: _fits(value, USAGE, "usage."), "an object")),
    "tool_calls": (lambda value: type(value) is list and all(_fits(c, CALL, f"tool_calls[{i}].")
                                                              for i, c in enumerate(value)), "a list"),
}
_BUILT = ("format", "usage", "tool_calls")  # fields not copied as they are


def encode(completion: Completion) -> bytes:
    """The JSON text (UTF-8) kept for ``completion``."""
    kept = {"format": FORMAT, **{name: getattr(completion, name) for name in REPLY if name not in _BUILT},
            "message": dict(completion.message) if completion.message is not None else None,
            "usage": dataclasses.asdict(completion.usage) if completion.usage is not None else None,
            "tool_calls": [dataclasses.asdict(c) for c in completion.tool_calls]}
    return orjson.dumps(kept)


def quoted(text: str) -> bytes:
    """``text`` as it reads inside a string of ``encode``'s JSON."""
    return orjson.dumps(text)[1:-1]


def decode(text: bytes) -> Completion:
    """The reply ``encode`` kept. Raises ValueError, saying which field is wrong, when ``text`` is
    not JSON of the shape ``REPLY`` (never echoing what the field held)."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as e:
        raise ValueError(f"not JSON text, from line {e.lineno} column {e.colno}") from e
    if type(data) is not dict or data.get("format") != FORMAT:
        raise ValueError(f"not a kept reply of format {FORMAT}")
    _fits(data, REPLY, "")
    return Completion(**{name: data[name] for name in REPLY if name not in _BUILT},
                      usage=Usage(**data["usage"]) if data["usage"] is not None else None,
                      tool_calls=tuple(ToolCall(**c) for c in data["tool_calls"]))


def _fits(data: Any, shape: dict[str, Check], where: str) -> bool:
    """True when ``data`` is an object with exactly the fields of ``shape``, each passing its check;
    else raises ValueError naming the first field that does not (``where`` prefixes its path)."""
    whole = where.rstrip(".") or "the entry"
    if type(data) is not dict:
        raise ValueError(f"{whole} is not an object")
    if data.keys() != shape.keys():
        missing = sorted(shape.keys() - data.keys())
        raise ValueError(f"no field {where}{missing[0]}" if missing else f"{whole} has a field format {FORMAT} does not")
    for name, (test, said) in shape.items():
        if not test(data[name]):
            raise ValueError(f"{where}{name} is not {said}")
    return True
