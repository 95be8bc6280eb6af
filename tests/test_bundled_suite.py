"""The bundled suite is big enough, covers every group, and no case passes without doing its task.

A case that a do-nothing or random-tool agent passes (the baseline guard of
``tooltrial validate --baseline``) would not be measuring anything;
tests/test_bundled.py checks that each case passes with its own script.
"""

from __future__ import annotations

import pytest

from runner.run.baselines import weak_cases
from runner.run.options import RunOptions
from runner.run.prompts import load_prompt
from runner.sandbox.command import Sandbox
from runner.spec.discover import load_cases
from tests.helpers import BUNDLED_FILES

CASES = load_cases(BUNDLED_FILES)
GROUPS = ("build", "builtin", "fix", "fs", "general", "git", "refactor", "search", "tests")


def test_the_suite_is_big_enough_and_covers_every_group() -> None:
    assert len(CASES) >= 35
    assert set(GROUPS) <= {case.group for case in CASES}
    coding = [case for case in CASES if case.group in ("build", "fix", "search", "git", "refactor", "tests")]
    assert len(coding) >= 12


@pytest.mark.parametrize("group", sorted({case.group for case in CASES}))
def test_no_bundled_case_passes_without_doing_its_task(group: str) -> None:
    chosen = [case for case in CASES if case.group == group]
    assert weak_cases(chosen, RunOptions(sandbox=Sandbox()), load_prompt(None)) == []
