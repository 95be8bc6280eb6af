"""JUnit XML for CI (``--junit FILE``): GitHub test reporters, GitLab, Jenkins.

Shape (valid against Jenkins' ``junit-10.xsd``, the format GitLab and GitHub reporters read)::

    <testsuites name="tooltrial" tests failures errors time>
      <testsuite name="<arm>" timestamp tests failures errors time>         one per arm
        <properties> provider, prompt, tool_defs (with -T), sandbox (mode, and why when not bwrap) </properties>
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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from runner.kinds import Blame, Status
from runner.output.store import write_replace
from runner.run.record import ERROR, FAIL, RunRecord
from runner.sandbox.command import Confinement
from runner.scoring.aggregate import Aggregate, Cell
from runner.scoring.gates import Gate
from runner.text import first_line, printable

if TYPE_CHECKING:
    from runner.output.finish import Ending


def write_junit(path: Path, ending: Ending) -> None:
    """``--junit``: the JUnit XML of the finished runs, the records read back one at a time, stamped with the
    suite's start (the report's ``started``). Raises OSError when it cannot be written."""
    write_replace(path, junit_parts(ending.model, ending.gates, ending.runs.records(), ending.document["started"]))


def junit_xml(model: Aggregate, gates: Sequence[Gate], records: Iterable[RunRecord], timestamp: str) -> str:
    """The JUnit document of ``records`` from their aggregation ``model`` (runner.scoring.aggregate)
    and ``gates`` (runner.scoring.gates.evaluate): a testsuite per arm, a testcase per cell, each
    with its ``duration_total`` as time.

    ``timestamp`` is when the suite started, ISO 8601 in UTC (a trailing ``Z`` is dropped).
    """
    return "".join(junit_parts(model, gates, records, timestamp))


def junit_parts(model: Aggregate, gates: Sequence[Gate], records: Iterable[RunRecord], timestamp: str) -> Iterator[str]:
    """``junit_xml``'s text piece by piece, reading ``records`` once, one at a time, and keeping of each
    only its lines (``run N: pass (0.12s)``, and a failed run's failure lines where its gate broke);
    one testcase element is built at a time, so the text is that of the whole tree ``ElementTree``
    would write indented, for any number of runs."""
    gate_of = {(g.case, g.arm): g for g in gates}
    runs = _gather(records, gate_of)
    labelled = len(model.arms) > 1
    head = '<?xml version="1.0" encoding="UTF-8"?>\n'
    if not model.arms:  # an empty testsuites element, as ElementTree writes it
        yield head + _tag("testsuites", _counts([], gate_of, model.overall.duration_total, name="tooltrial"), empty=True) + "\n"
        return
    yield head + _tag("testsuites", _counts(model.cells, gate_of, model.overall.duration_total, name="tooltrial"))
    for arm in model.arms:
        cells = [c for c in model.cells if c.arm == arm.label]
        suite = _counts(cells, gate_of, arm.figures.duration_total, name=arm.label, timestamp=timestamp.removesuffix("Z"))
        yield "\n  " + _tag("testsuite", suite)
        properties = ET.Element("properties")
        ET.SubElement(properties, "property", name="provider", value=arm.provider)
        ET.SubElement(properties, "property", name="prompt", value=arm.prompt)
        if arm.tool_defs is not None:
            ET.SubElement(properties, "property", name="tool_defs", value=arm.tool_defs)
        used = runs.sandbox.get(arm.label)
        if used is not None:
            ET.SubElement(properties, "property", name="sandbox", value=f"{used.mode}: {used.note}" if used.note else used.mode)
        yield "\n    " + _element(properties)
        for cell in cells:
            key = (cell.case, cell.arm)
            yield "\n    " + _element(_testcase(cell, gate_of[key], runs.lines[key], runs.failed.get(key, []), labelled))
        yield "\n  </testsuite>"
    yield "\n</testsuites>\n"


@dataclass
class _Gathered:
    """What JUnit keeps of the runs, per cell (case, arm): ``lines`` (one per run), ``failed`` (each
    failed or errored run of a broken gate: whether it errored, its cause and kind, its failure lines);
    per arm the ``sandbox`` of its first run."""

    lines: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    failed: dict[tuple[str, str], list[tuple[bool, str, str, str]]] = field(default_factory=dict)
    sandbox: dict[str, Confinement | None] = field(default_factory=dict)


def _gather(records: Iterable[RunRecord], gate_of: dict[tuple[str, str], Gate]) -> _Gathered:
    runs = _Gathered()
    for r in records:
        key = (r.case, r.arm)
        runs.sandbox.setdefault(r.arm, r.sandbox)
        runs.lines.setdefault(key, []).append(f"run {r.run}: {r.status} ({r.duration:.2f}s)")
        gate = gate_of.get(key)
        if gate is not None and gate.broken_by is not None and (r.status == FAIL or r.status == ERROR):
            error = r.status == ERROR
            runs.failed.setdefault(key, []).append(
                (error, first_line(r.cause, "error") if error else "", (r.error_kind or "error") if error else "", _failure_lines(r)))
    return runs


def _testcase(cell: Cell, gate: Gate, lines: list[str], failed: list[tuple[bool, str, str, str]], label_arm: bool) -> ET.Element:
    group, _, case_id = cell.case.partition("/")
    name = f"{case_id} [{cell.arm}]" if label_arm else case_id
    case = ET.Element("testcase", classname=group, name=name, time=_seconds(cell.figures.duration_total))
    rate = f"{cell.figures.passed}/{cell.figures.runs} runs passed (needs {gate.threshold:.0%})"
    if gate.broken_by is Blame.AGENT:
        failure = ET.SubElement(case, "failure", message=rate, type=Status.FAIL)
        failure.text = "\n".join(text for _, _, _, text in failed)
    elif gate.broken_by is not None:  # tooltrial, the case data or the infrastructure
        errors = [one for one in failed if one[0]]
        _, cause, kind, _ = errors[0]
        error = ET.SubElement(case, "error", message=f"{rate}: {cause}", type=kind)
        error.text = "\n".join(text for _, _, _, text in errors)
    out = ET.SubElement(case, "system-out")
    out.text = "\n".join(lines)
    return case


def _counts(cells: Sequence[Cell], gate_of: dict[tuple[str, str], Gate], seconds: float, **first: str) -> dict[str, str]:
    """The attributes of a testsuite or testsuites: ``first`` (name...), then tests, failures, errors
    (testcases whose gate the agent broke; broken otherwise) and ``seconds`` (the aggregation's
    ``duration_total``) as time."""
    broken = [gate_of[(c.case, c.arm)].broken_by for c in cells]
    return {**first, "tests": str(len(cells)), "failures": str(sum(b is Blame.AGENT for b in broken)),
            "errors": str(sum(b is not None and b is not Blame.AGENT for b in broken)), "time": _seconds(seconds)}


def _tag(name: str, attributes: dict[str, str], empty: bool = False) -> str:
    """The start tag (or, ``empty``, the empty-element tag) ElementTree writes for ``name`` and ``attributes``."""
    text = _element(ET.Element(name, attributes))
    return text if empty else text.removesuffix(" />") + ">"


def _element(element: ET.Element) -> str:
    """``element`` as ElementTree writes it at depth 2 of the indented document, its texts made printable."""
    _printable(element)
    ET.indent(element, level=2)
    return ET.tostring(element, encoding="unicode")


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
