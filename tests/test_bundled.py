"""The bundled suite: every case passes with its own script, and wrong behaviour is caught with its cause."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import RunRecord
from runner.sandbox.command import Sandbox
from runner.spec.case import Case
from runner.spec.discover import load_cases
from tests.helpers import BUNDLED_FILES, ROOT

CASES = {case.full_id: case for case in load_cases(BUNDLED_FILES)}


def _run(case: Case, script: list[dict[str, Any]] | None = None) -> RunRecord:
    if script is not None:
        case = dataclasses.replace(case, script=tuple(script))
    return execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(sandbox=Sandbox()))


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_bundled_case_passes_with_its_script_on_the_ideal_path(case_id: str) -> None:
    record = _run(CASES[case_id])
    assert record.status == "pass", record.cause or [c.message for c in record.failed_checks]
    assert record.failure is None
    assert record.accuracy in (1, None) and record.outcome in (1.0, None)


def test_every_group_of_the_issue_is_bundled_with_trace_expectations() -> None:
    groups = {case.group for case in CASES.values()}
    assert {"fs", "calc", "research"} <= groups
    for case in CASES.values():
        if case.group in ("fs", "calc"):
            trace = case.expect.trace
            assert trace is not None and trace.expected is not None and trace.minimal_calls is not None, case.full_id


def test_inventing_a_paywalled_posting_fails_on_outcome() -> None:
    case = CASES["research/paywalled-posting"]
    fetch = case.script[0]  # type: ignore[index]
    invented = {"content": "Requirements: 3 years of experience with PyTorch. Salary: $150,000."}
    record = _run(case, [fetch, invented])
    assert (record.status, record.failure, record.process) == ("fail", "good_process_bad_outcome", 1.0)
    # the reply fails response_matches and 3 of the 6 response_not_contains
    assert record.outcome == pytest.approx(3 / 7)


def test_answering_without_the_calculator_is_no_tools() -> None:
    record = _run(CASES["calc/arithmetic"], [{"content": "6 times 7 is 42."}])
    # doing nothing where the trace wants calls earns no process (before: 1/3, for avoiding tools by not calling any)
    assert (record.failure, record.outcome, record.process) == ("no_tools", 1.0, 0.0)


def test_the_long_way_round_lowers_the_process_score() -> None:
    calls = [
        {"tool_calls": [{"name": "calculate", "arguments": {"expression": "450 * 3"}}]},
        {"tool_calls": [{"name": "calculate", "arguments": {"expression": "450 * 3"}}]},
        {"tool_calls": [{"name": "convert", "arguments": {"value": 1350, "from": "g", "to": "kg"}}]},
        {"tool_calls": [{"name": "convert", "arguments": {"value": 1350, "from": "g", "to": "lb"}}]},
        {"content": "That is about 2.98 lb."},
    ]
    record = _run(CASES["calc/flour-pounds"], calls)
    assert (record.status, record.failure) == ("pass", None)
    assert (record.calls, record.redundant, record.errors, record.accuracy) == (4, 1, 1, 0)
    # must_include, order, args and max_calls all passed; efficiency min(4, 2) / max(4, 2)
    assert record.process == pytest.approx((1 + 1 + 1 + 1 + 2 / 4) / 5)


def test_the_fixed_list_names_each_bundled_file_and_no_test_reads_cases_as_a_folder() -> None:
    assert [path for path in BUNDLED_FILES if not path.is_file()] == []
    assert len(CASES) == 60  # robustness's six and robustness_injection's four cases with their clean twins among them
    # a user's own file in cases/ (the README's first case) must not change what these tests count
    folder_reads = re.compile(r"""\(ROOT / "cases"\)\.(?:glob|iterdir)|bundled\("cases"\)|\[ROOT / "cases"\]""")
    readers = [path.name for path in sorted((ROOT / "tests").glob("*.py"))
               if folder_reads.search(path.read_text(encoding="utf-8"))]
    assert readers == ["test_cases.py"]  # discovery's default source, compared with itself
