"""Ollama's own assistant messages, sent back to it as it sent them.

litellm's Ollama route builds each request's messages afresh from the OpenAI chat shape the history
keeps (runner.providers.history): every message gets ``images: []``, an assistant message a ``content``
and, for each tool call, the id litellm made up for it, while Ollama's own fields it dropped on the way
in (a tool call's ``index``, ids of its own) are lost. So the request body litellm built is edited in
place before it is sent, from litellm's per-request logger hook (``logger_fn``, called with the body
as ``complete_input_dict`` just before the request goes out): each assistant message becomes the
message Ollama sent (its ``message``, kept as each reply came), and an empty ``images`` list is left
out of the others. A reply whose body was not kept (a stream, a reply the response cache replayed, one
pushed out of the ``KEPT`` most recent) goes back as Ollama's own shape rebuilt from the history: its
``content`` (``""`` when none), ``thinking`` and its calls' names and arguments as objects.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

KEPT = 4096  # Ollama messages kept per provider (runs share one), most recent first


class OllamaEcho:
    """What an Ollama provider's replies were, by the history entry tooltrial made of each (thread-safe:
    a provider serves every run of its arm)."""

    def __init__(self) -> None:
        self._sent: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, entry: Mapping[str, Any] | None, raw: Mapping[str, Any] | None) -> None:
        """Keep ``raw``'s ``message`` (an ``/api/chat`` body) as what goes back for history ``entry``."""
        message = raw.get("message") if isinstance(raw, Mapping) else None
        if entry is None or not isinstance(message, Mapping):
            return
        with self._lock:
            self._sent[_key(entry)] = dict(message)
            self._sent.move_to_end(_key(entry))
            while len(self._sent) > KEPT:
                self._sent.popitem(last=False)

    def rewrite(self, body: Any, messages: Sequence[Mapping[str, Any]]) -> None:
        """Edit ``body`` (the ``/api/chat`` request litellm built from ``messages``, one message each, in
        order) in place: each assistant message as Ollama sent it, no empty ``images``. A body of another
        shape is left as it is."""
        sent = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(sent, list) or len(sent) != len(messages):
            return
        for index, (wire, message) in enumerate(zip(sent, messages)):
            if message.get("role") == "assistant":
                sent[index] = self._own(message)
            elif isinstance(wire, dict) and wire.get("images") == []:
                del wire["images"]

    def _own(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        with self._lock:
            kept = self._sent.get(_key(entry))
        return dict(kept) if kept is not None else rebuilt(entry)


def rebuilt(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An assistant history entry (OpenAI chat shape) in Ollama's shape: ``role``, ``content`` (``""``
    when none), ``thinking`` (from ``reasoning_content``) when there is one, and ``tool_calls`` as
    ``{function: {name, arguments}}`` with the arguments as an object."""
    message: dict[str, Any] = {"role": "assistant", "content": entry.get("content") or ""}
    if entry.get("reasoning_content"):
        message["thinking"] = entry["reasoning_content"]
    calls = [c.get("function") or {} for c in entry.get("tool_calls") or () if isinstance(c, Mapping)]
    if calls:
        message["tool_calls"] = [{"function": {"name": f.get("name"), "arguments": _object(f.get("arguments"))}}
                                 for f in calls]
    return message


def _object(arguments: Any) -> Any:
    """Arguments as Ollama takes them: a JSON object, never its text (history sends valid text or ``"{}"``)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return {}
    return arguments if isinstance(arguments, Mapping) else {}


def _key(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, default=str)
