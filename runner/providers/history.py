"""The assistant message that goes back to the provider in the conversation history.

A provider may require parts of its own reply back on the next request: Anthropic
thinking blocks with their ``signature`` (and ``redacted_thinking`` data), Gemini
thought signatures (folded into call ids and in ``provider_specific_fields``), a
Gemini-backed OpenAI-compatible server's ``extra_content``. So the history keeps
the message as the provider sent it (an OpenAI-compatible server's own, else as litellm returned it),
with these edits only:

* empty fields litellm adds are left out (``content`` that is ``""`` or null,
  ``images: []``, ``provider_specific_fields`` holding only nulls, a tool call's
  ``index``): litellm turns an empty ``content`` into an invented placeholder
  text (Anthropic) or an empty text part (Gemini);
* each tool call's id is the one tooltrial answered it under (a missing or
  repeated id was replaced by ``runner.providers.parse``);
* arguments that are not a JSON object go back as ``"{}"``, and repaired ones
  (``"null"``, a JSON string holding an object) as the object they were taken
  for: litellm refuses to convert them for Anthropic and Gemini, so the next
  request would fail. Valid arguments go back byte for byte as the model sent them;
* a call sent twice in one reply (the same id, name and arguments) is there once.

Pure: no I/O, no litellm import.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from runner.providers.base import ToolCall
from runner.providers.parse import distinct_calls

EMPTY_ARGUMENTS = "{}"


def provider_message(message: Mapping[str, Any], calls: Sequence[ToolCall],
                     sent: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The history entry for the provider's assistant ``message`` (OpenAI chat shape, litellm's extra
    fields kept), whose parsed tool calls are ``calls`` (same order).

    ``sent`` is the message as an OpenAI-compatible server sent it (its raw body's first choice), when
    there is one: that goes back instead, so a field litellm moved (OpenRouter's ``reasoning_details``
    into ``provider_specific_fields``) or made up (``reasoning_content`` from ``reasoning``) does not
    reach the server. Without it (a stream, a route litellm converts) litellm's message is the base.

    Returns None when the message's tool calls do not line up with ``calls`` (a legacy
    ``function_call`` reply): the caller then builds the entry from the parsed reply.
    """
    base = sent if sent is not None else message
    kept = {key: copy.deepcopy(value) for key, value in base.items() if not _empty(value)}
    kept["role"] = "assistant"
    raw_calls = distinct_calls(kept.pop("tool_calls", None) or [])
    kept.pop("function_call", None)  # the parsed calls below replace the pre-tools single-call shape
    if len(raw_calls) != len(calls) or not all(isinstance(c, dict) for c in raw_calls):
        return None
    if calls:
        kept["tool_calls"] = [_call(raw, call) for raw, call in zip(raw_calls, calls, strict=True)]
    return kept


def _call(raw: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """One tool call for the history: as sent, under tooltrial's id, its ``index`` dropped."""
    kept = {key: value for key, value in raw.items() if key != "index" and not _empty(value)}
    function = dict(kept.get("function") or {})
    function.update(name=call.name, arguments=arguments_for(call, function.get("arguments")))
    kept.update(id=call.id, type=kept.get("type") or "function", function=function)
    return kept


def arguments_for(call: ToolCall, sent: Any) -> str:
    """The arguments string of ``call`` for the history, given what the model ``sent``: the text as
    sent when it is a JSON object, ``"{}"`` when it is not one; re-encoded from the parsed object
    only when there is no text (arguments sent as an object, or empty) or the text cannot be
    sent as UTF-8 (a lone surrogate escape such as ``\\ud800``)."""
    if call.arguments is None:
        return EMPTY_ARGUMENTS
    if call.repaired is not None:  # "null" or a JSON string: neither converts for Anthropic or Gemini
        return json.dumps(call.arguments)
    if isinstance(sent, str) and sent.strip() and _utf8(sent):
        return sent
    return json.dumps(call.arguments)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _empty(value: Any) -> bool:
    """None, ``""``, an empty list or dict, or a mapping of nothing but such values."""
    if value is None or value == "" or value == [] or value == {}:
        return True
    return isinstance(value, Mapping) and all(_empty(v) for v in value.values())


def reasoning_text(message: Mapping[str, Any]) -> str | None:
    """The reasoning beside a reply: litellm's ``reasoning_content``, else the thinking blocks' text
    joined; None when there is none."""
    text = message.get("reasoning_content")
    if not text:
        blocks = message.get("thinking_blocks") or ()
        text = "".join(b.get("thinking") or "" for b in blocks if isinstance(b, Mapping))
    return text if isinstance(text, str) and text else None
