"""A small MCP server for tooltrial's tests, written with the SDK's MCPServer (FastMCP before mcp 2).

``python mcp_server.py`` serves over stdio; ``python mcp_server.py --http PORT`` over streamable HTTP
on 127.0.0.1:PORT at /mcp.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("tooltrial-tests")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(message: str) -> str:
    """Fail with the message."""
    raise ToolError(message)


@server.tool()
def note(path: str, text: str) -> str:
    """Write the text to a file in the server's working folder."""
    Path(path).write_text(text, encoding="utf-8")
    return f"wrote {path}"


@server.tool()
def environment() -> str:
    """The names of the server's environment variables, sorted, comma-separated."""
    return ",".join(sorted(os.environ))


@server.tool()
def sleep(seconds: float) -> str:
    """Sleep for the seconds given."""
    time.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
