"""Where a value is written in a YAML file, and how to say what it is: positions from ruamel's
line and column data, key paths in words, Spot (the errors about one YAML container).

ruamel's round-trip loader gives mappings and sequences (CommentedMap /
CommentedSeq) an ``.lc`` attribute: ``lc.line``/``lc.col`` is where the
container starts, ``lc.data[key]`` is ``[key_line, key_col, value_line,
value_col]`` in a mapping and ``[line, col]`` in a sequence, all 0-based.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq

from runner.errors import CaseFileError, CaseFileWarning, Location

Position = tuple[int, int]  # 1-based (line, column)


_NOUNS = {  # JSON Schema type: (singular, plural) as a YAML author reads it
    "string": ("a string", "strings"),
    "integer": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "boolean": ("a boolean", "booleans"),
    "object": ("a mapping", "mappings"),
    "array": ("a list", "lists"),
}


def key_at(node: CommentedMap, key: Any, default: tuple[int, int]) -> tuple[int, int]:
    """0-based position of a key of ``node`` (keys merged in with ``<<`` have none: ``default``)."""
    at = _written(node).get(key)
    return (at[0], at[1]) if at else default


def item_at(node: CommentedMap | CommentedSeq, step: Any, default: tuple[int, int]) -> tuple[int, int]:
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
            at = key_at(node, step, at)
        else:
            at = item_at(node, step, at)
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

    def warning(
        self,
        message: str,
        path: Sequence[str | int] = (),
        *,
        at: Sequence[str | int] | None = None,
        key: bool = False,
        hint: str = "",
    ) -> CaseFileWarning:
        """``error``'s CaseFileWarning: positioned and named alike."""
        found = self.error(message, path, at=at, key=key, hint=hint)
        return CaseFileWarning(found.message, found.location, found.path, found.hint)


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
