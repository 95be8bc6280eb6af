"""JUnit XML parsed strictly: structure, counts, and the content CI consumers show."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from runner.output.junit import junit_xml
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate
from tests.records import matrix, runs

ALLOWED = {  # element -> (attributes it may have, children it may have), after Jenkins' junit-10.xsd
    "testsuites": ({"name", "tests", "failures", "errors", "time"}, {"testsuite"}),
    "testsuite": ({"name", "timestamp", "tests", "failures", "errors", "time"}, {"properties", "testcase"}),
    "properties": (set(), {"property"}),
    "property": ({"name", "value"}, set()),
    "testcase": ({"classname", "name", "time"}, {"failure", "error", "system-out"}),
    "failure": ({"message", "type"}, set()),
    "error": ({"message", "type"}, set()),
    "system-out": (set(), set()),
}


def _parse(records, min_pass_rate=None) -> ET.Element:
    model = aggregate(records)
    text = junit_xml(model, evaluate(model.cells, {}, min_pass_rate), records, "2025-03-14T09:26:53Z")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    root = ET.fromstring(text.encode("utf-8"))
    for element in root.iter():
        attributes, children = ALLOWED[element.tag]
        assert set(element.attrib) <= attributes, element.tag
        assert {child.tag for child in element} <= children, element.tag
        if element.tag == "testcase":
            assert len(element.findall("failure")) + len(element.findall("error")) <= 1
            tags = [child.tag for child in element]
            assert tags == sorted(tags, key=["failure", "error", "system-out"].index)  # schema order
    return root


def test_one_testcase_per_case_and_arm_with_counts() -> None:
    records = matrix({("g/a", "x"): "PP", ("g/b", "x"): "PF", ("g/a", "y"): "PE", ("g/b", "y"): "PP"})
    root = _parse(records)
    assert root.attrib == {"name": "tooltrial", "tests": "4", "failures": "1", "errors": "1", "time": "0.000"}
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["scripted · x", "scripted · y"]
    assert suites[0].get("timestamp") == "2025-03-14T09:26:53"  # the schema's dateTime has no zone
    assert [(p.get("name"), p.get("value")) for p in suites[0].iter("property")] == [("provider", "scripted"), ("prompt", "x")]
    cases = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    assert cases == [("g", "a [scripted · x]"), ("g", "b [scripted · x]"), ("g", "a [scripted · y]"), ("g", "b [scripted · y]")]


def test_failure_carries_the_failed_check_lines() -> None:
    root = _parse(runs("g/b", "PFT"))
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "b"  # one arm: no arm label
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == "1/3 runs passed (needs 100%)"
    assert failure.text == (
        "run 2: FAIL\n  verify failed (exit 1): test -f out.txt\n"
        "run 3: ERROR: model unreachable"
    )
    assert case.findtext("system-out") == "run 1: pass (0.00s)\nrun 2: fail (0.00s)\nrun 3: error (0.00s)"


def test_infrastructure_error_is_an_error_with_its_cause() -> None:
    error = _parse(runs("g/a", "PE")).find("testsuite/testcase/error")
    assert error is not None
    assert error.get("type") == "provider_error"
    assert error.get("message") == "1/2 runs passed (needs 100%): model unreachable"


def test_gate_that_holds_is_a_pass() -> None:
    case = _parse(runs("g/a", "PPPPF"), min_pass_rate=0.8).find("testsuite/testcase")
    assert case is not None and case.find("failure") is None and case.find("error") is None
