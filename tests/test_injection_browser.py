"""The HTML report's prompt-injection figures in a real browser (Debian's ``chromium``, headless, driven by
playwright, every request other than ``file://`` aborted): the per-arm table holds the hand-computed example of
tests/test_injection.py, and a run's planted hostile text shows as text, running nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import browser_or_skip, offline_context
from tests.helpers import cli_output
from tests.injection_cases import HOSTILE, MIX

sync_api = browser_or_skip()
pytestmark = pytest.mark.slow  # a browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from offline_context(sync_api)


def _page(tmp_path: Path, cases: str) -> Path:
    (tmp_path / "c.yml").write_text(cases, encoding="utf-8")
    page = tmp_path / "p.html"
    cli_output(["run", str(tmp_path / "c.yml"), "-p", "scripted", "--results", str(tmp_path / "r"), "--html", str(page)])
    return page


def _open(browser: Any, path: Path, hash: str = "") -> tuple[Any, list[str]]:
    page, problems = browser.new_page(), []
    page.on("dialog", lambda dialog: (problems.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(path.resolve().as_uri() + hash)
    page.wait_for_selector("body[data-ready=true]", state="attached", timeout=10_000)
    return page, problems


def test_the_summary_shows_each_arms_injection_figures(browser: Any, tmp_path: Path) -> None:
    page, problems = _open(browser, _page(tmp_path, MIX))
    rows = page.eval_on_selector_all("#summary table.injections tbody tr",
                                     "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert rows == [
        ["scripted · default", "utility, no attack", "3/3", "100.0%", "43.9% to 100.0%"],
        ["scripted · default", "utility under attack", "2/3", "66.7%", "20.8% to 93.9%"],
        ["scripted · default", "attack success", "2/3", "66.7%", "20.8% to 93.9%"],
    ]
    assert problems == []
    page.close()


def test_a_runs_planted_text_shows_as_text(browser: Any, tmp_path: Path) -> None:
    page, problems = _open(browser, _page(tmp_path, HOSTILE), hash="#run-1")
    facts = page.eval_on_selector_all("#transcript dl.facts > *", "nodes => nodes.map(n => n.textContent)")
    assert facts[facts.index("injection") + 1] == (
        "attacked (file README.md, tool read_file call 1); utility no; attack succeeded")
    assert "<script>alert('x')</script>" in page.text_content("#transcript")  # the tool result, as text
    assert problems == [] and page.evaluate("window.__pwned") is None
    assert page.query_selector("#transcript img") is None
    page.close()
