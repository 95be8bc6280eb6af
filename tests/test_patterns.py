"""Case patterns that take too long: the check cannot be made, the run goes on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from runner import patterns
from runner.checks.base import CheckContext
from runner.checks.outcome import check_files, check_response_matches
from runner.kinds import ErrorKind
from runner.run.trajectory import Trajectory
from runner.spec.expect import expect_of
from runner.spec.matchers import value_mismatch
from tests.helpers import make_case

SLOW = r"(a+)+$"  # backtracks exponentially on a run of a's that ends otherwise
LONG = "a" * 5000 + "b"


@pytest.fixture(autouse=True)
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "PATTERN_TIMEOUT", 0.1)


def _context(tmp_path: Path, reply: str) -> CheckContext:
    return CheckContext(make_case(), tmp_path, Trajectory(replies=[reply]), lambda command: None)  # type: ignore[arg-type]


def test_a_slow_search_raises_timeout_error_soon() -> None:
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        patterns.pattern_found(SLOW, LONG)
    assert time.monotonic() - started < 2
    assert patterns.pattern_found(r"\Aa+b\z", LONG)


def test_a_slow_response_pattern_is_a_check_that_could_not_be_made(tmp_path: Path) -> None:
    [slow, fine] = check_response_matches([SLOW, "b$"], _context(tmp_path, LONG))
    assert (slow.passed, slow.error_kind) == (False, ErrorKind.PATTERN_TIMEOUT)
    assert slow.message == f"response: /{SLOW}/ took longer than 0.1 s to search; simplify the pattern"
    assert fine.passed and fine.error_kind is None


def test_a_slow_file_pattern_is_a_check_that_could_not_be_made(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text(LONG)
    [result] = check_files(expect_of({"files": {"out.txt": {"matches": [SLOW]}}}).files, _context(tmp_path, ""))
    assert (result.passed, result.error_kind) == (False, ErrorKind.PATTERN_TIMEOUT)
    assert result.message.startswith(f"out.txt: /{SLOW}/ took longer than 0.1 s")


def test_a_slow_argument_pattern_is_a_mismatch_saying_so() -> None:
    reason = value_mismatch({"matches": SLOW}, LONG, where="path")
    assert reason == f"path: /{SLOW}/ took longer than 0.1 s to search; simplify the pattern"


def test_a_pattern_is_quoted_as_written_and_in_python_s_notation_only_when_it_must_be() -> None:
    assert patterns.quoted(r"(?<!\d)x\z") == r"'(?<!\d)x\z'"
    assert patterns.quoted("it's") == "\"it's\""
    assert patterns.quoted("it's \"x\"") == "'it\\'s \"x\"'"
    assert patterns.quoted("a\nb") == "'a\\nb'"
