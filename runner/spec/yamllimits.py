"""What a case or config file's YAML may hold beyond its syntax: plain-data tags, and aliases that stay small.

Both files are data for a JSON Schema, so a value may be text, a number, a
boolean, null, a list or a mapping, and nothing else. YAML can say more: a tag
asks for another type (``!!set``, ``!!binary``, ``!!python/object/apply:os.system``,
``!mine``), and an alias repeats the whole value its anchor names, so ten
levels of ten aliases each (a "billion laughs" file of 500 bytes) stand for
10**10 values. The checks run while ruamel composes the node graph, before any
value is built: a refused tag fails where it is written, and the alias that
takes the expansion past ``MAX_ALIASED`` values fails at once.

Tags kept (YAML's core schema): ``!!str``, ``!!int``, ``!!float``, ``!!bool``,
``!!null`` on scalars, ``!!seq`` on lists, ``!!map`` on mappings, ``!`` (no
type) anywhere, ``!!merge`` (the ``<<`` key) and ``!!timestamp``, read as ISO
text like an unquoted date.
"""

from __future__ import annotations

from typing import Any

from ruamel.yaml.composer import Composer
from ruamel.yaml.error import StreamMark
from ruamel.yaml.events import AliasEvent
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_ALIASED = 100_000  # values one document may produce through aliases, counted with everything inside them

_CORE = "tag:yaml.org,2002:"
_FITS: dict[type[Node], frozenset[str]] = {
    ScalarNode: frozenset({"str", "int", "float", "bool", "null", "timestamp", "merge"}),
    SequenceNode: frozenset({"seq"}),
    MappingNode: frozenset({"map"}),
}
_NOUN = {ScalarNode: "a scalar", SequenceNode: "a list", MappingNode: "a mapping"}
_PLAIN = "case and config files hold text, numbers, booleans, lists and mappings"
_INSTEAD = {
    "binary": "write the data as text, e.g. base64 in a string",
    "set": "write a list",
    "omap": "write a mapping",
    "pairs": "write a mapping",
}


class Refused(Exception):
    """YAML that parses but that tooltrial will not read: ``message`` at ``mark``
    (ruamel's 0-based ``line``/``column``), with what to do instead in ``hint``."""

    def __init__(self, message: str, mark: StreamMark, hint: str) -> None:
        self.message, self.mark, self.hint = message, mark, hint
        super().__init__(message)


class LimitedComposer(Composer):
    """ruamel's composer, refusing the tags above, recursive aliases, and alias expansion past ``MAX_ALIASED``.

    ``_sizes`` maps ``id(node)`` of each node composed so far to the values it
    stands for, aliases inside it expanded; an anchored node not yet in it is
    still being composed, so an alias to it would be recursive.
    """

    def __init__(self, loader: Any = None) -> None:
        super().__init__(loader)
        self._sizes: dict[int, int] = {}
        self._aliased = 0
        self.warn_double_anchors = False  # YAML lets an anchor name be used again: aliases after it mean the new one

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.parser.peek_event()
        if isinstance(event, AliasEvent):
            self._count(event)
            return super().compose_node(parent, index)
        node = super().compose_node(parent, index)
        if event.ctag is not None and str(event.ctag) != "!":
            _check_tag(node, event.start_mark)
        self._sizes[id(node)] = 1 + sum(self._sizes[id(child)] for child in _children(node))
        return node

    def _count(self, event: AliasEvent) -> None:
        node = self.anchors.get(event.anchor)
        if node is None:  # ruamel's own error: undefined alias
            return
        size = self._sizes.get(id(node))
        if size is None:
            hint = f"an alias cannot stand inside the value of its own anchor &{event.anchor}"
            raise Refused(f"recursive YAML alias *{event.anchor}", event.start_mark, hint)
        self._aliased += size
        if self._aliased > MAX_ALIASED:
            hint = "each alias repeats the whole value of its anchor; alias smaller values, or fewer times"
            raise Refused(f"YAML aliases expand to more than {MAX_ALIASED:,} values", event.start_mark, hint)


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, SequenceNode) else []


def _check_tag(node: Node, mark: StreamMark) -> None:
    """Refuse an explicit tag that is not plain data, or that does not fit its node (``!!str [a]``)."""
    tag = str(node.tag)
    name = tag[len(_CORE):] if tag.startswith(_CORE) else None
    if name is not None and name in _FITS[type(node)]:
        return
    shown = f"!!{name}" if name is not None else tag
    if name is not None and any(name in fits for fits in _FITS.values()):
        raise Refused(f"YAML tag {shown} cannot mark {_NOUN[type(node)]}", mark, "remove the tag")
    hint = _INSTEAD.get(name or "", f"remove the tag: {_PLAIN}")
    raise Refused(f"unsupported YAML tag {shown}", mark, hint)
