"""Running one case file through the CLI against a loopback fake, and reading back what tooltrial recorded."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fake_servers import FakeServer
from tests.helpers import cli_output

WRITE_CASE = """\
- id: write-hi
  turns: [Write hi to out.txt]
  expect:
    files: {out.txt: {equals: hi}}
"""

# What differs between a streamed and a JSON run of the same conversation: times, how the reply came, the
# invocation.
VARIES = frozenset({"duration", "started", "latency", "ttft", "streamed", "run_id",
                    "provenance"})  # the request parameters say stream


def run_case(tmp_path: Path, server: FakeServer, model: str, case: str = WRITE_CASE, stream: str = "",
             flags: Sequence[str] = ()) -> tuple[int, str, list[dict[str, Any]]]:
    """Run ``case`` (case-file YAML) against ``server`` as ``model`` through ``runner.cli.main``; ``stream`` is
    added to the provider alias as is (``"stream: true"``). Returns the exit code, stderr and the run files."""
    folder = tmp_path / f"try{len(list(tmp_path.glob('try*')))}"
    folder.mkdir()
    (folder / "case.yml").write_text(case, encoding="utf-8")
    (folder / "tooltrial.yml").write_text(
        f"providers:\n  fake:\n    model: {model}\n    api_base: {server.api_base}\n    timeout: 10\n"
        f"    retries: {{attempts: 3, backoff: 0}}\n" + (f"    {stream}\n" if stream else ""), encoding="utf-8")
    code, _, err = cli_output(["run", str(folder / "case.yml"), "-p", "fake", "--config", str(folder / "tooltrial.yml"),
                               "--results", str(folder / "results"), "--sandbox", "none", *flags])
    (results,) = (folder / "results").iterdir()
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in sorted((results / "runs").iterdir())]
    return code, err, runs


def untimed(value: Any) -> Any:
    """``value`` (a run file's document) without the fields that hold times, say how the reply came or
    name the invocation."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in VARIES}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value
