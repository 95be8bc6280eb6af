"""The MCP test server (tests/data/mcp_server.py) over streamable HTTP, as a fixture the MCP and fault tests share."""

from __future__ import annotations

import importlib.util
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import ROOT

SERVER = ROOT / "tests" / "data" / "mcp_server.py"


class HttpServer(str):
    """The /mcp URL of the test server over streamable HTTP; ``stop()`` ends it at once."""

    server: Any
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = self.server.force_exit = True
        self.thread.join(10)


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """The test server over streamable HTTP on 127.0.0.1 (a free port), in a thread."""
    import uvicorn

    spec = importlib.util.spec_from_file_location("mcp_test_server", SERVER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(module.server.streamable_http_app(), log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.01)
    url = HttpServer(f"http://127.0.0.1:{port}/mcp")
    url.server, url.thread = server, thread
    yield url
    url.stop()
    sock.close()
