"""The bundled suite is big enough, covers every group, and no case passes when the model does nothing.

A case that a single "Done." reply could pass would not be measuring anything
(tests/test_bundled.py checks that each case passes with its own script).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import pytest

from runner.cases import Case, load_cases
from runner.engine import Arm, RunOptions, execute
from runner.prompts import load_prompt
from runner.providers import resolve_provider
from runner.record import PASS, RunRecord
from runner.resources import bundled
from runner.sandbox import Sandbox

CASES = load_cases([bundled("cases")])
GROUPS = ("build", "builtin", "fix", "fs", "general", "git", "refactor", "search", "tests")


def run_all(cases: list[Case]) -> dict[str, RunRecord]:
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    with ThreadPoolExecutor(max_workers=8) as pool:
        records = pool.map(lambda case: execute(case, arm, RunOptions(Sandbox())), cases)
    return {record.case: record for record in records}


def test_the_suite_is_big_enough_and_covers_every_group() -> None:
    assert len(CASES) >= 35
    assert set(GROUPS) <= {case.group for case in CASES}
    coding = [case for case in CASES if case.group in ("build", "fix", "search", "git", "refactor", "tests")]
    assert len(coding) >= 12


@pytest.mark.parametrize("group", sorted({case.group for case in CASES}))
def test_no_bundled_case_passes_when_the_model_does_nothing(group: str) -> None:
    lazy = [dataclasses.replace(case, script=({"content": "Done."},)) for case in CASES if case.group == group]
    assert [full_id for full_id, r in run_all(lazy).items() if r.status == PASS] == []
