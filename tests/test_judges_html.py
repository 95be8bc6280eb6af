"""The HTML report's Judges section in a real browser (as tests/test_html_browser.py opens pages): the
calibration line, the judge-noise table and each judge check's calibration mark."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import assert_clean, browser_or_skip, cells, offline_context, open_page
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import config, run_cli, run_output

sync_api = browser_or_skip()
pytestmark = pytest.mark.slow  # a browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from offline_context(sync_api)


CASE = """\
- id: polite
  turns: [Greet the user]
  expect:
    judge: {rubric: The reply greets the user politely.}
  script:
    - content: Hello there.
"""


def test_the_judges_section_shows_calibration_and_noise(browser: Any, tmp_path: Path, litellm_loaded: None) -> None:
    cases = tmp_path / "judged.yml"
    cases.write_text(CASE, encoding="utf-8")
    page = tmp_path / "report.html"
    with OpenAIServer() as server:
        for score in (0.6, 0.8, 1.0, 0.2, 0.4, 0.6):
            server.push(openai_reply(json.dumps({"score": score, "reasoning": "ok"})))
        done = run_cli("run", str(cases), "-p", "scripted", "--judge", "local-openai", "-j", "1", "--runs", "2",
                       "--judge-repeats", "3", "--config", str(config(tmp_path, server.api_base)),
                       "--calibrations", str(tmp_path / "none.json"), "--results", str(tmp_path / "r"), "--html", str(page))
    assert done.returncode == 1, run_output(done)
    opened = open_page(browser, page)
    judges = opened.page.text_content("#judges p")
    assert judges == "2 of 2 judged runs graded by a judge not calibrated on its rubric: local-openai uncalibrated, 2 runs"
    assert cells(opened.page, "#judges table.judge-noise") == [
        ["scripted · default", "judged/polite", "2 × 3", "0.0400", "0.0667", "0.1067"]]
    assert_clean(opened, page)
