"""Figure (j) of benchmarks/run.py: what an external agent's endpoint (runner.endpoint.server) costs.

Its start and stop (median of ``repeats``), one request answered by the scripted provider over a kept
connection as JSON and as a stream, in each wire format (median of ``requests``), and the bundled
example (examples/agents, scripted, under the chosen sandbox): the run's duration beside its agent
command's, the rest being the workspace, the endpoint and the checks.

    .venv/bin/python benchmarks/agents.py   # this figure alone
"""

from __future__ import annotations

import contextlib
import http.client
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from runner.cli.app import main
from runner.endpoint.server import Endpoint
from runner.output.load import read_results
from runner.providers.scripted import ScriptedProvider

ROOT = Path(__file__).resolve().parent.parent
BODIES = {"/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}]},
          "/v1/messages": {"max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}}


def figure_j(folder: Path, repeats: int = 30, requests: int = 200) -> None:
    starts = []
    for _ in range(repeats):
        began = time.perf_counter()
        with Endpoint(ScriptedProvider([])):
            pass
        starts.append(time.perf_counter() - began)
    print(f"(j) external agent endpoint: start and stop {statistics.median(starts) * 1000:.1f} ms")
    with Endpoint(ScriptedProvider([{"content": "ok"}] * (4 * requests))) as endpoint:
        for path, body in BODIES.items():
            for stream in (False, True):
                data = json.dumps({**body, "stream": stream})
                times = []
                for _ in range(requests):
                    connection = http.client.HTTPConnection("127.0.0.1", endpoint.port)
                    began = time.perf_counter()
                    connection.request("POST", path, data, {"x-api-key": endpoint.token})
                    connection.getresponse().read()
                    times.append(time.perf_counter() - began)
                    connection.close()
                kind = "stream" if stream else "JSON"
                print(f"    {path} {kind}: {statistics.median(times) * 1000:.2f} ms a request (median of {requests})")
    examples = ROOT / "examples" / "agents"
    results = folder / "agents-results"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["run", str(examples / "cases" / "version.yml"), "--config", str(examples / "tooltrial.yml"),
              "-p", "scripted", "--results", str(results)])
    (record,) = read_results(results).records
    agent = sum(c.duration for c in record.commands if c.phase == "agent")
    print(f"    examples/agents bump-patch ({record.sandbox.mode if record.sandbox else '?'}): run {record.duration:.2f}s, "
          f"of which the agent command {agent:.2f}s")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
        figure_j(Path(folder))
