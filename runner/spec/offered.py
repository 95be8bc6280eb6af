"""Which tools a case offers the model: the one rule the case loader, the toolbox and the scorer share.

An MCP server's tools are only known once it runs: before then a server named ``files`` stands for
``files__*``, every name under its prefix (``files__read``), and ``tools``/``deny`` may write that
pattern to select or refuse all of them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from runner.tools.registry import BUILTIN_NAMES

MCP_SEPARATOR = "__"  # between an MCP server's name and its tool's: files__read


def mcp_pattern(server: str) -> str:
    """``SERVER__*``: every tool of MCP server ``server``, as ``tools`` and ``deny`` may write it."""
    return f"{server}{MCP_SEPARATOR}*"


def offered_tools(tools: Sequence[str] | None, mocks: Iterable[str], servers: Iterable[str] = ()) -> tuple[str, ...]:
    """The names a case offers, in the order the model sees them: its ``tools`` when it lists them,
    else every builtin (runner.tools.registry) then each of its ``mocks`` (their names) not named like
    a builtin, which that mock replaces, then ``mcp_pattern`` of each of its MCP ``servers``. Denied
    names are offered too: their calls are refused. ``offered_tools(None, mocks, servers)`` is every
    name a case's ``tools`` and ``deny`` may list (``offers`` says whether it holds a name).
    """
    if tools is not None:
        return tuple(tools)
    return tuple(dict.fromkeys([*BUILTIN_NAMES, *mocks, *map(mcp_pattern, servers)]))


def offers(names: Collection[str], name: str) -> bool:
    """Whether ``names`` (from ``offered_tools``) holds tool ``name``: written there, or under the
    prefix of one of its ``SERVER__*`` patterns."""
    if name in names:
        return True
    prefixes = [n[:-1] for n in names if n.endswith(f"{MCP_SEPARATOR}*")]
    return any(name.startswith(prefix) and name != prefix for prefix in prefixes)


def expand(names: Iterable[str], known: Sequence[str]) -> list[str]:
    """``names`` with each ``SERVER__*`` pattern replaced by the ``known`` names under its prefix, in
    ``known``'s order, and no name twice: a case's ``tools`` or ``deny`` once its MCP servers listed their tools."""
    found: list[str] = []
    for name in names:
        found += [k for k in known if offers((name,), k)] if name.endswith(f"{MCP_SEPARATOR}*") else [name]
    return list(dict.fromkeys(found))
