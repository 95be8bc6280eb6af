"""The HTML report: one self-contained file (``run --html``, ``report --html``) that opens from disk,
offline, in any browser.

Everything the page needs is inlined: the style sheet, the viewer script and Chart.js (vendored in
``runner/data/html/``, its version and licence beside it), and the data, as JSON in ``<script
type="application/json">`` elements. The data is the report document (runner.output.report:
the same figures as ``report.json``, from the one aggregation, with its paired ``comparisons``), and for
two results folders the regression document.

Model output is hostile: the JSON is written with every ``<``, ``>`` and ``&`` as a ``\\u`` escape
(and every non-ASCII character, so the file is ASCII), so no text in it can close the script element
or open a comment (HTML Living Standard, "Restrictions for contents of script elements"); the
viewer puts every string into the page through ``textContent``, never as markup.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.output.report import CellDicts, paired_dict, run_dict
from runner.output.store import json_default, write_replace
from runner.run.record import RunRecord
from runner.scoring import pairs
from runner.scoring.summary import RunSummary, summarize

if TYPE_CHECKING:
    from runner.output.finish import Ending

ASSETS = Path(__file__).resolve().parent.parent / "data" / "html"
CHART_JS = "chart.umd.min.js"  # Chart.js 4.6.1, MIT (chart.js.LICENSE.md), from the npm registry
_PARTS = ("style.css", CHART_JS, "app.js")


def embed_json(data: Any) -> str:
    """``data`` as JSON text safe inside an HTML ``<script>`` element: ASCII only, with ``<``, ``>`` and
    ``&`` written as ``\\u`` escapes (``JSON.parse`` reads them back as the characters), values JSON
    has no type for as runner.output.store.json_default writes them, NaN and infinities (which JSON has not) as null."""
    try:
        text = json.dumps(data, ensure_ascii=True, default=json_default, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a float that is not finite: rare, so the walk is paid only then
        text = json.dumps(_finite(data), ensure_ascii=True, default=json_default, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# How many levels of the summary's values are written a piece at a time: each cell (made as it is read,
# runner.output.report.CellDicts), and an arm down to each case's provenance (11 MB at 10,000 cases).
_OPENED = {"cells": 1, "arms": 4}


def embedded(summary: dict[str, Any], opened: dict[str, int]) -> Iterator[str]:
    """``embed_json(summary)`` piece by piece: the value of each key of ``opened`` that many levels of lists and
    dicts (with text keys) down an item or a key at a time, anything below encoded whole; the same characters,
    without the whole text or every cell held at once."""
    yield "{"
    for place, (key, value) in enumerate(summary.items()):
        yield ("," if place else "") + embed_json(key) + ":"
        yield from _pieces(value, opened.get(key, 0))
    yield "}"


def _pieces(value: Any, levels: int) -> Iterator[str]:
    if levels and isinstance(value, dict) and all(isinstance(key, str) for key in value):
        yield "{"
        for place, (key, item) in enumerate(value.items()):
            yield ("," if place else "") + embed_json(key) + ":"
            yield from _pieces(item, levels - 1)
        yield "}"
    elif levels and isinstance(value, (list, tuple, CellDicts)):
        yield "["
        for place, item in enumerate(value):
            if place:
                yield ","
            yield from _pieces(item, levels - 1)
        yield "]"
    else:
        yield embed_json(value)


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):  # CellDicts too
        return [_finite(v) for v in value]
    return value


def comparisons(head: dict[str, Any], records: Sequence[RunSummary]) -> list[dict[str, Any]]:
    """The report's ``comparisons`` (runner.scoring.pairs: every paired analysis, as report.json writes
    them); for a document without them (a report.json of an earlier version) made from ``records``,
    which may be the runs' summaries (runner.scoring.summary)."""
    if "comparisons" in head:
        return head["comparisons"]
    return [paired_dict(p) for p in pairs.comparisons(records)]


def html_page(document: dict[str, Any], records: Sequence[RunRecord], regression: dict[str, Any] | None = None) -> str:
    """The page for one report ``document`` (runner.output.report.report_document) of ``records`` (each run shown
    from its record, with what each request first said; with no records, from the document's ``runs``), and for
    two results folders the ``regression`` document (runner.output.regressiondoc.regression_document)."""
    head = {key: value for key, value in document.items() if key != "runs"}
    runs = map(_shown, records) if records else document.get("runs", [])  # no records: the document's runs
    return "".join(page_parts(head, [summarize(r) for r in records], runs, regression))


def page_parts(head: dict[str, Any], summaries: Sequence[RunSummary], runs: Iterable[dict[str, Any]],
               regression: dict[str, Any] | None = None) -> Iterator[str]:
    """``html_page``'s text piece by piece: ``head`` is the report document but its ``runs``
    (runner.output.report.report_head), ``summaries`` the runs' summaries (or records) and ``runs``
    their ``run_dict``s, taken one at a time as the page is written."""
    summary = dict(head)
    summary["comparisons"] = comparisons(head, summaries)
    summary["regression"] = regression
    style, chart, app = _assets()
    title = f"tooltrial report {head.get('run_id') or ''}".strip()
    yield "".join([
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        # No request leaves the page: whatever a run's text holds, nothing is fetched.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; ",
        "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n",
        f"<title>{escape(title)}</title>\n<style>\n{style}</style>\n</head>\n<body>\n",
        "<noscript>This report needs JavaScript; report.json holds the same figures.</noscript>\n",
        "<main id=\"app\"></main>\n",
        "<script type=\"application/json\" id=\"summary-data\">",
    ])
    yield from embedded(summary, _OPENED)
    yield "".join([
        f"</script>\n<script>\n{chart}\n</script>\n<script>\n{app}\n</script>\n",
        # Last, so the summary and plots are drawn while the browser still reads the runs.
        "<script type=\"application/json\" id=\"runs-data\">[",
    ])
    for place, run in enumerate(runs):  # a JSON array's items, as embed_json writes the array
        yield ("," if place else "") + embed_json(run)
    yield "]</script>\n</body>\n</html>\n"


def write_page(path: Path, ending: Ending) -> None:
    """``--html``: the page of the finished runs (of ``report A B``, the second folder's with the regression
    view), the records read back one at a time. Raises OSError when it cannot be written."""
    write_replace(path, page_parts(ending.document, ending.runs.summaries, map(_shown, ending.runs.records()),
                                   ending.change))


def _shown(record: RunRecord) -> dict[str, Any]:
    """A run as the page shows it: its ``run_dict`` and ``said``, per model request the system and user messages
    it was the first to carry (``{role, text}``, text parts joined), which the transcript shows before it."""
    said: list[list[dict[str, str]]] = []
    seen = 0
    for request in record.model_requests:
        start, end = request.messages or (0, 0)
        new = record.messages[max(start, seen):end] if end > seen else []
        said.append([{"role": m["role"], "text": _text(m.get("content"))} for m in new if m.get("role") in ("system", "user")])
        seen = max(seen, end)
    return {**run_dict(record), "said": said}


def _text(content: Any) -> str:
    """A message's text: a string as is, a list of parts as their ``text`` joined, anything else as ``""``."""
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return content if isinstance(content, str) else ""


@cache
def _assets() -> tuple[str, ...]:
    """The style sheet, Chart.js and the viewer script, read once (they are files of the package)."""
    return tuple((ASSETS / name).read_text(encoding="utf-8") for name in _PARTS)

