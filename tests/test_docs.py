"""The README's "Writing cases" examples: each validates, and those that need no model beyond their script pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.sandbox.command import Sandbox
from runner.spec.casefile import load_file, validate_file

README = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
SECTION = README.split("\n## Writing cases\n", 1)[1].split("\n## ", 1)[0]
EXAMPLES = {
    re.search(r"^- id: (\S+)", block, re.M).group(1): block  # type: ignore[union-attr]
    for block in re.findall(r"```yaml\n(.*?)```", SECTION, re.S)
    if block.startswith("- id: ")
}
RUN_OFFLINE = ("fix-average", "umbrella", "todo-then-tick")  # the judge example needs a judge model


def test_the_guide_shows_each_kind_of_case() -> None:
    assert list(EXAMPLES) == ["fix-average", "umbrella", "todo-then-tick", "summary-for-a-homeowner"]
    assert "# yaml-language-server: $schema=../schemas/case.schema.json" in SECTION


@pytest.mark.parametrize("case_id", list(EXAMPLES))
def test_each_example_validates(case_id: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.yml"
    path.write_text(EXAMPLES[case_id], encoding="utf-8")
    assert [error.render() for error in validate_file(path)] == []


@pytest.mark.parametrize("case_id", RUN_OFFLINE)
def test_example_passes_with_its_script(case_id: str, tmp_path: Path) -> None:
    path = tmp_path / "mine.yml"
    path.write_text(EXAMPLES[case_id], encoding="utf-8")
    (case,) = load_file(path)
    record = execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(Sandbox()))
    assert (record.status, record.cause, [c.message for c in record.failed_checks]) == ("pass", None, [])
