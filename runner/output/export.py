"""Finished runs as data for fine-tuning or analysis (``tooltrial export``): one JSON line per run.

``EXPORT_FORMATS`` is the table of formats, by name, each a function from a run record to its line's
object. The one format now, ``messages``, is the conversation in OpenAI's chat format (``messages`` and
``tools``, as OpenAI's fine-tuning files and chat completions requests take them) with the run's key,
verdict and scores beside it.

The built-in loop's record keeps the messages in the OpenAI chat form litellm takes, whatever the
provider (litellm translates them for Anthropic, Gemini or Ollama on the way out), so they are exported
as recorded, provider fields such as ``thinking_blocks`` included. An external agent's messages are kept
as it sent them: those of its OpenAI chat requests go as they are, those of its Anthropic Messages
requests (``agent.wire`` entries with ``api: messages``) are converted (text blocks to ``content``,
``tool_use`` to ``tool_calls``, each ``tool_result`` a ``tool`` message, ``input_schema`` to
``parameters``). The reply the agent got last, which no request of its carried, ends the messages as
the built-in loop's final reply does. ``cut`` lists the indexes of the messages whose text the record
keeps cut to its head and tail (runner.run.transcript).
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from runner.kinds import Status
from runner.run.record import RunRecord
from runner.scoring.summary import RunSummary


@dataclass(frozen=True)
class Filter:
    """Which runs are exported: ``statuses`` (runner.kinds.Status), ``cases`` (fnmatch globs of the case's
    ``group/id``), ``providers`` (fnmatch globs of the provider's name); an empty one keeps every run.
    ``no_cut``: leave out the runs any of whose message texts the record keeps cut."""

    statuses: frozenset[Status] = frozenset()
    cases: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    no_cut: bool = False

    def keeps(self, run: RunSummary) -> bool:
        """Whether ``run`` passes the status, case and provider filters (``no_cut`` needs the whole record)."""
        return ((not self.statuses or run.status in self.statuses) and _any(run.case, self.cases)
                and _any(run.provider, self.providers))


def _any(name: str, globs: Sequence[str]) -> bool:
    return not globs or any(fnmatch.fnmatchcase(name, glob) for glob in globs)


def messages_line(record: RunRecord) -> dict[str, Any]:
    """The ``messages`` format's object of one run: ``messages`` and ``tools`` in OpenAI's chat format,
    then ``case``, ``provider``, ``prompt``, ``arm``, ``run``, ``attempt``, ``agent`` (the external agent's
    name, None for the built-in loop), ``status``, ``outcome`` and ``process`` (in [0, 1], None without such
    checks), ``accuracy``, ``failure``, ``error_kind``, ``cause``, ``final_reply`` and ``cut``, the 0-based
    indexes of the messages whose text is kept cut (runner.run.transcript.Cut)."""
    messages, tools = [dict(m) for m in record.messages], [dict(t) for t in record.tools]
    if record.agent is not None:
        messages, tools = _agent_messages(record, messages), [_tool(t) for t in tools]
    return {"messages": messages, "tools": tools, "case": record.case, "provider": record.provider,
            "prompt": record.prompt, "arm": record.arm, "run": record.run, "attempt": record.attempt,
            "agent": (record.agent or {}).get("name"), "status": record.status, "outcome": record.outcome,
            "process": record.process, "accuracy": record.accuracy, "failure": record.failure,
            "error_kind": record.error_kind, "cause": record.cause, "final_reply": record.final_reply,
            "cut": sorted({cut.message for cut in record.message_cuts})}


EXPORT_FORMATS: dict[str, Callable[[RunRecord], dict[str, Any]]] = {"messages": messages_line}


def export_lines(records: Iterable[RunRecord], line: Callable[[RunRecord], dict[str, Any]],
                 keep: Filter) -> Iterator[str]:
    """Each of ``records`` that ``keep`` keeps (already filtered by summary) as one JSON line of ``line``'s object,
    ``\\n``-ended, non-ASCII as ``\\u`` escapes (so a lone surrogate a model sent is written too)."""
    for record in records:
        if keep.no_cut and record.message_cuts:
            continue
        yield json.dumps(line(record)) + "\n"


def _agent_messages(record: RunRecord, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An external agent's messages in OpenAI's chat format, its last reply appended."""
    wire = (record.agent or {}).get("wire") or []
    anthropic = {i for entry in wire if entry.get("api") == "messages" and entry.get("messages")
                 for i in range(*entry["messages"])}
    converted = [piece for index, message in enumerate(messages)
                 for piece in (_from_anthropic(message) if index in anthropic else [message])]
    if record.final_reply:
        converted.append({"role": "assistant", "content": record.final_reply})
    return converted


def _text(content: Any) -> str:
    """The text of an Anthropic content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "".join(b.get("text") or "" for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _from_anthropic(message: dict[str, Any]) -> list[dict[str, Any]]:
    """One Anthropic Messages message as OpenAI chat messages: a user's tool results each a ``tool`` message
    before its text; an assistant's ``tool_use`` blocks its ``tool_calls`` (``input`` as a JSON string)."""
    role, content = message.get("role"), message.get("content")
    if isinstance(content, str) or role == "system":
        return [{"role": role, "content": _text(content)}]
    blocks = [b for b in content or [] if isinstance(b, dict)]
    text = _text(blocks)
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = [{"id": b.get("id"), "type": "function",
                  "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}}
                 for b in blocks if b.get("type") == "tool_use"]
        return [{**out, "tool_calls": calls} if calls else out]
    results = [{"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))}
               for b in blocks if b.get("type") == "tool_result"]
    return results + ([{"role": role, "content": text}] if text else [])


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as an OpenAI function tool: as sent when it is one, else an Anthropic tool converted."""
    if tool.get("type") == "function":
        return tool
    return {"type": "function", "function": {"name": tool.get("name"), "description": tool.get("description", ""),
                                             "parameters": tool.get("input_schema") or {"type": "object"}}}
