"""The rules for a case's ``mcp`` servers that its schema cannot say: each gives exactly one of
``command`` (a stdio server) or ``url`` (streamable HTTP), and no two share a name (their tools'
prefix, runner.spec.offered)."""

from __future__ import annotations

from typing import Any

from runner.errors import CaseFileError, did_you_mean
from runner.spec.offered import MCP_SEPARATOR
from runner.spec.positions import Spot, written


def mcp_server_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Each MCP server of ``case`` that gives both or neither of ``command`` and ``url``, or reuses
    a name, as an error where it was written (the case, or the file's defaults)."""
    servers: list[Any] = case["mcp"] if isinstance(case.get("mcp"), list) else []
    errors: list[CaseFileError] = []
    seen: set[str] = set()
    for i, server in enumerate(servers):
        if not isinstance(server, dict):
            continue
        here = written(["mcp", i], spot, defaults)
        if ("command" in server) == ("url" in server):
            hint = "a stdio server is started from `command: [program, args...]`; a running one is reached at `url`"
            errors.append(here.error("give exactly one of 'command' or 'url'", ["mcp", i], hint=hint))
        name = server.get("name")
        if isinstance(name, str) and name in seen:
            hint = "give each server its own name: it is the prefix of its tools' names (NAME__TOOL)"
            errors.append(here.error(f"duplicate MCP server {name!r}", ["mcp", i, "name"], hint=hint))
        elif isinstance(name, str):
            seen.add(name)
    return errors


def mcp_name_hint(name: str, servers: list[str]) -> str | None:
    """The hint for unknown tool ``name`` written as ``SERVER__TOOL`` when the case declares no
    server ``SERVER`` (the closest declared one suggested), else None."""
    server, separator, _ = name.partition(MCP_SEPARATOR)
    if not separator or server in servers:
        return None
    fix = "MCP tools are named SERVER__TOOL"
    return f"no MCP server {server!r}: " + (did_you_mean(server, servers, fix) if servers else f"{fix}; the case declares none")
