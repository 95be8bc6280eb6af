"""The HTML report's robustness section and each call's fault, in a real browser (Debian's ``chromium``, headless,
driven by playwright), from a run of the naive agent on the bundled robustness suite with ``--faults case``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.fault_cases import naive_suite
from tests.helpers import run_cli

CHROMIUM = "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
pytestmark = pytest.mark.slow  # a browser
if not shutil.which(CHROMIUM):
    pytest.skip(f"no {CHROMIUM} (apt-get install chromium; .ci/run installs it)", allow_module_level=True)


def _cells(page: Any, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(selector + " tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")


def test_the_page_shows_the_fault_tables_and_each_calls_fault(tmp_path: Path) -> None:
    page_file = tmp_path / "page.html"
    done = run_cli("run", str(naive_suite(tmp_path)), "-c", "robustness/read-*", "--faults", "case",
                   "--results", str(tmp_path / "r"), "--html", str(page_file))
    assert done.returncode == 1, done.stderr
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        page = chromium.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_file.resolve().as_uri())
        page.wait_for_selector("body[data-ready=true]", state="attached", timeout=10_000)
        assert _cells(page, "#robustness table.recovery") == [
            ["scripted · default · faults case", "2", "0 (0.0%)", "2", "0.0", "n/a"]]
        assert _cells(page, "#robustness table.robustness") == [
            ["robustness/read-error-retry", "scripted · default", "case", "0/1", "0/1", "+0 pts"],
            ["robustness/read-empty", "scripted · default", "case", "0/1", "0/1", "+0 pts"]]
        arms = page.eval_on_selector_all("#filter-arm option", "nodes => nodes.map(n => n.textContent)")
        assert arms == ["every arm", "scripted · default · faults case", "scripted · default · faults off"]
        page.select_option("#filter-arm", "scripted · default · faults case")
        page.click("#run-list tbody tr a")
        page.wait_for_selector("#transcript-title")
        heads = page.eval_on_selector_all("#transcript .call-head", "nodes => nodes.map(n => n.textContent)")
        assert len(heads) == 1 and heads[0].endswith(" · error · fault error")
        assert errors == []
        chromium.close()
