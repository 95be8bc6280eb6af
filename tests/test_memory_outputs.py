"""Records stream to disk and stay there: the matrix keeps a summary per run, and every output that
needs whole records reads them back from the run files one at a time, with the same bytes the
whole-document code makes (report.json, ``--report``, ``--output json``, JUnit, the HTML page, the
Markdown summary, the printed text of ``tooltrial report``)."""

from __future__ import annotations

import gc
import io
import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import runner.cli.report
import runner.suite.request
from runner.checks.base import CheckResult
from runner.errors import UserError
from runner.kinds import Blame, ErrorKind, FailureCause, Status
from runner.output import scan
from runner.output.html import embed_json, embedded, html_page
from runner.output.junit import junit_xml
from runner.output.load import read_results, read_run
from runner.output.markdown import summary_markdown
from runner.output.report import report_document, report_head, report_text, run_item
from runner.output.scan import read_report_head
from runner.output.store import ascii_json, to_json
from runner.run.record import ERROR, FAIL, RunRecord
from runner.run.requests import Tokens
from runner.run.trajectory import Step
from runner.sandbox.command import Confinement
from runner.scoring.aggregate import Aggregate, aggregate
from runner.scoring.gates import Gate, evaluate, exit_code
from runner.scoring.summary import RunSummary, summarize
from runner.spec.discover import load_cases
from runner.terminal.console import make_console
from runner.terminal.lines import RunPrinter
from runner.terminal.statistics import print_statistics
from runner.terminal.tables import print_summary
from runner.text import first_line, printable
from tests.helpers import run_cli

CASES = """\
- id: passes
  files: {notes.txt: "alpha\\n"}
  turns: [Read notes.txt and say done.]
  expect:
    response_contains: [done]
    trace: {must_include: [read_file], max_calls: 2}
  script:
    - tool_calls: [{name: read_file, arguments: {path: notes.txt}}]
    - content: "done \\u00e9 </script> \\ud83d\\ude00"
- id: fails
  turns: [Write hello to out.txt]
  expect:
    files:
      out.txt: {contains: [hello]}
    response_contains: ["<b>&"]
  script:
    - content: "I will not. \\x1b[31m <!-- & -->"
- id: breaks
  setup: [exit 3]
  turns: [anything]
  script: [{content: hi}]
"""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``tooltrial run`` of three cases (a pass, a fail with hostile text, a setup error) in two arms,
    twice each, with every output file: its results folder, output paths, stdout and stderr."""
    tmp = tmp_path_factory.mktemp("memory")
    (tmp / "cases").mkdir()
    (tmp / "cases" / "streamed.yml").write_text(CASES, encoding="utf-8")
    for name, text in (("plain", "You are a helpful assistant.\n"), ("terse", "Be terse.\n")):
        (tmp / f"{name}.j2").write_text(text, encoding="utf-8")
    out = {name: tmp / name for name in ("report.json", "junit.xml", "page.html", "summary.md")}
    done = run_cli("run", str(tmp / "cases"), "-P", str(tmp / "plain.j2"), "-P", str(tmp / "terse.j2"), "--runs", "2",
                   "--results", str(tmp / "results"), "--report", str(out["report.json"]), "--junit", str(out["junit.xml"]),
                   "--html", str(out["page.html"]), "--summary-md", str(out["summary.md"]), "--output", "json")
    assert done.returncode == 1, done.stderr  # the agent broke a gate (the setup error is not its doing)
    folder = Path(json.loads(done.stdout)["results"])
    return {"folder": folder, "cases": tmp / "cases", "stdout": done.stdout, "stderr": done.stderr, **out}


def _reference(folder: Path, cases: Path) -> tuple[dict[str, Any], list[RunRecord], Aggregate, list[Gate]]:
    """The whole report document of ``folder``, made from every record in memory at once, as before."""
    records = read_results(folder).records
    written = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    model = aggregate(records)
    gates = evaluate(model.cells, {c.full_id: c.min_pass_rate for c in load_cases([cases])})
    meta = {key: written[key] for key in ("run_id", "results", "started", "finished")}
    return report_document(model, gates, records, exit_code(gates), meta), records, model, gates


def test_run_writes_every_output_as_the_whole_document_would(suite: dict[str, Any]) -> None:
    document, records, model, gates = _reference(suite["folder"], suite["cases"])
    assert len(records) == 12 and {r.status for r in records} == {Status.PASS, Status.FAIL, Status.ERROR}
    text = to_json(document)
    assert (suite["folder"] / "report.json").read_text(encoding="utf-8") == text
    assert suite["report.json"].read_text(encoding="utf-8") == text
    assert suite["stdout"] == ascii_json(text)
    assert suite["junit.xml"].read_text(encoding="utf-8") == _whole_tree_junit(model, gates, records, document["started"])
    assert suite["page.html"].read_text(encoding="ascii") == html_page(document, records)
    assert suite["summary.md"].read_text(encoding="utf-8") == summary_markdown(document)


def test_report_prints_and_writes_what_the_whole_document_would(suite: dict[str, Any], tmp_path: Path) -> None:
    folder = suite["folder"]
    document, records, model, gates = _reference(folder, suite["cases"])
    done = run_cli("report", str(folder), "--html", str(tmp_path / "page.html"), "--summary-md", str(tmp_path / "s.md"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == _printed(lambda console: _print_whole(console, records, model, gates))
    assert (tmp_path / "page.html").read_text(encoding="ascii") == html_page(document, records)
    assert (tmp_path / "s.md").read_text(encoding="utf-8") == summary_markdown(document)
    as_json = run_cli("report", str(folder), "--output", "json")
    assert as_json.stdout == json.dumps(document, indent=2, default=str) + "\n"


def test_no_record_stays_in_memory_once_the_matrix_is_done(suite: dict[str, Any], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    alive: dict[str, int] = {}

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            gc.collect()
            alive[name] = sum(isinstance(o, RunRecord) and o.case.startswith("streamed/") for o in gc.get_objects())
            return real(*args, **kwargs)
        return counted

    monkeypatch.setattr(runner.suite.request, "conclude", counting("run", runner.suite.request.conclude))
    monkeypatch.setattr(runner.cli.report, "aggregate", counting("report", runner.cli.report.aggregate))
    done = run_cli("run", str(suite["cases"]), "--runs", "3", "--results", str(tmp_path), "-q")
    assert done.returncode == 1, done.stderr
    assert run_cli("report", str(suite["folder"])).returncode == 0
    assert alive == {"run": 0, "report": 0}


# Run records of every shape the aggregation reads: statuses, error kinds, scores, tokens, judges, sandboxes.
_TEXT = st.text(max_size=12)
_TOKENS = st.builds(Tokens, *(st.none() | st.integers(0, 10**6) for _ in range(6)), st.integers(0, 3))
_RECORDS = st.lists(st.builds(
    RunRecord,
    case=st.sampled_from(["g/a", "g/b", "h/c"]), provider=st.sampled_from(["scripted", "m/x"]), prompt=st.just("p"),
    run=st.integers(1, 3), status=st.sampled_from(list(Status)), cause=st.none() | _TEXT,
    error_kind=st.none() | st.sampled_from(list(ErrorKind)), tokens=_TOKENS, cost=st.none() | st.floats(0, 5),
    duration=st.floats(0, 100), outcome=st.none() | st.floats(0, 1), process=st.none() | st.floats(0, 1),
    accuracy=st.none() | st.sampled_from([0, 1]), redundant=st.integers(0, 3), errors=st.integers(0, 3),
    failure=st.none() | st.sampled_from(list(FailureCause)), final_reply=st.text(max_size=20),
    sandbox=st.none() | st.builds(Confinement, st.sampled_from(["bwrap", "none"]), st.booleans(), _TEXT),
    checks=st.lists(st.builds(CheckResult, st.sampled_from(["verify", "judge"]), st.booleans(), st.text(max_size=20)),
                    max_size=3),
    steps=st.lists(st.builds(Step, turn=st.just(0), call_id=_TEXT, name=_TEXT,
                             arguments=st.none() | st.dictionaries(_TEXT, _TEXT, max_size=2), result=st.text(max_size=30),
                             is_error=st.booleans(), duration=st.floats(0, 9)), max_size=3),
    prompt_overridden=st.booleans(), truncated_reply=st.booleans(), queued=st.floats(0, 9), rate_limited=st.floats(0, 9),
), max_size=8)


@settings(max_examples=60, deadline=None)
@given(_RECORDS)
def test_summaries_aggregate_as_records_and_the_report_text_is_the_whole_documents(records: list[RunRecord]) -> None:
    summaries = [summarize(r) for r in records]
    assert all(isinstance(s, RunSummary) for s in summaries)
    model = aggregate(records)
    assert aggregate(summaries) == model
    gates = evaluate(model.cells, {})
    meta = {"run_id": "x", "results": "r", "started": None, "finished": None}
    whole = report_document(model, gates, records, exit_code(gates), meta)
    head = report_head(aggregate(summaries), gates, summaries, exit_code(gates), meta)
    assert "".join(report_text(head, map(run_item, records))) == to_json(whole)
    assert junit_xml(model, gates, records, "2025-01-01T00:00:00Z") == _whole_tree_junit(model, gates, records,
                                                                                       "2025-01-01T00:00:00Z")


def _printed(show: Callable[[Any], None]) -> str:
    buffer = io.StringIO()
    show(make_console(buffer))
    return buffer.getvalue()


def _print_whole(console: Any, records: Sequence[RunRecord], model: Aggregate, gates: Sequence[Gate]) -> None:
    printer = RunPrinter(console, len(model.arms) > 1, any(r.run > 1 for r in records))
    for record in records:
        printer.record(record)
    printer.totals(records)
    print_summary(console, model)
    print_statistics(console, model, gates)


def _whole_tree_junit(model: Aggregate, gates: Sequence[Gate], records: Sequence[RunRecord], timestamp: str) -> str:
    """JUnit as one ElementTree of every run, indented and written at once: how tooltrial wrote it
    before it wrote a testcase at a time (runner.output.junit)."""
    gate_of = {(g.case, g.arm): g for g in gates}
    root = ET.Element("testsuites", name="tooltrial")
    for arm in model.arms:
        runs = [r for r in records if r.arm == arm.label]
        suite = ET.SubElement(root, "testsuite", name=arm.label, timestamp=timestamp.removesuffix("Z"))
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", name="provider", value=arm.provider)
        ET.SubElement(properties, "property", name="prompt", value=arm.prompt)
        if runs[0].sandbox is not None:
            used = runs[0].sandbox
            ET.SubElement(properties, "property", name="sandbox", value=f"{used.mode}: {used.note}" if used.note else used.mode)
        for cell in (c for c in model.cells if c.arm == arm.label):
            cell_runs = [r for r in runs if r.case == cell.case]
            gate = gate_of[(cell.case, cell.arm)]
            group, _, case_id = cell.case.partition("/")
            name = f"{case_id} [{cell.arm}]" if len(model.arms) > 1 else case_id
            case = ET.SubElement(suite, "testcase", classname=group, name=name, time=f"{cell.figures.duration_total:.3f}")
            rate = f"{cell.figures.passed}/{cell.figures.runs} runs passed (needs {gate.threshold:.0%})"
            if gate.broken_by is Blame.AGENT:
                failure = ET.SubElement(case, "failure", message=rate, type=Status.FAIL)
                failure.text = "\n".join(_failure_lines(r) for r in cell_runs if r.status in (FAIL, ERROR))
            elif gate.broken_by is not None:
                first = next(r for r in cell_runs if r.status == ERROR)
                error = ET.SubElement(case, "error", message=f"{rate}: {first_line(first.cause, 'error')}",
                                      type=first.error_kind or "error")
                error.text = "\n".join(_failure_lines(r) for r in cell_runs if r.status == ERROR)
            ET.SubElement(case, "system-out").text = "\n".join(f"run {r.run}: {r.status} ({r.duration:.2f}s)" for r in cell_runs)
        _count(suite, arm.figures.duration_total)
    _count(root, model.overall.duration_total)
    for element in root.iter():
        element.text = None if element.text is None else printable(element.text)
        element.attrib = {name: printable(value) for name, value in element.attrib.items()}
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _failure_lines(record: RunRecord) -> str:
    head = f"run {record.run}: {record.status.upper()}"
    if record.status == ERROR:
        return f"{head}: {record.cause or record.error_kind}"
    return "\n".join([head, *(f"  {c.message}" for c in record.failed_checks)])


def _count(element: ET.Element, seconds: float) -> None:
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    element.set("errors", str(sum(c.find("error") is not None for c in cases)))
    element.set("time", f"{seconds:.3f}")


def test_report_json_is_read_up_to_its_runs_a_cell_at_a_time_with_the_whole_files_errors(
        suite: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(suite["folder"], folder)
    path = folder / "report.json"
    whole = json.loads(path.read_text(encoding="utf-8"))
    head = read_report_head(path)
    assert head == {**whole, "runs": [], "cells": [{"case": c["case"], "gate": c["gate"]} for c in whole["cells"]]}
    path.write_text(json.dumps(whole), encoding="utf-8")  # not as tooltrial writes it: read whole
    assert read_report_head(path) == {**head, "runs": whole["runs"], "cells": whole["cells"]}
    whole["cells"][1]["runs"] = "two"
    path.write_text(to_json(whole), encoding="utf-8")
    with pytest.raises(UserError) as caught:
        read_report_head(path)
    with pytest.raises(UserError) as expected:
        read_results(folder)
    assert caught.value.render() == expected.value.render()
    assert caught.value.render() == f"{path}: cells[1].runs: expected an integer, got a string (not a file this " \
                                    "tooltrial wrote as it is: restore it, or move it out of the results folder)"


def test_report_json_read_in_pieces_of_any_size_finds_its_runs_key_where_a_piece_ends(
        suite: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    path = suite["folder"] / "report.json"
    text = path.read_text(encoding="utf-8")
    whole = json.loads(text)
    expected = {**whole, "runs": [], "cells": [{"case": c["case"], "gate": c["gate"]} for c in whole["cells"]]}
    key = '\n  "runs": '
    at = text.find(key)
    for piece in sorted({1, 2, 5, 64, at - 3, at, at + 1, at + len(key) - 1, len(text) + 1}):
        monkeypatch.setattr(scan, "_PIECE", piece)
        assert read_report_head(path) == expected, piece


def test_summaries_of_runs_read_back_share_their_fingerprints_and_keep_them_equal(suite: dict[str, Any]) -> None:
    files = sorted((suite["folder"] / "runs").glob("*.json"))
    first, second = (read_run(path) for path in files[:2])  # a case's two runs: the same inputs, read apart
    assert first.provenance is not None and second.provenance is not None
    assert first.provenance.prompt is not second.provenance.prompt  # each file read gives its own copies
    one, two = summarize(first).provenance, summarize(second).provenance
    assert (one, two) == (first.provenance, second.provenance)
    assert one is not None and two is not None
    assert one.prompt is two.prompt and one.tools is two.tools and one.case_parts["user"] is two.case_parts["user"]


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6) | st.sampled_from(["</script>", "a&b", "é"])
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats() | _TEXT,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=24)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["arms", "cells", "overall", "paired"]), _JSON))
def test_the_html_summary_written_a_piece_at_a_time_is_the_same_text_as_encoded_whole(summary: dict[str, Any]) -> None:
    assert "".join(embedded(summary, {"cells": 1, "arms": 4})) == embed_json(summary)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.dictionaries(_TEXT, _JSON, max_size=4), max_size=3), st.lists(_JSON, max_size=3))
def test_report_arms_written_a_key_at_a_time_are_the_same_text_as_encoded_whole(
        arms: list[dict[str, Any]], comparisons: list[Any]) -> None:
    head = {"schema_version": 2, "arms": arms, "comparisons": comparisons}
    assert "".join(report_text(head, ["{}"])) == to_json({**head, "runs": [{}]})
