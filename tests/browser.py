"""Debian's chromium, headless and driven by playwright, for the HTML report's browser tests: every
request other than ``file://`` aborted, so a page that tried to reach the network would show it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


def browser_or_skip() -> Any:
    """playwright's sync API; skips the calling test module without playwright or chromium."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"no {CHROMIUM} (apt-get install chromium; .ci/run installs it)", allow_module_level=True)
    return sync_api


def offline_context(sync_api: Any) -> Iterator[Any]:
    """One browser context (a context costs a second to make) in which every request that is not ``file://``
    is aborted; each test opens its own page (tab) in it."""
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = chromium.new_context()
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else route.abort())
        yield context
        chromium.close()
