"""Debian's chromium, headless and driven by playwright, for the HTML report's browser tests: every
request other than ``file://`` aborted, so a page that tried to reach the network would show it."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
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


@dataclass
class Opened:
    """A page opened from disk, and what it tried: every request's URL, dialogs (alert), page errors."""

    page: Any
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def open_page(browser: Any, path: Path, width: int = 1280, hash: str = "") -> Opened:
    """``path`` opened in a new page of ``browser``, ``width`` pixels wide, at ``hash``, once its script is ready."""
    opened = Opened(browser.new_page())
    opened.page.set_viewport_size({"width": width, "height": 900})
    opened.page.on("request", lambda request: opened.requests.append(request.url))
    opened.page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    opened.page.on("pageerror", lambda error: opened.errors.append(str(error)))
    opened.page.goto(path.resolve().as_uri() + hash)
    opened.page.wait_for_selector("body[data-ready=true]", state="attached", timeout=10_000)
    return opened


def assert_clean(opened: Opened, path: Path) -> None:
    """Nothing but the file itself was requested, nothing ran that the page did not write, no error."""
    assert opened.requests == [path.resolve().as_uri()]
    assert opened.dialogs == [] and opened.errors == []
    assert opened.page.evaluate("window.__pwned") is None
    opened.page.close()


def cells(page: Any, selector: str) -> list[list[str]]:
    """The text of each cell of each body row of the table at ``selector``."""
    return page.eval_on_selector_all(selector + " tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
