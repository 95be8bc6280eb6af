"""Where a template that a case holds (a turn, ``system``, ``user.persona``...) is written in its case
file, found again when it fails to render: the file was read on the fast path, which keeps no
position below a case, so it is read again with positions, for an error only (and once per file
version however many errors it has).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import LiteralScalarString

from runner.errors import CaseFileError, Location
from runner.spec.positions import has_path, position
from runner.spec.source import parse

if TYPE_CHECKING:
    from runner.spec.case import Case

KeyPath = Sequence[str | int]


def template_location(case: Case, key: KeyPath, template_line: int | None) -> tuple[Location, bool]:
    """Where line ``template_line`` (1-based; None: not known) of the template at ``key`` of ``case``
    is written, and whether that place is the line's own.

    ``key`` is a path in the case mapping (``("turns", 1)``); a turn written as ``{content, expect}``
    is its ``content``. The template is looked up in the case, else in the file's ``defaults``. The
    place is the line's own for line 1 (or an unknown line) and for any line of a literal block
    (``|``); else it is where the template starts, and the caller names the line. A file that no
    longer holds the case at its line gives the case's first line (not the line's own).
    """
    fallback = Location(str(case.source), case.line), False
    read = _read(str(case.source))
    if read is None:
        return fallback
    lines, root = read
    for node in _case_and_defaults(root, case.line):
        if has_path(node, key):
            path = [*key, "content"] if isinstance(_at(node, key), CommentedMap) else list(key)
            return _placed(str(case.source), lines, node, path, template_line)
    return fallback


def _placed(file: str, lines: list[str], node: Any, path: KeyPath, template_line: int | None) -> tuple[Location, bool]:
    line, column = position(node, path)
    at = line + (template_line or 0)  # a literal block's text starts on the line after its ``|``
    if template_line and isinstance(_at(node, path), LiteralScalarString) and at <= len(lines):
        text = lines[at - 1]
        return Location(file, at, len(text) - len(text.lstrip(" ")) + 1 if text.strip() else None), True
    return Location(file, line, column), (template_line or 1) == 1


def _at(node: Any, path: KeyPath) -> Any:
    for step in path:
        node = node[step]
    return node


def _case_and_defaults(root: Any, line: int) -> list[CommentedMap]:
    """The case mapping that starts at ``line`` (1-based) and the file's ``defaults``, those there are."""
    defaults = root.get("defaults") if isinstance(root, CommentedMap) else None
    cases = root.get("cases") if isinstance(root, CommentedMap) else root
    if not isinstance(cases, CommentedSeq):
        return []
    found = [case for case in cases if isinstance(case, CommentedMap) and case.lc.line + 1 == line]
    return found[:1] + ([defaults] if found and isinstance(defaults, CommentedMap) else [])


def _read(file: str) -> tuple[list[str], Any] | None:
    """The file's lines and its ruamel nodes; None when it cannot be read or parsed now."""
    try:
        stat = os.stat(file)
    except OSError:
        return None
    return _read_version(file, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _read_version(file: str, mtime_ns: int, size: int) -> tuple[list[str], Any] | None:
    """``_read`` of one version of the file (its modification time and size tell versions apart)."""
    try:
        text = Path(file).read_text(encoding="utf-8-sig")
        return text.splitlines(), parse(text, file)
    except (OSError, UnicodeDecodeError, CaseFileError):
        return None
