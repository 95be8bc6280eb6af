"""MCP tool servers: a case's ``mcp`` servers started for one run, their tools offered to the model
as ``SERVER__TOOL`` and every call sent to the server, through the official ``mcp`` SDK
(https://github.com/modelcontextprotocol/python-sdk, imported only when a case declares a server).

A ``command`` server is spawned by the SDK's stdio client, in the workspace, with the command line
``Sandbox.server_argv`` gives: the sandbox, scrubbed environment and limits of every agent
command. A ``url`` server is reached over streamable HTTP. Each server has ``timeout`` seconds to
start and list its tools; each call has the case's command timeout, cut short by the run's deadline
and by Ctrl-C. Leaving ``McpServers`` stops every server (the SDK closes a stdio server's stdin,
then kills its process group).

The SDK is asyncio; a run is a thread. A run with servers gets an event loop of its own in a helper
thread (anyio's blocking portal, https://anyio.readthedocs.io/en/stable/threads.html): the run's
thread hands each SDK call to that loop and waits for its answer.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Self

from runner.sandbox.command import budget
from runner.spec.offered import MCP_SEPARATOR
from runner.tools.base import Tool, ToolContext, ToolError

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from mcp.client.session import ClientSession
    from mcp.types import CallToolResult

    from runner.spec.case import Case

_POLL = 0.05  # seconds between looks at the run's deadline and Ctrl-C while a call runs
_LIFETIME = 24 * 3600.0  # seconds of resource limits for a server of a run without a deadline
_STDERR_TAIL = 2000  # characters of a server's stderr quoted when it fails to start


class McpError(Exception):
    """An MCP server did not start, or does not list a tool the case's ``tools`` or ``deny`` names."""


class McpServers:
    """The MCP servers of one run (a context manager): ``start`` starts them, leaving stops them all.

    ``warnings`` holds, once left, one line when stopping went wrong (a ``url`` server already gone
    refuses the session's end): the run's result stands, and its record keeps the line.
    """

    def __init__(self) -> None:
        self._stack = contextlib.ExitStack()
        self._portal: BlockingPortal | None = None
        self.warnings: list[str] = []

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._stack.close()  # every server's exit runs, even after one raised
        except Exception as e:  # noqa: BLE001 (whatever the SDK raised as a server went away: the run is over)
            self.warnings.append(f"MCP servers did not stop cleanly: {_why(e)}")

    def start(self, case: Case, context: ToolContext) -> dict[str, Tool]:
        """Start every server of ``case.mcp`` and return ``{SERVER__TOOL: Tool}`` of the tools each
        lists, in order. Raises McpError (naming the server, with the tail of its stderr) when one
        fails to start or to list its tools in time, or lacks a tool named in ``case.tools``/``case.deny``."""
        if not case.mcp:
            return {}
        from anyio.from_thread import start_blocking_portal

        self._portal = self._stack.enter_context(start_blocking_portal())
        scratch = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="tooltrial-mcp-")))
        tools: dict[str, Tool] = {}
        for server in case.mcp:
            tools.update(self._start_one(server, context, scratch))
        _check_named(case, tools)
        return tools

    def _start_one(self, server: Mapping[str, Any], context: ToolContext, scratch: Path) -> dict[str, Tool]:
        assert self._portal is not None
        errlog = self._stack.enter_context(
            tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))  # noqa: SIM115 (the stack closes it)
        connect = _connect(server, context, scratch / f"{server['name']}.seccomp", errlog)
        try:
            session, listed = self._stack.enter_context(self._portal.wrap_async_context_manager(connect))
        except Exception as e:  # whatever the SDK or the server raised, the server did not start
            raise McpError(f"MCP server {server['name']!r} did not start: {_why(e)}{_stderr(errlog)}") from e
        prefix = f"{server['name']}{MCP_SEPARATOR}"
        return {prefix + tool.name: Tool(prefix + tool.name, tool.description or "", tool.input_schema,
                                         _Caller(self._portal, session, tool.name))
                for tool in listed}


class _Caller:
    """The ``run`` of one MCP tool: the call handed to the run's event loop, waited for, stopped
    at the run's deadline or on Ctrl-C; the result as text (``result_text``)."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, name: str) -> None:
        self.portal, self.session, self.name = portal, session, name

    def __call__(self, arguments: dict[str, Any], context: ToolContext) -> str:
        seconds = budget(context.command_timeout, context.deadline)
        future = self.portal.start_task_soon(_call, self.session, self.name, arguments, seconds)
        while not concurrent.futures.wait([future], _POLL).done:
            reason = context.stop_reason()
            if reason is not None:
                future.cancel()
                raise ToolError(f"stopped: {reason}")
        return result_text(future.result())


async def _call(session: ClientSession, name: str, arguments: dict[str, Any], seconds: float) -> CallToolResult:
    import anyio
    from mcp.shared.exceptions import MCPError

    try:
        with anyio.fail_after(seconds):
            return await session.call_tool(name, arguments)
    except TimeoutError as e:
        raise ToolError(f"the MCP server did not answer within {seconds:.3g}s") from e
    except MCPError as e:
        raise ToolError(f"MCP error: {e}") from e


def result_text(result: CallToolResult) -> str:
    """What the model sees of an MCP tool's result: its text blocks, one per line (an embedded text
    resource's text too; an image, audio, blob or link as a one-line note), or, when it has no
    content, its structured content as JSON. Raises ToolError with that text when ``is_error`` is set."""
    parts = [_block_text(block) for block in result.content]
    text = "\n".join(parts)
    if not parts and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    if result.is_error:
        raise ToolError(text or "the MCP tool reported an error")
    return text


def _block_text(block: Any) -> str:
    """One content block of a tool result as text (https://modelcontextprotocol.io/specification, tools)."""
    if block.type == "text":
        return str(block.text)
    if block.type == "resource":
        inner = block.resource
        return str(inner.text) if hasattr(inner, "text") else f"[resource {inner.uri}: {len(inner.blob)} base64 characters]"
    if block.type == "resource_link":
        return f"[resource link {block.uri}]"
    return f"[{block.type} {block.mime_type}: {len(block.data)} base64 characters]"


@contextlib.asynccontextmanager
async def _connect(server: Mapping[str, Any], context: ToolContext, scratch: Path,
                   errlog: IO[str]) -> AsyncIterator[tuple[ClientSession, list[Any]]]:
    """A session with ``server``, initialized, and every tool it lists (all pages)."""
    import anyio
    from mcp.client.session import ClientSession

    async with contextlib.AsyncExitStack() as stack:
        if server["command"] is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            env = {**context.env, **server["env"]}
            argv = context.sandbox.server_argv(server["command"], context.workspace, env,
                                               budget(_LIFETIME, context.deadline), context.network, scratch)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=context.workspace)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        else:
            from mcp.client.streamable_http import streamable_http_client

            read, write = await stack.enter_async_context(streamable_http_client(server["url"]))
        session = await stack.enter_async_context(ClientSession(read, write))
        seconds = budget(server["timeout"], context.deadline)
        try:
            with anyio.fail_after(seconds):
                await session.initialize()
                tools = await _list_tools(session)
        except TimeoutError as e:
            raise TimeoutError(f"no answer to initialize and tools/list within {seconds:.3g}s") from e
        yield session, tools


async def _list_tools(session: ClientSession) -> list[Any]:
    """Every tool ``session``'s server lists, following ``next_cursor`` through the pages."""
    from mcp.types import PaginatedRequestParams

    listed = await session.list_tools()
    tools = list(listed.tools)
    while listed.next_cursor is not None:
        listed = await session.list_tools(params=PaginatedRequestParams(cursor=listed.next_cursor))
        tools += listed.tools
    return tools


def _check_named(case: Case, tools: Mapping[str, Tool]) -> None:
    """Raise McpError for a name in ``case.tools`` or ``case.deny`` under a server's prefix that the
    server does not list (a ``SERVER__*`` pattern may select none)."""
    for name in (*(case.tools or ()), *case.deny):
        server = next((s["name"] for s in case.mcp if name.startswith(f"{s['name']}{MCP_SEPARATOR}")), None)
        if server is None or name.endswith("*") or name in tools:
            continue
        prefix = f"{server}{MCP_SEPARATOR}"
        listed = ", ".join(n[len(prefix):] for n in tools if n.startswith(prefix)) or "(none)"
        raise McpError(f"MCP server {server!r} has no tool {name[len(prefix):]!r} (named {name!r} by the case);"
                       f" it lists: {listed}")


def _why(error: BaseException) -> str:
    """The innermost causes of ``error``, one ``Type: message`` each: an exception group's leaves."""
    leaves: Sequence[BaseException] = list(_leaves(error))
    return "; ".join(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__ for e in leaves)


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _stderr(errlog: IO[str]) -> str:
    """``; stderr: ...`` with the last ``_STDERR_TAIL`` characters the server wrote to stderr, or "". Of
    several lines the last comes first too (``; stderr ends with: LAST``, then the tail on the next lines),
    so the one line a terminal shows of the cause holds what a traceback ends with."""
    errlog.seek(0)
    text = errlog.read().strip()
    cut = max(0, len(text) - _STDERR_TAIL)
    tail = f"{'[...] ' if cut else ''}{text[cut:]}"
    if "\n" not in tail:
        return f"; stderr: {tail}" if text else ""
    return f"; stderr ends with: {tail.rsplit(chr(10), 1)[1].strip()}\n{tail}"
