"""JUnit XML for CI (``--junit FILE``): GitHub test reporters, GitLab, Jenkins.

Shape (valid against Jenkins' ``junit-10.xsd``, the format GitLab and GitHub reporters read)::

    <testsuites name="tooltrial" tests failures errors time>
      <testsuite name="<arm>" timestamp tests failures errors time>         one per arm
        <properties> provider, prompt, sandbox (mode, and why when not bwrap) </properties>
        <testcase classname="<group>" name="<id>" time>                     one per case
          <failure message type="fail">   the failed runs and their failed checks  (agent broke the gate)
          <error message type="<error kind>">   the cause                      (infrastructure broke it)
          <system-out> one line per run </system-out>

With several arms a testcase's name ends in `` [arm]`` so consumers that merge
suites keep them apart. Times are seconds; ``timestamp`` is UTC without a zone
suffix, as the schema wants. Every text and attribute goes through
runner.text.printable, so the file is well-formed XML 1.0 whatever a reply or a
command's output held (a control character reads ``\x1b``, a lone surrogate ``\ud800``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Sequence

from runner.run.record import ERROR, FAIL, RunRecord
from runner.kinds import Blame, Status
from runner.scoring.aggregate import Aggregate, Cell
from runner.scoring.gates import Gate
from runner.text import first_line, printable


def junit_xml(model: Aggregate, gates: Sequence[Gate], records: Sequence[RunRecord], timestamp: str) -> str:
    """The JUnit document of ``records`` from their aggregation ``model`` (runner.scoring.aggregate)
    and ``gates`` (runner.scoring.gates.evaluate): a testsuite per arm, a testcase per cell, each
    with its ``duration_total`` as time.

    ``timestamp`` is when the suite started, ISO 8601 in UTC (a trailing ``Z`` is dropped).
    """
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
            _testcase(suite, cell, gate_of[(cell.case, cell.arm)], cell_runs, len(model.arms) > 1)
        _count(suite, arm.figures.duration_total)
    _count(root, model.overall.duration_total)
    _printable(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(suite: ET.Element, cell: Cell, gate: Gate, runs: list[RunRecord], label_arm: bool) -> None:
    group, _, case_id = cell.case.partition("/")
    name = f"{case_id} [{cell.arm}]" if label_arm else case_id
    case = ET.SubElement(suite, "testcase", classname=group, name=name, time=_seconds(cell.figures.duration_total))
    rate = f"{cell.figures.passed}/{cell.figures.runs} runs passed (needs {gate.threshold:.0%})"
    if gate.broken_by is Blame.AGENT:
        failure = ET.SubElement(case, "failure", message=rate, type=Status.FAIL)
        failure.text = "\n".join(_failure_lines(r) for r in runs if r.status == FAIL or r.status == ERROR)
    elif gate.broken_by is not None:  # tooltrial, the case data or the infrastructure
        first = next(r for r in runs if r.status == ERROR)
        error = ET.SubElement(case, "error", message=f"{rate}: {first_line(first.cause, 'error')}", type=first.error_kind or "error")
        error.text = "\n".join(_failure_lines(r) for r in runs if r.status == ERROR)
    out = ET.SubElement(case, "system-out")
    out.text = "\n".join(f"run {r.run}: {r.status} ({r.duration:.2f}s)" for r in runs)


def _printable(root: ET.Element) -> None:
    """Escape, in place, every character of ``root``'s texts and attribute values that XML 1.0 cannot hold."""
    for element in root.iter():
        element.text = None if element.text is None else printable(element.text)
        element.attrib = {name: printable(value) for name, value in element.attrib.items()}


def _failure_lines(record: RunRecord) -> str:
    head = f"run {record.run}: {record.status.upper()}"
    if record.status == ERROR:
        return f"{head}: {record.cause or record.error_kind}"
    return "\n".join([head, *(f"  {c.message}" for c in record.failed_checks)])


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _count(element: ET.Element, seconds: float) -> None:
    """Set tests/failures/errors on a testsuite or testsuites from the testcases below it, and its
    ``seconds`` (the aggregation's ``duration_total``) as time."""
    cases = list(element.iter("testcase"))
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    element.set("errors", str(sum(c.find("error") is not None for c in cases)))
    element.set("time", _seconds(seconds))
