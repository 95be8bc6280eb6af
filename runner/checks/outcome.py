"""Outcome checks: the workspace after the run and the final reply.

Every result's message says what was found, passed or failed alike: a passing one states what
satisfied the check (``response contains "split"``, ``out.txt is free of "TODO"``) and carries no
failure wording; a failing one what was found instead (``response missing "split"``).
"""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from runner.checks.base import CheckContext, CheckResult
from runner.kinds import ErrorKind
from runner.patterns import pattern_found, too_slow
from runner.spec.expect import FileExpect
from runner.tools.base import ToolError
from runner.tools.files import MAX_FILE_BYTES
from runner.tools.paths import resolve_inside

FILE_CHECK_LIMIT = MAX_FILE_BYTES  # bytes of a file expect.files reads; a larger one fails its content checks
DIFF_LIMIT = 200_000  # characters of expected and actual content past which a failed `equals` shows no diff


def check_verify(spec: Sequence[str], ctx: CheckContext) -> list[CheckResult]:
    results = []
    for command in spec:
        done = ctx.run_command(command)
        if done.timed_out:
            message = f"verify timed out after {done.duration:.0f}s: {command}"
        elif done.exit_code != 0:
            message = f"verify failed (exit {done.exit_code}): {command}"
        else:
            message = f"verify passed: {command}"
        results.append(CheckResult("verify", done.exit_code == 0 and not done.timed_out, message))
    return results


def check_files(spec: Mapping[str, FileExpect], ctx: CheckContext) -> list[CheckResult]:
    """Per path: ``files.exists`` (must exist: ``exists: true`` or any content rule),
    ``files.absent`` (``exists: false``), then ``files`` for each content rule of an existing file."""
    results: list[CheckResult] = []
    for name, rules in spec.items():
        try:
            path = resolve_inside(ctx.workspace, name)
        except ToolError as e:
            results.append(CheckResult("files", False, f"{name}: {e}"))
            continue
        exists = path.is_file()
        if rules.exists is False:
            results.append(CheckResult("files.absent", not exists, f"{name} exists" if exists else f"{name} is absent"))
        if rules.exists is True or (rules.content_rules and not exists):
            results.append(CheckResult("files.exists", exists, f"{name} exists" if exists else f"{name} does not exist"))
        if not rules.content_rules or not exists:
            continue
        try:
            text = _read(path, name)
        except ValueError as e:
            results.append(CheckResult("files", False, str(e)))
            continue
        results.extend(_content_checks(name, text, rules))
    return results


def _read(path: Path, name: str) -> str:
    """The text of the workspace file ``path`` (UTF-8, bad bytes replaced), read only when it is a
    regular file with one hard link and at most FILE_CHECK_LIMIT bytes; raises ValueError with the
    check's message."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # resolved already; a FIFO must not block
    except OSError as e:
        raise ValueError(f"{name} cannot be read: {e.strerror}") from e
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{name} is not a regular file")
        if info.st_nlink > 1:  # as for the file tools: its other names may lie outside the workspace
            raise ValueError(f"{name} has {info.st_nlink} hard links, and expect.files does not read a file "
                             "whose other names may lie outside the workspace")
        if info.st_size > FILE_CHECK_LIMIT:
            raise ValueError(f"{name} is {info.st_size} bytes, over the {FILE_CHECK_LIMIT} byte limit of "
                             "expect.files content checks; check it with expect.verify instead")
        return f.read(FILE_CHECK_LIMIT).decode("utf-8", errors="replace")


def _content_checks(name: str, text: str, rules: FileExpect) -> list[CheckResult]:
    results = []
    for needle in rules.contains or ():
        results.append(_contains("files", name, needle, text))
    for needle in rules.not_contains or ():
        results.append(_free_of("files", name, needle, text))
    for pattern in rules.matches or ():
        results.append(_match_check("files", pattern, text, name))
    if rules.equals is not None:
        expected = rules.equals
        ok = text == expected
        message = f"{name} equals the expected content" if ok else (
            f"{name} differs from the expected content" + _diff(expected, text))
        results.append(CheckResult("files", ok, message))
    return results


def _contains(check: str, where: str, needle: str, text: str) -> CheckResult:
    """Passes when ``needle`` is in ``text`` (``WHERE contains "x"``), else ``WHERE missing "x"``."""
    found = needle in text
    return CheckResult(check, found, f'{where} {"contains" if found else "missing"} "{needle}"')


def _free_of(check: str, where: str, needle: str, text: str) -> CheckResult:
    """Passes when ``needle`` is not in ``text`` (``WHERE is free of "x"``), else ``WHERE contains "x"``."""
    found = needle in text
    return CheckResult(check, not found, f'{where} {"contains" if found else "is free of"} "{needle}"')


def _diff(expected: str, actual: str, limit: int = 6) -> str:
    if len(expected) + len(actual) > DIFF_LIMIT:  # difflib's time grows faster than the texts
        return f" ({len(actual)} characters, {len(expected)} expected)"
    lines = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), "expected", "actual", lineterm="", n=0))
    shown = [line for line in lines[2:] if not line.startswith("@@")][:limit]
    return (": " + " | ".join(shown)) if shown else " (whitespace at the end differs)"


def check_response_contains(spec: Sequence[str], ctx: CheckContext) -> list[CheckResult]:
    reply = ctx.trajectory.final_reply
    return [_contains("response_contains", "response", s, reply) for s in spec]


def check_response_not_contains(spec: Sequence[str], ctx: CheckContext) -> list[CheckResult]:
    """Passes for each needle the final reply is free of. An empty reply (none, or only white space) fails
    every needle: a reply that says nothing is no answer that avoids them (``no reply to check for "x"``)."""
    reply = ctx.trajectory.final_reply
    if not reply.strip():
        return [CheckResult("response_not_contains", False, f'no reply to check for "{s}"') for s in spec]
    return [_free_of("response_not_contains", "response", s, reply) for s in spec]


def check_response_matches(spec: Sequence[str], ctx: CheckContext) -> list[CheckResult]:
    reply = ctx.trajectory.final_reply
    return [_match_check("response_matches", p, reply, "response") for p in spec]


def _match_check(check: str, pattern: str, text: str, where: str) -> CheckResult:
    """Whether ``pattern`` matches in ``text`` (``WHERE matches /p/``, else ``WHERE does not match /p/``);
    a search over its time limit is a check that could not be made (error kind ``pattern_timeout``),
    ``where`` naming the text searched."""
    try:
        found = pattern_found(pattern, text)
        return CheckResult(check, found, f"{where} {'matches' if found else 'does not match'} /{pattern}/")
    except TimeoutError:
        return CheckResult(check, False, f"{where}: {too_slow(pattern)}", error_kind=ErrorKind.PATTERN_TIMEOUT)
