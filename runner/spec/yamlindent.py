"""Where a line indented unlike the lines around it belongs: the columns the YAML block levels open
above it start at, read from ruamel's scanner tokens.

The scanner tracks indentation itself (ruamel.yaml.scanner's ``indents``), so block scalars, flow
collections, comments and multi-line scalars need no handling here. A line between two open levels
(a key at column 3 between keys at 2 and 4) is the one the parser refuses; it belongs to the
upper level when a later line continues that level past it, to the lower one when its own
children start at or left of the upper level, and to either otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.tokens import (
    AnchorToken,
    BlockEndToken,
    BlockEntryToken,
    BlockMappingStartToken,
    BlockSequenceStartToken,
    CommentToken,
    KeyToken,
    TagToken,
    Token,
    ValueToken,
)

KEY, ITEM = "key", "item"
_STARTS = {BlockMappingStartToken: KEY, KeyToken: KEY, BlockSequenceStartToken: ITEM, BlockEntryToken: ITEM}


@dataclass
class _Level:
    """An open block collection: its column and what may start a line at it (a mapping's key, and
    a ``- `` item of a sequence written at the mapping's own column)."""

    column: int
    mapping: bool
    kinds: set[str] = field(default_factory=set)


def candidate_columns(text: str, line: int, column: int, item: bool) -> tuple[int, ...]:
    """The 0-based columns the 0-based ``line`` of ``text``, starting at ``column`` with a key (or,
    when ``item``, a ``- `` item), may be indented to: (the siblings',) when the lines around tell,
    (the siblings', the parent's) when it could be either, () when no open level takes it. Raises
    nothing: the tokens read stop at the first error YAML's scanner finds."""
    kind = ITEM if item else KEY
    tokens = _tokens(text)
    stack: list[_Level] = []
    for token in tokens:
        if token.start_mark.line >= line:
            tokens = chain([token], tokens)
            break
        _track(stack, token)
    upper = next((level for level in stack if level.column > column), None)
    lower = next((level for level in reversed(stack) if level.column < column), None)
    siblings = upper.column if upper is not None and kind in upper.kinds else None
    parent = lower.column if lower is not None and kind in lower.kinds else None
    if upper is None or siblings is None or parent is None:
        return tuple(c for c in (siblings, parent) if c is not None)
    return _decide(tokens, line, column, siblings, parent, upper.kinds)


def _tokens(text: str) -> Iterator[Token]:
    """ruamel's tokens of ``text`` up to the first scanner error, comments left out."""
    scanned = YAML(typ="rt").scan(text)
    while True:
        try:
            token = next(scanned)
        except (StopIteration, YAMLError):
            return
        if not isinstance(token, CommentToken):
            yield token


def _track(stack: list[_Level], token: Token) -> None:
    column = token.start_mark.column
    if isinstance(token, BlockEndToken):
        if stack:
            stack.pop()
    elif isinstance(token, (BlockMappingStartToken, BlockSequenceStartToken)):
        mapping = isinstance(token, BlockMappingStartToken)
        stack.append(_Level(column, mapping, {KEY if mapping else ITEM}))
    elif isinstance(token, (KeyToken, BlockEntryToken)) and stack and stack[-1].mapping and stack[-1].column == column:
        # '- ' at a mapping's column is a sequence written without indentation, open until its next key
        stack[-1].kinds = {KEY, ITEM} if isinstance(token, BlockEntryToken) else {KEY}


def _decide(after: Iterator[Token], line: int, column: int, siblings: int, parent: int,
            kinds: set[str]) -> tuple[int, ...]:
    """(siblings,) when a later line continues the siblings' level (whose ``kinds`` of line may
    start there), (parent,) when the line's own children start left of it, or at it but of a kind
    that may not start there (``- `` items under a key of a mapping), else both."""
    own: list[Token] = []
    for token in after:
        if token.start_mark.line > line:
            after = chain([token], after)
            break
        if not isinstance(token, BlockEndToken):
            own.append(token)
    holds = bool(own) and (isinstance(own[-1], (ValueToken, BlockEntryToken, AnchorToken, TagToken))
                           or (isinstance(own[0], (BlockSequenceStartToken, BlockEntryToken))
                               and any(isinstance(t, KeyToken) for t in own)))
    children, first = None, None
    for start, kind in _line_starts(after, line):
        if start <= column:
            break
        if children is None and holds:
            children, first = start, kind
        if children is not None and start >= children:
            continue
        if start == siblings and kind in kinds:
            return (siblings,)
        break
    # children at the siblings' column could be its siblings only where such a line may start there
    if children is not None and (children < siblings or (children == siblings and first not in kinds)):
        return (parent,)
    return (siblings, parent)


def _line_starts(after: Iterator[Token], line: int) -> Iterator[tuple[int, str | None]]:
    """The column and kind (KEY, ITEM or None) of the first token of each line after ``line``."""
    last = line
    for token in after:
        mark = token.start_mark
        if mark.line > last and not isinstance(token, BlockEndToken):
            last = mark.line
            yield mark.column, _STARTS.get(type(token))
