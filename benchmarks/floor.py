"""The floor of the agent workload: what a bare client does of (k)'s work, in the same process as the figure.

Each case is (k)'s two requests (the user's turn; then the turn, the model's call and its tool result) sent with
the standard library's ``http.client`` over keep-alive connections, one per thread of a pool of ``jobs`` threads,
with no workspace, tool, check or record: the least this machine takes to make the same requests, to which
tooltrial's wall-clock time is a ratio.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

TURN = {"role": "user", "content": "Write hello to out.txt, then say done."}
TOOLS = [{"type": "function", "function": {"name": "write_file", "description": "Write a file.",
                                           "parameters": {"type": "object", "properties": {
                                               "path": {"type": "string"}, "content": {"type": "string"}}}}}]


def floor_seconds(url: str, count: int, jobs: int) -> float:
    """Wall-clock seconds for ``count`` cases of two requests each at ``url`` (``http://host:port/v1``) by ``jobs``
    threads, each keeping its connection alive."""
    place = urlsplit(url)
    local = threading.local()

    def post(messages: list[dict[str, object]]) -> dict[str, object]:
        if not hasattr(local, "connection"):
            local.connection = http.client.HTTPConnection(place.hostname, place.port, timeout=60)
        body = json.dumps({"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS})
        local.connection.request("POST", f"{place.path}/chat/completions", body, {"Content-Type": "application/json"})
        return json.loads(local.connection.getresponse().read())

    def case(_: int) -> None:
        first = post([TURN])
        message = first["choices"][0]["message"]  # type: ignore[index]
        calls = message.get("tool_calls") or []
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "wrote 6 bytes"} for c in calls]
        post([TURN, message, *results])

    started = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(case, range(count)))
    return time.perf_counter() - started
