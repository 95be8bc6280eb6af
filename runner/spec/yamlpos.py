"""YAML for case authors: parse with positions, find any key's or value's line and column, say it in words.

ruamel's round-trip loader gives mappings and sequences (CommentedMap /
CommentedSeq) an ``.lc`` attribute: ``lc.line``/``lc.col`` is where the
container starts, ``lc.data[key]`` is ``[key_line, key_col, value_line,
value_col]`` in a mapping and ``[line, col]`` in a sequence, all 0-based.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import ConstructorError, DuplicateKeyError, RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.reader import ReaderError

from runner.errors import CaseFileError, Location
from runner.spec.yamllimits import LimitedComposer, Refused

Position = tuple[int, int]  # 1-based (line, column)

_DUPLICATE_KEY = re.compile(r'found duplicate key "(.*)" with value')
_PLAIN_HINT = "use plain text, numbers, booleans, lists and mappings"
_NOUNS = {  # JSON Schema type: (singular, plural) as a YAML author reads it
    "string": ("a string", "strings"),
    "integer": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "boolean": ("a boolean", "booleans"),
    "object": ("a mapping", "mappings"),
    "array": ("a list", "lists"),
}
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
    that cannot be read, and what ``runner.yamllimits`` refuses (tags that are
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
        raise CaseFileError(f"invalid YAML: {str(e).splitlines()[0]}", Location(file, line, column)) from e
    except MarkedYAMLError as e:
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
        return [_plain(item, _item_at(node, i, at), file) for i, item in enumerate(node)]
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
        key_at, value_at = _key_at(node, key, at), _item_at(node, key, at)
        if not isinstance(key, str):
            raise CaseFileError(f"keys must be text, got {kind_of(key)}", _location(file, key_at), hint="quote the key")
        out[str(key)] = _plain(value, value_at, file)
    return out


def _key_at(node: CommentedMap, key: Any, default: tuple[int, int]) -> tuple[int, int]:
    """0-based position of a key of ``node`` (keys merged in with ``<<`` have none: ``default``)."""
    at = _written(node).get(key)
    return (at[0], at[1]) if at else default


def _item_at(node: CommentedMap | CommentedSeq, step: Any, default: tuple[int, int]) -> tuple[int, int]:
    """0-based position of the value at ``step`` (a key or an index) of ``node``."""
    at = _written(node).get(step)
    if not at:
        return default
    return (at[2], at[3]) if isinstance(node, CommentedMap) else (at[0], at[1])


def _written(node: CommentedMap | CommentedSeq) -> dict[Any, list[int]]:
    """Positions of the keys or items written in ``node`` (ruamel keeps none for a mapping holding only ``<<``)."""
    return node.lc.data or {}


def position(node: Any, path: Sequence[str | int], key: bool = False) -> Position:
    """Where the value at ``path`` under the container ``node`` is (its key's position when ``key``).

    Walks as deep as the path exists and returns the deepest position found,
    so a path to a missing key gives the position of the mapping that lacks it.
    A scalar ``node`` (a whole document that is one value) is at 1:1.
    """
    if not isinstance(node, (CommentedMap, CommentedSeq)):
        return 1, 1
    at = (node.lc.line, node.lc.col)
    for i, step in enumerate(path):
        if not _has(node, step):
            break
        if key and i == len(path) - 1 and isinstance(node, CommentedMap):
            at = _key_at(node, step, at)
        else:
            at = _item_at(node, step, at)
        node = node[step]
    return at[0] + 1, at[1] + 1


def has_path(node: Any, path: Sequence[str | int]) -> bool:
    """Whether every step of ``path`` exists under ``node``."""
    for step in path:
        if not _has(node, step):
            return False
        node = node[step]
    return True


def _has(node: Any, step: str | int) -> bool:
    if isinstance(node, CommentedMap):
        return step in node
    return isinstance(node, CommentedSeq) and isinstance(step, int) and 0 <= step < len(node)


def kind_of(value: Any) -> str:
    """How a value reads to a YAML author: ``a string``, ``a number``, ``a list``, ``an empty value``..."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, (set, frozenset)):
        return "a set"
    if isinstance(value, bytes):
        return "binary data"
    return f"a {type(value).__name__}"


def describe(schema: Mapping[str, Any], defs: Mapping[str, Any], plural: bool = False) -> str:
    """What a JSON (sub)schema accepts, in an author's words: ``a string or a list of strings``.

    ``defs`` are the schema's ``$defs``, for ``$ref``s of the form ``#/$defs/name``.
    """
    if "$ref" in schema:
        return describe(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, plural)
    if "anyOf" in schema:
        return _or([describe(sub, defs, plural) for sub in schema["anyOf"]])
    if "if" in schema:  # what either branch accepts; a branch that says nothing accepts anything
        words = [describe(schema[branch], defs, plural) for branch in ("else", "then") if branch in schema]
        anything = "values" if plural else "any value"
        return anything if anything in words or not words else _or(list(dict.fromkeys(words)))
    types = schema.get("type", [])
    words = []
    for kind in [types] if isinstance(types, str) else types:
        if kind == "array" and "items" in schema and not plural:
            words.append(f"a list of {describe(schema['items'], defs, plural=True)}")
        else:
            words.append(_NOUNS[kind][plural])
    return _or(words) or ("values" if plural else "any value")


def _or(words: list[str]) -> str:
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)


@dataclass(frozen=True)
class Spot:
    """Errors about one YAML container: the file, the ruamel ``node``, how paths in it are named.

    ``prefix`` starts every key path (``("defaults",)``); ``empty`` names the
    node itself when the path is empty (``"(file)"`` for a file's top level).
    """

    file: str
    node: Any
    prefix: tuple[str | int, ...] = ()
    empty: str = ""

    def error(
        self,
        message: str,
        path: Sequence[str | int] = (),
        *,
        at: Sequence[str | int] | None = None,
        key: bool = False,
        hint: str = "",
    ) -> CaseFileError:
        """A CaseFileError named by ``path``, positioned at ``at`` (default ``path``), or its key."""
        line, col = position(self.node, path if at is None else at, key)
        label = dotted((*self.prefix, *path)) or self.empty
        return CaseFileError(message, Location(self.file, line, col), label, hint)


def dotted(path: Sequence[str | int]) -> str:
    """A key path as written in messages: ``expect.files.calc.py``, ``mocks[0].name``."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else f".{step}" if text else str(step)
    return text


def written(path: list[str | int], case: Spot, defaults: Spot | None) -> Spot:
    """The Spot where the value at ``path`` of a merged case was written: the case, else the defaults."""
    in_defaults = defaults is not None and has_path(defaults.node, path) and not has_path(case.node, path)
    return defaults if defaults and in_defaults else case
