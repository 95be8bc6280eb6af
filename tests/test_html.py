"""``--html``: the one self-contained page of ``run`` and ``report``, read as a file (tests/test_html_browser.py
opens it in Chromium)."""

from __future__ import annotations

import hashlib
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.output.html import ASSETS, CHART_JS, embed_json
from tests.helpers import ROOT, run_cli
from tests.html_pages import CASE_ID, PROMPT_NAME, REPLY, RESULT, Pages, embedded


@pytest.fixture(scope="module")
def pages(html_pages: Pages) -> Pages:
    return html_pages


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of each script element."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: Path) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(page.read_text(encoding="ascii"))
    return parser.tags


def test_the_page_loads_nothing_from_anywhere(pages: Pages) -> None:
    tags = _tags(pages.page)
    assert [t for t, a in tags if t == "script"] == ["script"] * 4  # the two data blocks, Chart.js, the viewer
    assert [a for t, a in tags if t == "script" and "src" in a] == []
    assert [t for t, a in tags if t in ("link", "img", "iframe", "object", "embed", "base")] == []
    assert not [a for t, a in tags for k in a if k in ("src", "href") and t != "a"]
    text = pages.page.read_text(encoding="ascii")
    assert "@import" not in text and "url(" not in text.split("<script")[0]  # the style sheet fetches nothing
    assert ("http-equiv", "Content-Security-Policy") in [(k, v) for t, a in tags if t == "meta" for k, v in a.items()]


def test_hostile_text_stays_inside_its_script_element(pages: Pages) -> None:
    text = pages.page.read_text(encoding="ascii")
    assert text.count("</script>") == 4 and text.lower().count("<script") == 4
    assert "<!--" not in text and "<img" not in text
    runs = embedded(pages.page, "runs")
    assert runs[0]["case"] == CASE_ID  # read back exactly
    lookup = next(r for r in runs if r["case"] == "web/lookup")
    assert lookup["final_reply"] == REPLY
    assert lookup["trace"][0]["result"] == RESULT
    summary = embedded(pages.page, "summary")
    assert [a["prompt"] for a in summary["arms"]] == ["plain", PROMPT_NAME]


def test_report_html_carries_report_json_figures(pages: Pages) -> None:
    report = json.loads((pages.before / "report.json").read_text())
    summary = embedded(pages.run_page, "summary")
    for key in ("overall", "arms", "cells", "paired", "exit_code", "run_id", "started", "finished"):
        assert summary[key] == report[key], key
    runs = embedded(pages.run_page, "runs")
    assert [{k: v for k, v in run.items() if k != "said"} for run in runs] == report["runs"]
    said = {run["case"]: run["said"] for run in runs if run["prompt"] == "plain"}  # what each request first carried
    assert said == {"web/lookup": [[{"role": "system", "text": "You are a helpful assistant."},
                                    {"role": "user", "text": "What is the weather in Oslo?"}], []],
                    "web/wrong": [[{"role": "system", "text": "You are a helpful assistant."},
                                   {"role": "user", "text": "Write hello to out.txt"}], []],
                    "web/broken": []}
    assert summary["regression"] is None
    assert summary["comparisons"] == [report["paired"]]  # two arms: the report's own paired analysis
    assert summary["overall"]["runs"] == 6 and summary["overall"]["passed"] == 4 and summary["overall"]["errored"] == 2


def test_report_html_of_one_folder_is_the_run_page_again(pages: Pages, tmp_path: Path) -> None:
    page = tmp_path / "again.html"
    done = run_cli("report", str(pages.before), "--html", str(page), "--output", "json")
    assert done.returncode == 0, done.stderr
    again, first = embedded(page, "summary"), embedded(pages.run_page, "summary")
    assert again == first
    assert embedded(page, "runs") == embedded(pages.run_page, "runs")
    assert json.loads(done.stdout)["overall"] == again["overall"]


def test_two_folders_give_the_regression_view(pages: Pages) -> None:
    summary = embedded(pages.page, "summary")
    change = summary["regression"]
    assert change["kind"] == "tooltrial.regression"
    assert change["before"] == str(pages.before) and change["after"] == str(pages.after)
    assert [(c["case"], c["arm"], c["before"], c["after"]) for c in change["pass_to_fail"]] == [
        ("web/wrong", "scripted · plain", 1.0, 0.0), ("web/wrong", f"scripted · {PROMPT_NAME}", 1.0, 0.0)]
    assert change["only_after"] == [f"{CASE_ID} [scripted · plain]"]
    assert summary["run_id"] == pages.after.name  # the page is of the second folder


def test_three_prompts_are_compared_each_two_as_report_json_holds_them(tmp_path: Path) -> None:
    prompts = []
    for name in ("a", "b", "c"):
        prompts += ["-P", str(tmp_path / f"{name}.j2")]
        (tmp_path / f"{name}.j2").write_text(f"prompt {name}\n")
    page = tmp_path / "out" / "page.html"  # the folder is made
    cases = tmp_path / "web.yml"
    cases.write_text("- {id: one, turns: [hi], expect: {response_contains: [hello]}, script: [{content: hello}]}\n")
    done = run_cli("run", str(cases), *prompts, "--results", str(tmp_path / "results"), "--html", str(page))
    assert done.returncode == 0, done.stderr
    summary = embedded(page, "summary")
    assert summary["paired"] is None
    assert [(p["a"], p["b"], p["pairs"], p["pass_to_fail"], p["fail_to_pass"], p["p_value"], p["factor"]) for p in summary["comparisons"]] == [
        ("scripted · a", "scripted · b", 1, 0, 0, 1.0, {"name": "prompt", "a": "a", "b": "b", "fixed": {"provider": "scripted"}}),
        ("scripted · a", "scripted · c", 1, 0, 0, 1.0, {"name": "prompt", "a": "a", "b": "c", "fixed": {"provider": "scripted"}}),
        ("scripted · b", "scripted · c", 1, 0, 0, 1.0, {"name": "prompt", "a": "b", "b": "c", "fixed": {"provider": "scripted"}})]
    assert [p["verdict"] for p in summary["comparisons"]] == [
        "prompt b vs a, provider scripted: same result on the 1 paired run: no difference",
        "prompt c vs a, provider scripted: same result on the 1 paired run: no difference",
        "prompt c vs b, provider scripted: same result on the 1 paired run: no difference"]
    report = json.loads(next((tmp_path / "results").glob("*/report.json")).read_text())
    assert summary["comparisons"] == report["comparisons"]


def test_an_html_path_that_is_a_folder_is_refused_before_any_run(tmp_path: Path, pages: Pages) -> None:
    done = run_cli("run", str(pages.before.parent.parent / "web.yml"), "--results", str(tmp_path / "r"), "--html", str(tmp_path))
    line = f"error: --html {tmp_path} is a folder (give a file path, e.g. {tmp_path / 'report.html'})"
    assert (done.returncode, done.stderr.splitlines()) == (4, [line])
    assert not (tmp_path / "r").exists()
    done = run_cli("report", str(pages.before), "--html", str(tmp_path))
    assert (done.returncode, done.stderr.splitlines()) == (4, [line])


def test_a_page_that_cannot_be_written_is_an_error_naming_it(tmp_path: Path, pages: Pages) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = run_cli("report", str(pages.before), "--html", str(blocker / "page.html"))
    assert (done.returncode, done.stderr.splitlines()) == (4, [
        f"error: --html {blocker / 'page.html'}: {blocker} is a file, not a folder (give a path inside a folder)"])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


@given(json_values | st.text(alphabet="<>&/!-sScriptSCRIPT\u2028\ud800 "))
def test_embedded_json_reads_back_and_cannot_close_a_script(value: object) -> None:
    text = embed_json(value)
    assert text.isascii()
    assert not set("<>&") & set(text)
    assert json.loads(text) == _finite(value)


def test_the_vendored_chart_js_is_the_one_its_notes_name() -> None:
    chart = (ASSETS / CHART_JS).read_bytes()
    assert chart.startswith(b"/*!\n * Chart.js v4.6.1\n")
    assert hashlib.sha256(chart).hexdigest() in (ASSETS / "VENDORED.md").read_text()
    assert b"</script" not in chart.lower() and b"<!--" not in chart  # safe to inline in a script element
    assert "Chart.js](https://www.chartjs.org/) 4.6.1" in (ROOT / "docs" / "viewing.md").read_text()
