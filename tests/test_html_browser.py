"""The HTML report in a real browser: Debian's ``chromium``, headless, driven by playwright (no browser
download). The page opens from disk with every request other than ``file://`` aborted and recorded;
screenshots go to ``$TOOLTRIAL_ARTIFACTS/html/`` (default ``tests/artifacts/html/``, git-ignored)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runner.output.html import html_page
from runner.scoring.stats import wilson
from tests.browser import browser_or_skip, offline_context
from tests.helpers import ROOT, run_cli
from tests.html_pages import CASE_ID, PROMPT_NAME, REPLY, RESULT, Pages, embedded

ARTIFACTS = Path(os.environ.get("TOOLTRIAL_ARTIFACTS") or ROOT / "tests" / "artifacts") / "html"
PLOTS = ["plot-pass-rate", "plot-pass-k", "plot-tokens", "plot-failures", "plot-duration"]

sync_api = browser_or_skip()
pytestmark = pytest.mark.slow  # about 10 s: a browser, and a page opened per test


@pytest.fixture(scope="module")
def pages(html_pages: Pages) -> Pages:
    return html_pages


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from offline_context(sync_api)


@dataclass
class Opened:
    """A page opened from disk, and what it tried: every request's URL, dialogs (alert), page errors."""

    page: Any
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _open(browser: Any, path: Path, width: int = 1280, hash: str = "") -> Opened:
    opened = Opened(browser.new_page())
    opened.page.set_viewport_size({"width": width, "height": 900})
    opened.page.on("request", lambda request: opened.requests.append(request.url))
    opened.page.on("dialog", lambda dialog: (opened.dialogs.append(dialog.message), dialog.dismiss()))
    opened.page.on("pageerror", lambda error: opened.errors.append(str(error)))
    opened.page.goto(path.resolve().as_uri() + hash)
    opened.page.wait_for_selector("body[data-ready=true]", state="attached", timeout=10_000)
    return opened


def _shot(opened: Opened, name: str, full: bool = False) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full)


def _clean(opened: Opened, path: Path) -> None:
    """Nothing but the file itself was requested, nothing ran that the page did not write, no error."""
    assert opened.requests == [path.resolve().as_uri()]
    assert opened.dialogs == [] and opened.errors == []
    assert opened.page.evaluate("window.__pwned") is None
    opened.page.close()


def _cells(page: Any, selector: str) -> list[list[str]]:
    return page.eval_on_selector_all(selector + " tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")


def test_summary_renders_the_report_figures(browser: Any, pages: Pages) -> None:
    opened = _open(browser, pages.page)
    page = opened.page
    low, high = wilson(2, 4)
    assert page.text_content("#summary .overall") == (
        f"6 runs: 2 passed, 2 failed, 2 errored; pass rate 50.0% (95% Wilson interval {100 * low:.1f}% to {100 * high:.1f}%)")
    arms = _cells(page, "#summary table.arms")
    assert [row[0] for row in arms] == ["scripted · plain", f"scripted · {PROMPT_NAME}", "all arms"]  # the label shows literally
    assert [row[1:6] for row in arms] == [["3", "1", "1", "1 (1 infra)", "50.0%"]] * 2 + [["6", "2", "2", "2 (2 infra)", "50.0%"]]
    assert [row[0] for row in _cells(page, "#summary table.groups")] == ["web [scripted · plain]", f"web [scripted · {PROMPT_NAME}]"]
    assert page.query_selector("#cells table") is None  # drawn when opened
    page.click("#cells summary")
    page.wait_for_selector("#cells table")  # drawn by the toggle event, which comes after the click
    cells = _cells(page, "#cells table")
    assert [row[:6] for row in cells[:3]] == [
        [CASE_ID, "scripted · plain", "1", "1", "100.0%", "20.7% to 100.0%"],
        ["web/wrong", "scripted · plain", "1", "0", "0.0%", "0.0% to 79.3%"],
        ["web/broken", "scripted · plain", "1", "0", "n/a", "0.0% to 100.0%"]]
    assert cells[0][6:] == ["1.00 (k=1)", "1.00", "", "held"] and cells[1][9] == "broken"
    assert page.text_content("#summary .counts") == (
        "redundant tool calls: 0; final replies truncated at the output limit: 0 of 6 runs; cached prompt tokens: n/a")
    regression = page.text_content("#regression")
    assert f"only after: {CASE_ID} [scripted · plain]" in regression
    assert page.eval_on_selector_all("#regression h3", "nodes => nodes.map(n => n.textContent)") == [
        "pass→fail: 2 runs in 2 cases", "fail→pass: none"]  # paired runs, as the verdict counts them
    assert _cells(page, "#regression table.pass-to-fail") == [
        ["web/wrong", "scripted · plain", "1", "100.0%", "0.0%"], ["web/wrong", f"scripted · {PROMPT_NAME}", "1", "100.0%", "0.0%"]]
    paired = _cells(page, "#comparison table.paired-summary")
    assert paired == [["scripted · plain", f"scripted · {PROMPT_NAME}", "1", "0", "0", "0", "0", "1", "1.000"]]  # web/wrong: both fail
    differences = _cells(page, "#comparison table.differences")  # Newcombe's interval of one pair both failed: ±0.79
    assert differences[0] == ["pass rate", "+0.00", "-0.79 to +0.79", "1", "Newcombe (paired proportions)"]
    _shot(opened, "summary")
    _clean(opened, pages.page)


def test_a_runs_transcript_shows_after_clicking_it(browser: Any, pages: Pages) -> None:
    opened = _open(browser, pages.page)
    page = opened.page
    runs = embedded(pages.page, "runs")
    index = next(i for i, r in enumerate(runs) if r["case"] == "web/lookup")
    assert page.text_content("#transcript") == ""  # drawn only when opened
    page.click(f"#run-list tr[data-index='{index}'] a")
    page.wait_for_selector("#transcript-title")
    assert page.text_content("#transcript-title") == "web/lookup"
    assert page.eval_on_selector_all("#transcript .call pre.result", "nodes => nodes.map(n => n.textContent)") == [RESULT]
    assert page.eval_on_selector_all("#transcript pre.reply", "nodes => nodes.map(n => n.textContent)") == [REPLY, REPLY]
    heads = page.eval_on_selector_all("#transcript .request-head", "nodes => nodes.map(n => n.textContent)")
    assert heads == ["model request 1 · finish tool_calls (reply) · tokens n/a in, n/a out · latency 0.00 s",
                     "model request 2 · finish stop (reply) · tokens n/a in, n/a out · latency 0.00 s"]
    checks = page.eval_on_selector_all("#transcript ul.checks li", "nodes => nodes.map(n => n.textContent)")
    assert checks == [f"pass {c['check']} {c['category']} {c['message']}" for c in runs[index]["checks"]]
    assert json.loads(page.text_content("#transcript pre.args")) == {"city": "Oslo"}
    said = page.eval_on_selector_all("#transcript .said", "nodes => nodes.map(n => n.textContent)")
    assert said == ["system promptYou are terse.", "userWhat is the weather in Oslo?"]  # the first lookup run: the second arm
    _shot(opened, "transcript")
    broken = next(i for i, r in enumerate(runs) if r["case"] == "web/broken")
    page.click(f"#run-list tr[data-index='{broken}'] a")
    page.wait_for_function("document.getElementById('transcript-title').textContent === 'web/broken'")
    facts = page.eval_on_selector_all("#transcript dl.facts > *", "nodes => nodes.map(n => n.textContent)")
    assert facts[facts.index("cause") + 1] == "setup: setup command failed (exit 3): exit 3"
    assert facts[facts.index("failure cause") + 1] == "run_error"
    _clean(opened, pages.page)


def test_filters_narrow_the_run_list(browser: Any, pages: Pages) -> None:
    opened = _open(browser, pages.page)
    page = opened.page
    assert page.text_content("#runs-count") == "showing 6 of 6 runs"
    page.select_option("#filter-status", "fail")
    assert [row[1] for row in _cells(page, "#run-list")] == ["web/wrong", "web/wrong"]
    assert page.text_content("#runs-count") == "showing 2 of 2 runs (6 in all)"
    page.select_option("#filter-arm", f"scripted · {PROMPT_NAME}")
    assert [(row[1], row[2], row[5]) for row in _cells(page, "#run-list")] == [("web/wrong", f"scripted · {PROMPT_NAME}", "missing_output")]
    page.select_option("#filter-status", "")
    page.select_option("#filter-failure", "run_error")
    assert [row[1] for row in _cells(page, "#run-list")] == ["web/broken"]
    page.select_option("#filter-failure", "")
    page.select_option("#filter-arm", "")
    page.select_option("#filter-group", "web")
    assert page.text_content("#runs-count") == "showing 6 of 6 runs"
    _clean(opened, pages.page)


def test_run_links_count_from_1_as_the_run_list_and_the_run_files_do(browser: Any, pages: Pages) -> None:
    files = sorted(path.name for path in (pages.after / "runs").glob("*.json"))
    opened = _open(browser, pages.page, hash="#run-4")
    page = opened.page
    links = page.eval_on_selector_all("#run-list tbody tr", "rows => rows.map(r => [r.cells[0].textContent, r.querySelector('a').getAttribute('href')])")
    assert links == [[str(n), f"#run-{n}"] for n in range(1, 7)]
    assert files[3] == "0004-web-lookup-scripted-img-src-x-onerror-alert-1-r1.json"
    assert page.text_content("#transcript-title") == "web/lookup"  # run 4 of the list, runs/0004-...
    facts = page.eval_on_selector_all("#transcript dl.facts > *", "nodes => nodes.map(n => n.textContent)")
    assert facts[facts.index("arm") + 1] == f"scripted · {PROMPT_NAME}"
    page.click("#run-list tr[data-index='0'] a")
    page.wait_for_function("document.getElementById('transcript-title').textContent !== 'web/lookup'")
    assert (page.evaluate("location.hash"), page.text_content("#transcript-title")) == ("#run-1", CASE_ID)
    _clean(opened, pages.page)


def test_the_run_list_shows_outcome_process_and_the_calls_that_ran(browser: Any, pages: Pages) -> None:
    opened = _open(browser, pages.page)
    page = opened.page
    assert page.eval_on_selector_all("#run-list thead th", "nodes => nodes.map(n => n.textContent)") == [
        "#", "case", "arm", "run", "status", "failure", "outcome", "process", "calls", "duration", "tokens"]
    rows = _cells(page, "#run-list")
    assert [row[1:9] + row[10:] for row in rows[:3]] == [
        [CASE_ID, "scripted · plain", "1", "pass", "", "1.00", "1.00", "1", "n/a"],
        ["web/wrong", "scripted · plain", "1", "fail", "missing_output", "0.00", "n/a", "0", "n/a"],
        ["web/broken", "scripted · plain", "1", "error", "run_error", "n/a", "n/a", "0", "n/a"]]
    _clean(opened, pages.page)


def test_calls_that_did_not_run_and_the_summary_counts_show_apart(browser: Any, pages: Pages, tmp_path: Path) -> None:
    report = json.loads((pages.before / "report.json").read_text())
    run = next(r for r in report["runs"] if r["case"] == "web/lookup")
    step = run["trace"][0]
    run["trace"] += [{**step, "call_id": "refused-1", "status": "refused"}, {**step, "call_id": "cut-1", "status": "truncated"},
                     {**step, "call_id": "cut-2", "status": "truncated"}, {**step, "call_id": "again", "status": "recovered"}]
    report["overall"].update(truncated_replies=1, redundant_total=3, cached_tokens_total=1200)
    report["cache"] = {"hits": 4, "misses": 2, "tokens": 900, "cost": 0.01}
    path = tmp_path / "calls.html"
    path.write_text(html_page(report, []), encoding="ascii")
    index = report["runs"].index(run)
    opened = _open(browser, path, hash=f"#run-{index + 1}")
    page = opened.page
    assert page.text_content(f"#run-list tr[data-index='{index}'] td:nth-child(9)") == "2 (1 refused, 2 cut off)"
    facts = page.eval_on_selector_all("#transcript dl.facts > *", "nodes => nodes.map(n => n.textContent)")
    assert facts[facts.index("tool calls") + 1] == "2 (1 refused, 2 cut off)"
    assert page.text_content("#summary .counts") == ("redundant tool calls: 3; final replies truncated at the output limit: 1 of 6 runs; "
                                                     "cached prompt tokens: 1200; response cache: 4 hits, 2 misses")
    _clean(opened, path)


def test_a_1400_pixel_window_shows_the_tables_of_a_wide_suite_without_sideways_scroll(browser: Any, tmp_path: Path) -> None:
    """Four arms (two providers, two prompts named at length) over the bundled fs cases and two long case ids."""
    (tmp_path / "long.yml").write_text(LONG_CASES)
    prompts = []
    for name in ("careful-and-thorough-system-prompt-v2", "terse-minimal-system-prompt-v1"):
        (tmp_path / f"{name}.j2").write_text("You are an agent.\n")
        prompts += ["-P", str(tmp_path / f"{name}.j2")]
    done = run_cli("run", str(tmp_path / "long.yml"), str(ROOT / "cases" / "fs.yml"), *prompts, "--results", str(tmp_path / "r"))
    assert done.returncode == 1, done.stderr  # the case with the unbreakable id fails on purpose
    folder = next((tmp_path / "r").iterdir())
    files = sorted((folder / "runs").glob("*.json"))
    for number, path in enumerate(files, start=len(files) + 1):  # the same runs again from a second provider
        record = json.loads(path.read_text())
        record["provider"] = "openrouter/anthropic/claude-3.5-sonnet-20241022"
        (folder / "runs" / f"{number:04d}-{path.name[5:]}").write_text(json.dumps(record))
    page_path = tmp_path / "wide.html"
    assert run_cli("report", str(folder), "--html", str(page_path)).returncode == 0
    opened = _open(browser, page_path, width=1400)
    page = opened.page
    assert len(embedded(page_path, "summary")["arms"]) == 4 and page.evaluate("document.querySelectorAll('#run-list tbody tr').length") == 28
    long, careful, terse = "openrouter/anthropic/claude-3.5-sonnet-20241022", "careful-and-thorough-system-prompt-v2", "terse-minimal-system-prompt-v1"
    assert page.eval_on_selector_all("#comparison p.verdict", "nodes => nodes.map(n => n.textContent)") == [
        f"{title}: same result on all 7 paired runs: no difference" for title in (
            f"prompt {terse} vs {careful}, provider scripted", f"prompt {terse} vs {careful}, provider {long}",
            f"provider {long} vs scripted, prompt {careful}", f"provider {long} vs scripted, prompt {terse}")]
    page.click("#cells summary")
    page.wait_for_selector("#cells table")
    widths = page.evaluate("""[['page', document.documentElement.scrollWidth, document.documentElement.clientWidth],
        ...[...document.querySelectorAll('.scroll')].map(d => [d.firstChild.id || d.firstChild.className, d.scrollWidth, d.clientWidth])]""")
    assert [name for name, _, _ in widths] == ["page", "figures arms", "figures groups", "figures cells", *["paired-summary", "differences"] * 4, "run-list"]
    assert [[name, scroll <= client] for name, scroll, client in widths] == [[name, True] for name, _, _ in widths], widths
    _shot(opened, "wide", full=True)
    _clean(opened, page_path)


def test_every_plot_draws_on_its_canvas(browser: Any, pages: Pages) -> None:
    opened = _open(browser, pages.run_page)
    painted = opened.page.evaluate("""ids => ids.map(id => {
        const c = document.getElementById(id), data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 3; i < data.length; i += 4) if (data[i]) n++;
        return [id, c.width > 0 && c.height > 0, n > 500]; })""", PLOTS)
    assert painted == [[id, True, True] for id in PLOTS]
    assert opened.page.evaluate("Object.keys(Chart.instances).length") == len(PLOTS)
    _clean(opened, pages.run_page)


def test_a_phone_width_page_has_no_sideways_scroll(browser: Any, pages: Pages) -> None:
    runs = embedded(pages.page, "runs")
    index = next(i for i, r in enumerate(runs) if r["case"] == "web/lookup")
    opened = _open(browser, pages.page, width=390, hash=f"#run-{index + 1}")  # a link to a run opens it
    page = opened.page
    assert page.text_content("#transcript-title") == "web/lookup"
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.evaluate("document.getElementById('plot-pass-rate').getBoundingClientRect().width") <= 390
    _shot(opened, "phone")
    _clean(opened, pages.page)


def test_hostile_text_shows_literally_and_runs_nothing(browser: Any, pages: Pages) -> None:
    opened = _open(browser, pages.page)
    page = opened.page
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert page.evaluate("document.scripts.length") == 4
    assert page.text_content("#run-list tr[data-index='0'] a") == CASE_ID
    page.click("#run-list tr[data-index='0'] a")
    page.wait_for_selector("#transcript-title")
    assert page.text_content("#transcript-title") == CASE_ID
    assert page.title() == f"tooltrial report {pages.after.name}"
    _clean(opened, pages.page)


def test_what_a_live_run_records_shows_folded_where_long(browser: Any, pages: Pages, tmp_path: Path) -> None:
    """A run with what the scripted provider does not record (tokens, cost, reasoning, failed tries, a
    long tool result) and the setup and verify output (record key ``commands``), on a page of its own."""
    report = json.loads((pages.before / "report.json").read_text())
    run = next(r for r in report["runs"] if r["case"] == "web/lookup")
    run["commands"] = [
        {"phase": "setup", "command": "make -C src", "exit_code": 2, "timed_out": False, "duration": 0.25,
         "stdout": "cc -o main main.c", "stderr": f"main.c:1: error {SCRIPT_TAG}"},
        {"phase": "verify", "command": "true", "exit_code": 0, "timed_out": False, "duration": 0.01, "stdout": "", "stderr": ""},
    ]
    request = run["model_requests"][0]
    request.update(prompt=120, completion=40, cost=0.0012, latency=1.5, reasoning=f"Think. {SCRIPT_TAG}", attempts=[
        {"number": 1, "duration": 0.2, "error_kind": "rate_limit", "status": 429, "message": "slow down", "wait": 1.0,
         "wait_source": "retry-after"},
        {"number": 2, "duration": 1.3, "error_kind": None, "status": None, "message": None, "wait": None, "wait_source": None}])
    run["trajectory_match"] = {"exact": False, "in_order": True, "any_order": True, "name_precision": 1.0,
                               "name_recall": 0.5, "call_precision": None, "call_recall": None}
    long_result = "line\n" * 30
    run["trace"][0]["result"] = long_result
    path = tmp_path / "live.html"
    path.write_text(html_page(report, []), encoding="ascii")
    opened = _open(browser, path, hash=f"#run-{report['runs'].index(run) + 1}")
    page = opened.page
    commands = page.eval_on_selector_all("#transcript details.command", "nodes => nodes.map(n => [n.open, "
                                         "n.querySelector('summary').textContent, [...n.querySelectorAll('pre')].map(p => p.textContent)])")
    assert commands == [
        [True, "setup: make -C src — exit 2 · 0.25 s", ["cc -o main main.c", f"main.c:1: error {SCRIPT_TAG}"]],
        [False, "verify: true — exit 0 · 0.01 s", ["", ""]],
    ]
    facts = page.eval_on_selector_all("#transcript dl.facts > *", "nodes => nodes.map(n => n.textContent)")
    assert facts[facts.index("trajectory") + 1] == (
        "in_order, any_order; names precision 1.00, recall 0.50; calls precision n/a, recall n/a")
    assert page.text_content("#transcript .request-head") == (
        "model request 1 · finish tool_calls (reply) · tokens 120 in, 40 out · $0.0012 · latency 1.50 s · 2 tries")
    folds = page.eval_on_selector_all("#transcript .request details", "nodes => nodes.map(n => [n.className, n.open, "
                                      "n.querySelector('summary').textContent, n.querySelector('ul, pre').textContent])")
    assert folds == [
        ["attempts", False, "1 failed try", "try 1: rate_limit (HTTP 429) slow down · 0.20 s, then waited 1.00 s (retry-after)"],
        ["reasoning", False, f"reasoning ({len(request['reasoning'])} characters)", request["reasoning"]],
        ["fold", False, "result (150 characters, 31 lines)", long_result],
    ]
    _clean(opened, path)


SCRIPT_TAG = "</script><script>window.__pwned = 'stderr'</script>"
LONG_CASES = """\
- id: refactor-the-payment-service-retry-policy-without-touching-the-fixtures
  turns: [Write hello to out.txt]
  expect: {files: {out.txt: {contains: [hello]}}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hello}}]
    - content: done
- id: averyverylongcaseidentifierwithoutanyhyphenthatcannotbreakatall_v2
  turns: [Write hello to out.txt]
  expect: {files: {out.txt: {contains: [hello]}}}
  script: [{content: I will not.}]
"""


def test_the_regression_view_names_the_changed_inputs_it_left_out(browser: Any, tmp_path: Path) -> None:
    """A prompt edited between two runs: the page says which arm changed and that it was left out, as
    ``report A B`` prints it, not only "no paired runs"."""
    prompt = tmp_path / "a.j2"
    folders = []
    for number, text in enumerate(("You are an agent.\n", "You are a careful agent.\n")):
        prompt.write_text(text)
        done = run_cli("run", str(ROOT / "cases" / "calc.yml"), "-P", str(prompt), "--results", str(tmp_path / f"r{number}"))
        assert done.returncode == 0, done.stderr
        folders.append(str(next((tmp_path / f"r{number}").iterdir())))
    page_path = tmp_path / "regression.html"
    assert run_cli("report", *folders, "--html", str(page_path)).returncode == 0
    opened = _open(browser, page_path)
    page = opened.page
    headings = page.eval_on_selector_all("#regression h3", "nodes => nodes.map(n => n.textContent)")
    assert "changed inputs: 1 change" in headings
    assert _cells(page, "#regression table.changed-inputs") == [["scripted · a", "prompt a changed"]]
    assert "--allow-changed keeps them" in page.text_content("#regression")
    assert opened.errors == []
    opened.page.close()
