"""Results folders with hostile text, written by the real CLI, and the pages ``--html`` makes of them,
for the HTML report's tests (tests/test_html.py, tests/test_html_browser.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import run_cli

# Markup a model (or a tampered results file) may send; each would set window.__pwned if it ran.
SCRIPT = "</script><script>window.__pwned = 'script';</script>"
IMG = "<img src=x onerror=\"window.__pwned = 'img'\">"
COMMENT = "<!-- <script>window.__pwned = 'comment'</script>"
RESULT = f"weather: {SCRIPT} {IMG}"                # a tool result
REPLY = f"Sunny. {COMMENT} {SCRIPT}"                # a model's reply
CASE_ID = f"web/{IMG}{SCRIPT}"                      # a case id in a tampered run file
PROMPT_NAME = "<img src=x onerror=alert(1)>"        # a prompt file's stem: an arm label

CASES = """\
- id: lookup
  tools: [weather]
  mocks:
    - name: weather
      description: The weather in a city.
      parameters: {type: object, properties: {city: {type: string}}, required: [city]}
      responses:
        - result: %(result)s
  turns: [What is the weather in Oslo?]
  expect:
    response_contains: [Sunny]
    trace: {must_include: [weather]}
  script:
    - tool_calls: [{name: weather, arguments: {city: Oslo}}]
    - content: %(reply)s
- id: wrong
  turns: [Write hello to out.txt]
  expect:
    files:
      out.txt: {contains: [hello]}
  script:
    - %(wrong)s
- id: broken
  setup: [exit 3]
  turns: [anything]
  script: [{content: hi}]
"""
FIXED = "{tool_calls: [{name: write_file, arguments: {path: out.txt, content: hello}}]}\n    - content: done"


@dataclass(frozen=True)
class Pages:
    """``before`` and ``after``: results folders of the same three cases in two arms (prompts
    ``plain`` and PROMPT_NAME); in ``before`` the case ``web/wrong`` passes, in ``after`` it fails, and
    after's first run file names its case CASE_ID. ``page``: ``report --html`` of both (after, with the
    regression view); ``run_page``: ``run --html`` of before."""

    before: Path
    after: Path
    page: Path
    run_page: Path


def write_cases(folder: Path, wrong: str) -> Path:
    """The case file ``web.yml`` in ``folder``, the case ``wrong`` scripted with ``wrong``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "web.yml"
    path.write_text(CASES % {"result": json.dumps(RESULT), "reply": json.dumps(REPLY), "wrong": wrong})
    return path


def build(tmp: Path) -> Pages:
    """Run the cases twice through the CLI (see Pages) and write both pages."""
    prompts = tmp / "prompts"
    prompts.mkdir()
    (prompts / "plain.j2").write_text("You are a helpful assistant.\n")
    (prompts / f"{PROMPT_NAME}.j2").write_text("You are terse.\n")
    arms = ["-P", str(prompts / "plain.j2"), "-P", str(prompts / f"{PROMPT_NAME}.j2")]
    run_page = tmp / "run.html"
    folders = []
    for name, wrong, extra in (("before", FIXED, ["--html", str(run_page)]), ("after", "content: I will not.", [])):
        cases = write_cases(tmp / name, wrong)
        done = run_cli("run", str(cases), *arms, "--results", str(tmp / name / "results"), *extra)
        assert done.returncode in (1, 6), done.stderr  # a case failed, a setup command broke
        folders.append(Path(re.search(r"results: (\S+)", done.stderr).group(1)))
    before, after = folders
    first = min((after / "runs").glob("*.json"))
    record = json.loads(first.read_text())
    record["case"] = CASE_ID
    first.write_text(json.dumps(record))
    page = tmp / "report.html"
    done = run_cli("report", str(before), str(after), "--html", str(page))
    assert done.returncode == 0, done.stderr
    return Pages(before, after, page, run_page)


def embedded(page: Path, name: str) -> object:
    """The JSON the page carries in ``<script id="NAME-data">``, read back."""
    text = page.read_text(encoding="ascii")
    found = re.search(rf'<script type="application/json" id="{name}-data">(.*?)</script>', text, re.DOTALL)
    assert found, f"no {name}-data in {page}"
    return json.loads(found.group(1))
