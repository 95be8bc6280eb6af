"""YAML text to plain data, with positions: ruamel's round-trip parser, every error at its line
and column, aliases and tags held to plain data (runner.spec.yamllimits). Case files are read
on the fast path (runner.spec.fastyaml) first; this reads the rest, and every file with an error.
"""

from __future__ import annotations

import datetime
import math
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import (
    ConstructorError,
    DuplicateKeyError,
    RoundTripConstructor,
)
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from runner.errors import CaseFileError, Location
from runner.spec.positions import item_at, key_at, kind_of
from runner.spec.yamlhints import explain
from runner.spec.yamllimits import LimitedComposer, Refused
from runner.text import first_line

_DUPLICATE_KEY = re.compile(r'found duplicate key "(.*)" with value')
_PLAIN_HINT = "use plain text, numbers, booleans, lists and mappings"
# What ruamel's constructors raise, unmarked, for values they cannot build.
_UNREADABLE = (ValueError, TypeError, KeyError, IndexError, OverflowError)


class _Constructor(RoundTripConstructor):
    """The round-trip constructor, with positions for the plain exceptions some bad values raise.

    ruamel raises ValueError, KeyError... without a mark for values such as
    ``!!int x`` or ``2024-13-45``; those become ConstructorErrors at the scalar.
    ``last`` is the node constructed most recently, which places the rest
    (an unhashable key fails after its parts were built).

    ``!!str 5``, a ``<<`` that is no key and YAML 1.1's ``=`` are read as plain
    text: ruamel builds them in a generator that, left unfinished when a later
    value fails, prints a ConstructorError to stderr when it is collected.
    """

    last: Any = None

    def construct_text(self, node: Any) -> Any:
        return self.construct_scalar(node)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        self.last = node
        try:
            return super().construct_object(node, deep)
        except _UNREADABLE as e:
            if not isinstance(node.value, str):
                raise
            shown = repr(node.value) if len(node.value) <= 40 else f"{node.value[:30]!r}... ({len(node.value)} characters)"
            problem = f"cannot read {shown} as {str(node.tag).rsplit(':', 1)[-1]}"
            raise ConstructorError(None, None, problem, node.start_mark) from e


for _tag in ("str", "merge", "value"):
    _Constructor.add_constructor(f"tag:yaml.org,2002:{_tag}", _Constructor.construct_text)


def parse(text: str, file: str) -> Any:
    """The single YAML document in ``text`` as ruamel nodes; None for an empty document.

    ``file`` is only used in error locations. Raises CaseFileError, with line
    and column where YAML gives one, for syntax errors, duplicate keys, values
    that cannot be read, and what ``runner.spec.yamllimits`` refuses (tags that are
    not plain data, recursive aliases, aliases that expand too far).
    """
    yaml = YAML(typ="rt")
    yaml.Composer = LimitedComposer
    yaml.Constructor = _Constructor
    try:
        return yaml.load(text)
    except Refused as e:
        raise CaseFileError(e.message, _mark(file, e.mark), hint=e.hint) from e
    except DuplicateKeyError as e:
        found = _DUPLICATE_KEY.search(str(e.problem))
        message = f"duplicate key {found.group(1)!r}" if found else str(e.problem)
        hint = "a key may appear once per mapping"
        raise CaseFileError(message, _mark(file, e.problem_mark), hint=hint) from e
    except ReaderError as e:
        line = text.count("\n", 0, e.position) + 1
        column = e.position - text.rfind("\n", 0, e.position)
        raise CaseFileError(f"invalid YAML: {first_line(str(e), 'not YAML')}", Location(file, line, column)) from e
    except MarkedYAMLError as e:
        worded = explain(e, text)
        if worded is not None:
            raise CaseFileError(worded.message, _location(file, worded.at), hint=worded.hint) from e
        where = _mark(file, e.problem_mark or e.context_mark)
        tabs = "indent with spaces, not tabs" if "'\\t'" in str(e.problem) else ""
        raise CaseFileError(f"invalid YAML: {e.problem}", where, hint=_context(e) or tabs) from e
    except _UNREADABLE as e:
        last = yaml.constructor.last
        raise CaseFileError(f"invalid YAML: {e}", _mark(file, last.start_mark if last else None)) from e
    except YAMLError as e:
        raise CaseFileError(f"invalid YAML: {e}", Location(file)) from e
    except RecursionError as e:
        raise CaseFileError("invalid YAML: nested too deeply", Location(file)) from e


def _mark(file: str, mark: Any) -> Location:
    return _location(file, (mark.line, mark.column)) if mark else Location(file)


def _location(file: str, at: tuple[int, int]) -> Location:
    """The Location of a 0-based (line, column)."""
    return Location(file, at[0] + 1, at[1] + 1)


def _context(e: MarkedYAMLError) -> str:
    if not e.context or not e.context_mark or e.context_mark is e.problem_mark:
        return ""
    return f"{e.context} at line {e.context_mark.line + 1}, column {e.context_mark.column + 1}"


def to_plain(node: Any, file: str) -> Any:
    """``node`` (from ``parse``) as plain dicts, lists, str, int, float, bool and None.

    Dates and timestamps become ISO text. Raises CaseFileError at the offending node for a
    key that is not text, or a number that is not finite (``.inf``, ``.nan``,
    ``1e999``: JSON has none).
    """
    start = (node.lc.line, node.lc.col) if isinstance(node, (CommentedMap, CommentedSeq)) else (0, 0)
    return _plain(node, start, file)


def _plain(node: Any, at: tuple[int, int], file: str) -> Any:
    """``node`` at 0-based ``at`` as plain data."""
    if isinstance(node, CommentedMap):
        return _plain_map(node, at, file)
    if isinstance(node, CommentedSeq):
        return [_plain(item, item_at(node, i, at), file) for i, item in enumerate(node)]
    if node is None or isinstance(node, bool):
        return node
    if isinstance(node, float) and not math.isfinite(node):
        got = "NaN" if math.isnan(node) else "-infinity" if node < 0 else "infinity"
        hint = "JSON has no infinity or NaN: write a number under 1e308, or quote it to make it text"
        raise CaseFileError(f"expected a finite number, got {got}", _location(file, at), hint=hint)
    for kind in (str, int, float):
        if isinstance(node, kind):
            return kind(node)
    if isinstance(node, (datetime.date, datetime.datetime)):
        return node.isoformat()
    raise CaseFileError(f"unsupported YAML value: {kind_of(node)}", _location(file, at), hint=_PLAIN_HINT)


def _plain_map(node: CommentedMap, at: tuple[int, int], file: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        key_place, value_place = key_at(node, key, at), item_at(node, key, at)
        if not isinstance(key, str):
            raise CaseFileError(f"keys must be text, got {kind_of(key)}", _location(file, key_place), hint="quote the key")
        out[str(key)] = _plain(value, value_place, file)
    return out
