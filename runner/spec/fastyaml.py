"""The fast path for reading a case file: libyaml's parser (through PyYAML) with YAML 1.2 typing.

ruamel's round-trip parser (runner.spec.source) keeps every position, which errors
need, but is pure Python and slow. Most files have no error, so they are
first read here, from libyaml's events, many times faster. Anything this
reader is not sure to read exactly as ruamel would makes it give up (return None), and the caller reads the file again with ruamel: a
syntax error, a tab or a YAML 1.1 line break (NEL, U+2028, U+2029) anywhere or a block scalar header with more than its
indicators on it (ruamel refuses some of those that libyaml takes), a
document that is a scalar, a ``%YAML`` directive, several documents, an
explicit tag, an anchor or alias, a key that is not text or is repeated, and any plain scalar
that YAML 1.2 makes something other than text, ``true``/``false``, null, a
decimal integer or a plain decimal fraction, with or without an exponent (``0x1F``, ``.inf``, ``1_000``,
``2024-01-01``, ``<<``...), or that is an integer of more digits than Python
converts or a fraction beyond a float's range (ruamel's path refuses those).
"""

from __future__ import annotations

import functools
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from ruamel.yaml.resolver import implicit_resolvers

_BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)")
_OTHER_BREAKS = re.compile("[\x85\u2028\u2029]")  # line breaks to libyaml (YAML 1.1), not to ruamel: lines would differ
_BLOCK_HEADER = re.compile(r"[|>][-+1-9]*[ ]*(?:\n|$)")
_SCALAR, _SEQUENCE, _SEQUENCE_END = yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.SequenceEndEvent
_MAPPING, _MAPPING_END = yaml.MappingStartEvent, yaml.MappingEndEvent
_CASE_DEPTH = 2  # the file (0), its ``cases`` list (1), a case in it (2)


class _GiveUp(Exception):
    """The text holds something only the round-trip parser reads exactly."""


@dataclass(frozen=True)
class FastDoc:
    """A case file read on the fast path.

    Attributes:
        data: the document as plain dicts, lists, str, int, float, bool and None.
        lines: ``id(mapping) -> 1-based line`` where each mapping of ``data`` down to the cases starts
            (``_CASE_DEPTH``: a case is an item of the file's list, or of its ``cases`` list).
    """

    data: Any
    lines: dict[int, int]


def fast_load(text: str) -> FastDoc | None:
    """``text`` (one YAML document) read with libyaml, or None when the caller must use ruamel.

    None also when PyYAML was built without libyaml. Never raises.
    """
    if not getattr(yaml, "__with_libyaml__", False) or "\t" in text or _OTHER_BREAKS.search(text):
        return None
    loader = yaml.CBaseLoader(text)
    reader = _Reader(text)
    try:
        events = iter(loader.get_event, None)
        _expect(events, yaml.StreamStartEvent)
        start = _expect(events, yaml.DocumentStartEvent)
        first = next(events)
        if start.version is not None or start.tags or isinstance(first, yaml.ScalarEvent):
            raise _GiveUp
        data = reader.node(first, events)
        _expect(events, yaml.DocumentEndEvent)
        _expect(events, yaml.StreamEndEvent)
    except (_GiveUp, yaml.YAMLError, RecursionError, StopIteration):
        return None
    finally:
        loader.dispose()
    return FastDoc(data, reader.lines)


def _expect(events: Iterator[Any], kind: type) -> Any:
    event = next(events)
    if not isinstance(event, kind):
        raise _GiveUp
    return event


class _Reader:
    """Builds plain data from libyaml events, noting where each mapping starts.

    The hot loop of loading a suite: events are told apart by their exact type, and a plain scalar
    that can only be text (most keys and values of a case file) is taken inline, without a call;
    a plain scalar that may be typed is typed once per distinct text in the file (``typed``).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: dict[int, int] = {}
        self.typed: dict[str, Any] = {}
        self.first = _special()[0] | _TYPED_FIRST  # what a plain scalar that is not text may start with
        self.marked = "&" in text or "!" in text  # else no node has an anchor or a tag to look for

    def node(self, start: Any, events: Iterator[Any], depth: int = 0) -> Any:
        """The value that starts with the event ``start``, ``depth`` levels down the document; the events it spans
        are consumed."""
        kind = type(start)
        if kind is _SCALAR:
            return self.scalar(start)
        if kind is not _SEQUENCE and kind is not _MAPPING:
            raise _GiveUp  # an alias
        if start.anchor is not None or start.tag is not None:
            raise _GiveUp
        first, scalar, marked = self.first, self.scalar, self.marked
        if kind is _SEQUENCE:
            items: list[Any] = []
            for event in events:
                kind = type(event)
                if kind is _SCALAR:
                    value = event.value
                    # Inline: a plain scalar, neither anchored nor tagged, that can only be text.
                    if event.style or not value or value[0] in first or marked and (event.anchor is not None or event.tag is not None):
                        value = scalar(event)
                    items.append(value)
                elif kind is _SEQUENCE_END:
                    return items
                else:
                    items.append(self.node(event, events, depth + 1))
            raise _GiveUp
        mapping: dict[str, Any] = {}
        if depth <= _CASE_DEPTH:
            self.lines[id(mapping)] = start.start_mark.line + 1
        for event in events:
            kind = type(event)
            if kind is _MAPPING_END:
                return mapping
            if kind is not _SCALAR:  # a key that is no scalar is no text
                raise _GiveUp
            key = event.value
            if event.style or not key or key[0] in first or marked and (event.anchor is not None or event.tag is not None):
                key = scalar(event)
            if type(key) is not str or key in mapping:
                raise _GiveUp
            event = next(events)
            if type(event) is _SCALAR:
                value = event.value
                if event.style or not value or value[0] in first or marked and (event.anchor is not None or event.tag is not None):
                    value = scalar(event)
                mapping[sys.intern(key)] = value
            else:
                mapping[sys.intern(key)] = self.node(event, events, depth + 1)
        raise _GiveUp

    def scalar(self, event: Any) -> Any:
        if event.anchor is not None or event.tag is not None:
            raise _GiveUp
        value, style = event.value, event.style
        if not style:  # plain (libyaml says ""), so typed by its text
            if value and value[0] not in self.first:
                return value
            if value not in self.typed:
                self.typed[value] = _plain(value)
            return self.typed[value]
        if (style == "|" or style == ">") and not _BLOCK_HEADER.match(self.text, event.start_mark.index):
            raise _GiveUp
        return value  # quoted or a block scalar: text


# The first characters of the plain scalars ``_plain`` reads as something else than text (booleans,
# nulls, numbers); ``_special`` adds those of every other type.
_TYPED_FIRST = frozenset("tTfFnN~+-0123456789")


def _plain(value: str) -> Any:
    """A plain scalar typed as ruamel types it under YAML 1.2, for the forms read here."""
    if value in _BOOLS:
        return _BOOLS[value]
    if value in _NULLS:
        return None
    if _INT.fullmatch(value):
        return _number(int, value)
    if _FLOAT.fullmatch(value):
        return _number(float, value)
    first, special = _special()
    if value[:1] in first and special.match(value):
        raise _GiveUp
    return value


def _number(kind: type[int | float], value: str) -> int | float:
    """``value`` as ``kind``; ruamel reads (or refuses, with a position) an integer of more digits
    than Python converts and a fraction too large for a float."""
    try:
        number = kind(value)
    except ValueError:
        raise _GiveUp from None
    if isinstance(number, float) and not math.isfinite(number):
        raise _GiveUp
    return number


@functools.cache
def _special() -> tuple[frozenset[str], re.Pattern[str]]:
    """Every other plain scalar ruamel would not read as text, by its own YAML 1.2 rules:
    the first characters such a scalar can start with, and one pattern matching them all."""
    resolvers = [(regexp, first) for versions, _, regexp, first in implicit_resolvers if (1, 2) in versions]
    pattern = "|".join(f"(?:{regexp.pattern})" for regexp, _ in resolvers)
    return frozenset(c for _, first in resolvers for c in first), re.compile(pattern, re.VERBOSE)
