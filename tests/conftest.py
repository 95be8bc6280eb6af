"""Checks that hold for every test."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT, load_litellm_once
from tests.html_pages import Pages, build

# Ray 2.60 turns token auth on by itself when a local cluster starts (writing ~/.ray/auth_token) and whenever
# that file exists: one test's local Ray would then lock another's two-node cluster out. The tests' clusters
# are loopback ones that need no token.
os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def _entries(folder: Path) -> set[str]:
    return {path.name for path in folder.iterdir()} if folder.is_dir() else set()


@pytest.fixture(autouse=True)
def _checkout_results_untouched() -> Iterator[None]:
    """Fail a test that writes into the checkout's ``results/``: tests write under their tmp_path only."""
    results = ROOT / "results"
    before = _entries(results)
    yield
    added = sorted(_entries(results) - before)
    assert not added, f"the test wrote into {results}: {added} (pass --results or run in tmp_path)"


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every ``tooltrial run`` of the tests off the job summary when the tests run in GitHub Actions."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(autouse=True)
def _natural_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Print tables at their natural width in every test, as ``run_cli`` does: pytest-xdist's workers
    inherit a ``COLUMNS`` that a console made in the test itself would follow."""
    monkeypatch.delenv("COLUMNS", raising=False)


@pytest.fixture(scope="session")
def litellm_loaded() -> None:
    """litellm imported once for the whole session, its logs following ``run_cli``'s redirects
    (tests.helpers.load_litellm_once): the live-provider tests run the CLI in this process."""
    load_litellm_once()


@pytest.fixture(scope="session")
def html_pages(tmp_path_factory: pytest.TempPathFactory) -> Pages:
    """The results folders and HTML pages of tests/html_pages.py, made once for the HTML report's two test modules."""
    return build(tmp_path_factory.mktemp("html"))


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder workspaces are made in during the test (Python's temp folder, for this process)."""
    root = tmp_path / "temp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root
