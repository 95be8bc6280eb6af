"""``--summary-md FILE`` on ``run`` and ``report``, and ``$GITHUB_STEP_SUMMARY``: the Markdown summary,
its figures the report's, its untrusted text unable to make Markdown or HTML of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from runner.output.markdown import md_text, regression_markdown, summary_markdown
from runner.output.store import ResultsWriter
from runner.text import printable
from tests.helpers import BAD_RUN, GOOD, run_cli
from tests.records import matrix, runs

GFM = MarkdownIt("commonmark").enable("table")  # GitHub's Markdown: CommonMark with tables


def _suite(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yml").write_text(GOOD)
    (cases / "bad.yml").write_text(BAD_RUN)
    return cases


def _expected_run_summary(results: str) -> str:
    escaped = md_text(results)
    return f"""\
## tooltrial: 2/5 runs passed

Exit code 1: the agent broke a gate\\. Results: {escaped}

| arm | group | runs | passed | failed | errors | not scored | pass rate | 95% interval | tokens | cost \\(USD\\) |
|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| scripted · default | **all** | 5 | 2 | 1 | 2 | 1 | 50% | 15%–85% | — | — |
| scripted · default | bad | 3 | 0 | 1 | 2 | 1 | 0% | 0%–66% | — | — |
| scripted · default | good | 2 | 2 | 0 | 0 | 0 | 100% | 34%–100% | — | — |

### Failures \\(3\\)

- **FAIL** bad\\/wrong\\-answer, cause missing\\_output
  - verify failed \\(exit 1\\)\\: test \\-f nothing\\-here
  - out\\.txt does not exist
- **ERROR** bad\\/broken\\-setup, cause run\\_error: setup command failed \\(exit 3\\)\\: exit 3
- **ERROR** bad\\/too\\-many\\-turns, cause turn\\_limit: turn limit 1 exceeded
"""


def test_run_writes_the_summary_and_appends_it_to_the_step_summary(tmp_path: Path) -> None:
    step = tmp_path / "step-summary.md"
    step.write_text("an earlier step's summary\n")
    summary = tmp_path / "out" / "summary.md"
    done = run_cli("run", str(_suite(tmp_path)), "--results", str(tmp_path / "results"), "--summary-md", str(summary),
                   env={"GITHUB_STEP_SUMMARY": str(step)})
    assert done.returncode == 1, done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    report = json.loads((folder / "report.json").read_text())
    assert summary.read_text() == _expected_run_summary(report["results"])
    assert step.read_text() == "an earlier step's summary\n" + summary.read_text()
    # report re-renders the same summary from the folder: the one aggregation
    again = tmp_path / "again.md"
    assert run_cli("report", str(folder), "--summary-md", str(again)).returncode == 0
    assert again.read_text() == summary.read_text()


def test_two_arms_add_the_comparison(tmp_path: Path) -> None:
    for name in ("terse", "chatty"):
        (tmp_path / f"{name}.j2").write_text(f"You are {name}.")
    summary = tmp_path / "summary.md"
    done = run_cli("run", str(_suite(tmp_path) / "good.yml"), "-P", str(tmp_path / "terse.j2"), "-P",
                   str(tmp_path / "chatty.j2"), "--results", str(tmp_path / "results"), "--summary-md", str(summary))
    assert done.returncode == 0, done.stderr
    text = summary.read_text()
    assert text.startswith("## tooltrial: 4/4 runs passed\n")
    assert "| scripted · terse | **all** | 2 | 2 |" in text and "| scripted · chatty | good | 2 | 2 |" in text
    assert text.endswith("### Comparison\n\nscripted · chatty vs scripted · terse\\: same result on all 2 paired runs\\: "
                         "no difference\n\n- pass rate\\: scripted · chatty \\- scripted · terse \\= \\+0\\.00 \\(\\-0\\.66 to "
                         "\\+0\\.66\\)\\, exact McNemar p \\= 1\\; no pair disagreed\\: the power cannot be estimated\n"
                         "- outcome mean\\: scripted · chatty \\- scripted · terse \\= \\+0\\.00 \\(\\+0\\.00 to \\+0\\.00\\)\\, "
                         "paired bootstrap\n- process mean\\: scripted · chatty \\- scripted · terse \\= \\+0\\.00 \\(\\+0\\.00 "
                         "to \\+0\\.00\\)\\, paired bootstrap\n")


def test_run_without_the_variable_writes_no_step_summary(tmp_path: Path) -> None:
    done = run_cli("run", str(_suite(tmp_path) / "good.yml"), "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases", "results"]


def test_a_summary_md_that_is_a_folder_is_refused_before_any_run(tmp_path: Path) -> None:
    done = run_cli("run", str(_suite(tmp_path)), "--results", str(tmp_path / "results"), "--summary-md", str(tmp_path))
    assert done.returncode == 4
    assert done.stderr.strip() == f"error: --summary-md {tmp_path} is a folder (give a file path, e.g. {tmp_path}/summary.md)"
    assert not (tmp_path / "results").exists()


def _folder(root: Path, cells: dict[tuple[str, str], str]) -> Path:
    writer = ResultsWriter(root)
    for one in matrix(cells):
        writer.write_run(one)
    return writer.path


def test_report_of_two_folders_writes_the_regression(tmp_path: Path) -> None:
    before = _folder(tmp_path, {("g/a", "a"): "PP", ("g/b", "a"): "PP", ("g/c", "a"): "FF", ("g/gone", "a"): "P"})
    after = _folder(tmp_path, {("g/a", "a"): "PP", ("g/b", "a"): "PF", ("g/c", "a"): "PP", ("g/new", "a"): "P"})
    out = tmp_path / "regression.md"
    # as the example workflow runs it: the JSON document on stdout for jq, the summary beside it
    done = run_cli("report", str(before), str(after), "--summary-md", str(out), "--output", "json")
    assert done.returncode == 0, done.stderr
    assert [c["case"] for c in json.loads(done.stdout)["pass_to_fail"]] == ["g/b"]
    assert out.read_text() == f"""\
## tooltrial regression: 1 run went pass→fail, in 1 case

Before: {md_text(before)}; after: {md_text(after)}

| arm before | arm after | pass rate before | pass rate after |
|---|---|---:|---:|
| scripted · a | scripted · a | 67% | 83% |

### Pass → fail: 1 run in 1 case

| case | arm | runs | pass rate before | pass rate after |
|---|---|---:|---:|---:|
| g\\/b | scripted · a | 1 | 100% | 50% |

### Fail → pass: 2 runs in 1 case

| case | arm | runs | pass rate before | pass rate after |
|---|---|---:|---:|---:|
| g\\/c | scripted · a | 2 | 0% | 100% |

Only before: g\\/gone \\[scripted · a\\]

Only after: g\\/new \\[scripted · a\\]

after vs before\\: \\+17 pts pass rate over 6 paired runs \\(2 fail→pass\\, 1 pass→fail\\)\\; exact McNemar p \\= 1\\: not significant at 0\\.05\\, the difference may be chance

- pass rate\\: after \\- before \\= \\+0\\.17 \\(\\-0\\.36 to \\+0\\.60\\)\\, exact McNemar p \\= 1\\; too few pairs \\(6\\) to detect any difference \\(power 0\\.8\\)
"""


def test_four_arms_give_each_comparison_of_arms_that_differ_in_one_thing(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path / "results")
    for (provider, prompt), pattern in {("p", "x"): "P", ("p", "y"): "F", ("q", "x"): "P", ("q", "y"): "P"}.items():
        for one in runs("g/a", pattern, prompt, provider=provider):
            writer.write_run(one)
    out = tmp_path / "summary.md"
    assert run_cli("report", str(writer.path), "--summary-md", str(out)).returncode == 0
    text = out.read_text()
    assert text[text.index("### Comparison"):] == """\
### Comparison

prompt y vs x\\, provider p\\: \\-100 pts pass rate over 1 paired run \\(0 fail→pass\\, 1 pass→fail\\)\\; exact McNemar p \\= 1\\: not significant at 0\\.05\\, the difference may be chance

- pass rate\\: p · y \\- p · x \\= \\-1\\.00 \\(\\-1\\.00 to \\+0\\.12\\)\\, exact McNemar p \\= 1\\; too few pairs \\(1\\) to detect any difference \\(power 0\\.8\\)

Cases whose paired runs disagree \\(from p · x to p · y\\):

| case | pass → fail | fail → pass |
|---|---:|---:|
| g\\/a | 1 | 0 |

prompt y vs x\\, provider q\\: same result on the 1 paired run\\: no difference

- pass rate\\: q · y \\- q · x \\= \\+0\\.00 \\(\\-0\\.79 to \\+0\\.79\\)\\, exact McNemar p \\= 1\\; no pair disagreed\\: the power cannot be estimated

provider q vs p\\, prompt x\\: same result on the 1 paired run\\: no difference

- pass rate\\: q · x \\- p · x \\= \\+0\\.00 \\(\\-0\\.79 to \\+0\\.79\\)\\, exact McNemar p \\= 1\\; no pair disagreed\\: the power cannot be estimated

provider q vs p\\, prompt y\\: \\+100 pts pass rate over 1 paired run \\(1 fail→pass\\, 0 pass→fail\\)\\; exact McNemar p \\= 1\\: not significant at 0\\.05\\, the difference may be chance

- pass rate\\: q · y \\- p · y \\= \\+1\\.00 \\(\\-0\\.12 to \\+1\\.00\\)\\, exact McNemar p \\= 1\\; too few pairs \\(1\\) to detect any difference \\(power 0\\.8\\)

Cases whose paired runs disagree \\(from p · y to q · y\\):

| case | pass → fail | fail → pass |
|---|---:|---:|
| g\\/a | 0 | 1 |
"""


def test_report_names_a_summary_md_it_cannot_write(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "results", {("g/a", "a"): "P"})
    done = run_cli("report", str(folder), "--summary-md", str(tmp_path))
    assert done.returncode == 4
    assert done.stderr == f"error: --summary-md {tmp_path} is a folder (give a file path, e.g. {tmp_path / 'summary.md'})\n"


def _text_of(html: str) -> str:
    """What a reader sees of rendered HTML: the text, entities decoded."""
    import html as entities

    return entities.unescape(re.sub(r"<[^>]*>", "", html))


def _tags(html: str) -> list[str]:
    return re.findall(r"</?[a-zA-Z][^>]*>", html)


# Markdown's and HTML's own characters, whitespace, controls, and the starts of links, in any mix
HOSTILE = st.lists(st.sampled_from([*"<>&|*_`[]()!#\\-+.:/=~\"' \n\tax1", "\x1b", "\u202e", "www.", "http://", "&lt;",
                                    "<b>", "1. ", "    "])).map("".join)


@settings(max_examples=150, deadline=None)
@given(HOSTILE)
def test_untrusted_text_renders_as_itself_in_a_paragraph_a_cell_and_a_list_item(text: str) -> None:
    plain = " ".join(printable(text).split())  # what md_text promises to show: control characters escaped, one line
    table = ["<table>", "<thead>", "<tr>", "<th>", "</th>", "</tr>", "</thead>",
             "<tbody>", "<tr>", "<td>", "</td>", "</tr>", "</tbody>", "</table>"]
    for markdown, tags, seen in ((f"a {md_text(text)} b", ["<p>", "</p>"], f"a {plain} b"),
                                 (f"| h |\n|---|\n| a {md_text(text)} b |", table, f"h a {plain} b"),
                                 (f"- a {md_text(text)} b", ["<ul>", "<li>", "</li>", "</ul>"], f"a {plain} b")):
        html = GFM.render(markdown)
        assert _tags(html) == tags, markdown
        assert " ".join(_text_of(html).split()) == " ".join(seen.split()), markdown


def test_hostile_ids_messages_and_causes_make_no_markdown_of_their_own() -> None:
    evil = "<img src=x onerror=alert(1)> | **bold** [link](javascript:alert(1)) ![i](http://x/i.png) `code` &amp; #"
    document = {
        "exit_code": 1, "results": evil,
        "arms": [{"arm": evil, "runs": 1, "passed": 0, "failed": 1, "errored": 0, "infra_errors": 0, "pass_rate": 0.0,
                  "interval": [0.0, 0.79], "tokens_total": None, "cost_total": None, "groups": {evil: {"runs": 1}}}],
        "runs": [{"case": evil, "provider": evil, "prompt": "p", "run": 0, "status": "fail", "failure": evil,
                  "cause": None, "checks": [{"passed": False, "message": evil}]}],
        "paired": {"verdict": evil, "a": evil, "b": "b", "flips": [{"case": evil, "pass_to_fail": 1, "fail_to_pass": 0}]},
    }
    html = GFM.render(summary_markdown(document))
    assert not re.search(r"<(img|a|code|script)\b|<strong>bold", html), html
    assert html.count("<strong>") == 2  # the table's **all** and the status FAIL: ours only
    assert _text_of(html).count(evil) == 10  # each place it shows (one arm: no arm on the run line), as it is
    regression = {"before": evil, "after": evil, "arms": [{"before": {"arm": evil}, "after": {"arm": evil}}],
                  "pass_to_fail": [{"case": evil, "arm": evil, "before": 1.0, "after": 0.0}], "fail_to_pass": [],
                  "only_before": [evil], "only_after": [], "paired": {"verdict": evil}}
    html = GFM.render(regression_markdown(regression))
    assert not re.search(r"<(img|a|code|script|strong|em)\b", html), html
