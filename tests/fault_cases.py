"""The bundled fault cases (cases/robustness.yml) played by the naive agent of examples/robustness/naive.yml, which
the fault tests and the HTML fault tests share."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.helpers import ROOT

SUITE = ROOT / "cases" / "robustness.yml"
NAIVE = ROOT / "examples" / "robustness" / "naive.yml"


def naive_suite(tmp_path: Path) -> Path:
    """cases/robustness.yml with each case's script the naive agent's (examples/robustness/naive.yml)."""
    data = yaml.safe_load(SUITE.read_text())
    naive = yaml.safe_load(NAIVE.read_text())
    assert sorted(naive) == sorted(case["id"] for case in data["cases"])
    for case in data["cases"]:
        case["script"] = naive[case["id"]]
    path = tmp_path / "robustness.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
