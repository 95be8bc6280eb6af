"""A real agent CLI from PyPI under tooltrial: mini-swe-agent (the test extra pins it) runs the bundled
case examples/agents/mini-swe-agent/cases/calc.yml through ``run --agent`` with the scripted provider
behind tooltrial's endpoint, offline. The trajectory tooltrial rebuilds from the wire must be the
scripted conversation exactly, and the same as mini-swe-agent's own record of it; a script that makes
mini do the wrong thing must fail with the failure cause of a bad outcome.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.sandbox.bwrap import PRIVATE
from tests.helpers import ROOT, run_cli
from tests.sandboxes import BWRAP

EXAMPLE = ROOT / "examples" / "agents" / "mini-swe-agent"
AGENT = EXAMPLE / "mini-swe-agent.yml"
CASES = EXAMPLE / "cases" / "calc.yml"
# bubblewrap, with the endpoint's port forwarded in; unconfined where it does not work here, or where this
# interpreter (mini's, from the same virtualenv) lives under the private /tmp that bubblewrap hides
UNSEEN = any(Path(sys.prefix).resolve().is_relative_to(p) for p in PRIVATE)
SANDBOX = "none" if BWRAP is None or UNSEEN else "bwrap"

# mini-swe-agent's observation template (its config/mini.yaml): what it sends back as each tool result.
BUGGY = 'def add(a, b):\n    """The sum of a and b."""\n    return a - b\n'


def _observation(output: str, returncode: int = 0) -> str:
    return f'{{\n  "returncode": {returncode:d},\n  "output": {json.dumps(output)}\n}}'


def _wrong_case(folder: Path) -> Path:
    """The bundled case with a script that makes mini multiply instead of add, then check a value
    where both agree (2 * 2 == 2 + 2) and submit: the same process, a wrong outcome."""
    data = yaml.safe_load(CASES.read_text(encoding="utf-8"))
    case = data["cases"][0]
    case["id"] = "multiply-instead"
    case["script"] = [
        {"content": "Let me read calc.py first.", "tool_calls": [{"name": "bash", "arguments": {"command": "cat calc.py"}}]},
        {"content": "The operator is wrong.",
         "tool_calls": [{"name": "bash", "arguments": {"command": "sed -i 's/return a - b/return a * b/' calc.py"}}]},
        {"content": "Check it.",
         "tool_calls": [{"name": "bash", "arguments": {"command": "python3 -c 'import calc; print(calc.add(2, 2))'"}}]},
        {"content": "add(2, 2) is 4; submitting.",
         "tool_calls": [{"name": "bash", "arguments": {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}}]},
    ]
    path = folder / "wrong.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _runs(results: Path) -> dict[str, dict[str, Any]]:
    (folder,) = [p for p in results.iterdir() if p.is_dir()]
    records = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((folder / "runs").glob("*.json"))]
    return {record["case"]: record for record in records}


def _steps(record: dict[str, Any]) -> list[tuple[str, dict[str, Any], str, str]]:
    return [(s["name"], s["arguments"], s["result"], s["status"]) for s in record["steps"]]


def _own_record(record: dict[str, Any]) -> dict[str, Any]:
    """mini-swe-agent's own trajectory file of the run, from the kept workspace."""
    return json.loads((Path(record["workspace"]) / ".mini-swe-agent" / "last_mini_run.traj.json").read_text())


@pytest.mark.slow  # two runs of a real CLI that imports litellm: about 10 s each on an idle core
def test_mini_swe_agent_solves_the_bundled_case_and_its_trajectory_is_the_script(tmp_path: Path) -> None:
    mini = shutil.which("mini", path=os.path.dirname(sys.executable))
    assert mini is not None, "mini-swe-agent is in the test extra: pip install -r requirements.lock"
    results = tmp_path / "results"
    done = run_cli("run", str(CASES), str(_wrong_case(tmp_path)), "--agent", str(AGENT), "-p", "scripted",
                   "--sandbox", SANDBOX, "--keep", "-j", "2", "--results", str(results),
                   env={"PATH": f"{os.path.dirname(mini)}{os.pathsep}{os.environ.get('PATH', os.defpath)}"})
    assert done.returncode == 1, done.stdout + done.stderr
    runs = _runs(results)
    assert sorted(runs) == ["calc/fix-add", "wrong/multiply-instead"]

    good = runs["calc/fix-add"]
    assert (good["status"], good["failure"], good["error_kind"]) == ("pass", None, None), good["checks"]
    assert good["sandbox"]["mode"] == SANDBOX
    assert {k: v for k, v in good["agent"].items() if k != "wire"} == {
        "name": "mini-swe-agent", "command": "mini --yolo --exit-immediately --cost-limit 0 --model openai/{{ model }} --task",
        "tools": ["bash"]}  # the one tool mini offers its model, as its requests declare it
    # four chat-completion requests, none streamed, each answered, all in the one turn
    assert [(w["turn"], w["api"], w["stream"], w["status"], w["error"]) for w in good["agent"]["wire"]] == [
        (0, "chat", False, 200, None)] * 4
    assert [c["phase"] for c in good["commands"]] == ["agent", "verify"]
    assert good["commands"][0]["exit_code"] == 0
    assert good["requests"] == 4
    assert _steps(good) == [
        ("bash", {"command": "cat calc.py"}, _observation(BUGGY), "executed"),
        ("bash", {"command": "sed -i 's/return a - b/return a + b/' calc.py"}, _observation(""), "executed"),
        ("bash", {"command": "python3 -c 'import calc; print(calc.add(2, 3))'"}, _observation("5\n"), "executed"),
        # mini ends on the submit command and never sends its result: the wire cannot know one
        ("bash", {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}, "", "no_result"),
    ]
    assert [r["text"] for r in good["model_requests"]] == [item["content"] for item in good["script"]]
    assert good["final_reply"] == "add(2, 3) is 5 now; submitting."
    assert good["changes"] == {"added": [".mini-swe-agent/last_mini_run.traj.json"], "changed": ["calc.py"],
                               "deleted": []}
    assert (Path(good["workspace"]) / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")

    # what tooltrial read off the wire is what mini itself recorded: the same calls, ids, results, requests
    own = _own_record(good)
    assert own["info"]["exit_status"] == "Submitted"
    assert own["info"]["model_stats"]["api_calls"] == good["requests"]
    calls = [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
             for m in own["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
    assert calls == [(s["call_id"], s["name"], s["arguments"]) for s in good["steps"]]
    sent = [(m["tool_call_id"], m["content"]) for m in own["messages"] if m["role"] == "tool"]
    assert sent[:3] == [(s["call_id"], s["result"]) for s in good["steps"][:3]]

    wrong = runs["wrong/multiply-instead"]
    assert (wrong["status"], wrong["failure"]) == ("fail", "good_process_bad_outcome")
    failed = [(c["check"], c["message"]) for c in wrong["checks"] if not c["passed"]]
    assert failed == [
        ("verify", "verify failed (exit 1): python3 -c 'import calc; assert calc.add(2, 3) == 5 and calc.add(-1, 1) == 0'"),
        ("files", 'calc.py missing "return a + b"'),
    ]
    assert _steps(wrong)[2] == ("bash", {"command": "python3 -c 'import calc; print(calc.add(2, 2))'"},
                                _observation("4\n"), "executed")
    assert wrong["requests"] == 4
