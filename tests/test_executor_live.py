"""The process executor with a live provider over HTTP (litellm in the workers), ``--live`` events
forwarded to the parent, and a provider's ``max_concurrency`` held across worker processes."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import pytest

from runner.providers.registry import resolve_provider
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import PASS
from runner.spec.discover import load_cases
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions
from tests.fake_servers import OpenAIServer, ScriptResponder
from tests.helpers import ROOT, config, make_case, run_cli
from tests.sandboxes import make_sandbox

pytestmark = pytest.mark.usefixtures("litellm_loaded")


@pytest.mark.slow
def test_live_runs_on_worker_processes_over_http_with_their_events_printed_here(tmp_path: Path) -> None:
    cases = [c for c in load_cases([ROOT / "cases" / "fs.yml"])]
    with OpenAIServer(responder=ScriptResponder(cases)) as server:
        done = run_cli("run", "cases/fs.yml", "-p", "local-openai", "--config",
                       str(config(tmp_path, server.api_base, concurrency=4)), "-j", "4", "--workers", "2", "--live",
                       "--results", str(tmp_path / "results"), env={"TOOLTRIAL_TEST_LOCAL_KEY": "sk-test"})
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    records = [json.loads(p.read_text()) for p in sorted((folder / "runs").iterdir())]
    assert [(r["case"], r["provider"], r["status"]) for r in records] == [
        (c.full_id, "local-openai", "pass") for c in cases]
    assert len(server.chats) == sum(r["requests"] for r in records) == sum(len(c.script or ()) for c in cases)
    for record in records:  # each model request and tool call of each run, told as it happened, in this process
        for step in record["steps"]:
            assert any(step["name"] in line and record["case"] in line for line in done.stdout.splitlines()), step


def test_a_providers_max_concurrency_holds_across_worker_processes() -> None:
    scripted = dataclasses.replace(resolve_provider("scripted"), max_concurrency=1)
    cases = [make_case(id=f"nap-{n}", turns=["go"], script=[
        {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 0.3"}}]}, {"content": "done"}])
        for n in range(4)]
    records = run_matrix(cases, [Arm(scripted, load_prompt(None))], SuiteOptions(RunOptions(make_sandbox("none")), jobs=4, workers=2))
    assert [r.status for r in records] == [PASS] * 4
    spans = sorted((r.started, r.started + r.duration) for r in records)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), spans  # one run at a time
    assert sum(r.queued > 0.25 for r in records) >= 2  # the others waited for the slot, in this process
