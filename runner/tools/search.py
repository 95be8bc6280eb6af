"""Search tools: glob (files by name pattern) and grep (lines by regex). Results are workspace-relative.

Both walk the workspace once (runner.tools.walk: at most MAX_ENTRIES folder
entries, stopped by the run's deadline and Ctrl-C). glob matches each path
folder by folder against the pattern's segments, keeping the set of segments
reached (a small NFA, repeated ``**`` collapsed), so its cost is linear in the
tree whatever the pattern; pathlib's own glob is exponential in repeated ``**``.
A segment matches as ``fnmatch`` says (``*``, ``?``, ``[...]``, case-sensitive,
dot files included); ``**`` alone as a segment matches any number of folders.

grep compiles the model's pattern with the ``regex`` package (Python's ``re`` syntax)
because its searches can be stopped: a pattern that backtracks without end makes
the call an error result instead of stalling the run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Any

import regex

from runner.patterns import quoted
from runner.tools.base import ToolContext, ToolError
from runner.tools.files import (
    is_binary,
    open_file,
    read_bytes,
    split_lines,
)
from runner.tools.paths import resolve_inside
from runner.tools.walk import MAX_RESULTS, Walk, capped, inside, is_folder

GREP_TIMEOUT = 5.0  # seconds one grep call may take, matching lines included
_STAR = "**"


def segments(pattern: str) -> tuple[str, ...]:
    """The segments of a glob ``pattern``: ``.`` and empty ones left out, repeated ``**`` made one.

    Raises ToolError for an absolute pattern, ``..``, or a pattern with no segment.
    """
    if pattern.startswith("/"):
        raise ToolError(f"invalid pattern {pattern!r}: it must be relative to the path")
    kept: list[str] = []
    for part in pattern.split("/"):
        if part == "..":
            raise ToolError("pattern must not contain '..'")
        if part not in ("", ".") and not (part == _STAR and kept[-1:] == [_STAR]):
            kept.append(part)
    if not kept:
        raise ToolError(f"invalid pattern {pattern!r}: it names no file")
    return tuple(kept)


class GlobMatcher:
    """Matches paths, one name at a time, against a pattern's ``segments``.

    A state is the set of segment indexes a path prefix may have reached; ``len(segments)``
    means all of them. Every step costs at most one ``fnmatch`` per segment.
    """

    def __init__(self, parts: tuple[str, ...]) -> None:
        self.parts = parts
        self.end = len(parts)
        self.start = self._closure({0})

    def _closure(self, states: set[int]) -> frozenset[int]:
        """``states`` plus the index after each ``**`` reached (it may match no folder)."""
        for index in sorted(states):
            while index < self.end and self.parts[index] == _STAR:
                index += 1
                states.add(index)
        return frozenset(states)

    def folder(self, states: frozenset[int], name: str) -> frozenset[int]:
        """The states after entering folder ``name``; empty when nothing below it can match."""
        reached: set[int] = set()
        for index in states:
            if index == self.end:
                continue
            part = self.parts[index]
            if part == _STAR:
                reached.add(index)
            elif fnmatchcase(name, part):
                reached.add(index + 1)
        return frozenset(i for i in self._closure(reached) if i < self.end)

    def file(self, states: frozenset[int], name: str) -> bool:
        """Whether a file ``name`` in a folder at ``states`` matches the whole pattern."""
        return any(i == self.end - 1 and self.parts[i] != _STAR and fnmatchcase(name, self.parts[i]) for i in states)


def glob(arguments: dict[str, Any], context: ToolContext) -> str:
    """The ``glob`` tool: the files under ``path`` whose path matches ``pattern``, sorted; raises ToolError."""
    pattern = arguments["pattern"]
    matcher = GlobMatcher(segments(pattern))
    root = context.workspace.resolve()
    base = resolve_inside(context.workspace, arguments.get("path", "."))
    if not base.is_dir():
        raise ToolError(f"directory not found: {arguments.get('path', '.')}")
    walk = Walk(context)
    found: list[str] = []
    pending = [(base, matcher.start)]
    while pending and not walk.capped:
        folder, states = pending.pop()
        for entry in walk.entries(folder):
            path = Path(entry.path)
            if is_folder(entry):
                inner = matcher.folder(states, entry.name)
                if inner:
                    pending.append((path, inner))
            elif matcher.file(states, entry.name) and path.is_file() and inside(root, path):
                found.append(path.relative_to(root).as_posix())
    found.sort()
    note = walk.note()
    if not found:
        return f"no files match {pattern}" + (f" {note}" if note else "")
    return capped(found, "files", "narrow the pattern") + (f"\n{note}" if note else "")


def _files(root: Path, start: Path, walk: Walk) -> Iterator[Path]:
    """Regular files under ``start`` (or ``start`` itself), sorted, skipping .git and links leading out."""
    if start.is_file():
        yield start
        return
    pending = [start]
    while pending and not walk.capped:
        folder = pending.pop()
        entries = walk.entries(folder)
        pending.extend(Path(entry.path) for entry in reversed(entries) if is_folder(entry))
        for entry in entries:
            path = Path(entry.path)
            if not is_folder(entry) and path.is_file() and inside(root, path):
                yield path


def _text(path: Path, context: ToolContext, shown: str) -> str | None:
    """The text of a file grep searches, or None for one it skips (binary, over 10 MB, linked, odd)."""
    try:
        fd = open_file(context.workspace, path, shown)
    except ToolError:
        return None
    try:
        data = read_bytes(fd, shown)
    except ToolError:
        return None
    finally:
        os.close(fd)
    return None if is_binary(data) else data.decode("utf-8", errors="replace")


def _too_long(where: str) -> ToolError:
    return ToolError(f"pattern took longer than {GREP_TIMEOUT:g} s (stopped in {where}); "
                     "simplify it or narrow the path or glob")


def grep(arguments: dict[str, Any], context: ToolContext) -> str:
    """Matching lines as ``file:line:text``; raises ToolError for a bad pattern or path, when the
    search takes longer than GREP_TIMEOUT seconds, or when the run's time is up first."""
    try:
        pattern = regex.compile(arguments["pattern"])
    except regex.error as e:
        raise ToolError(f"invalid regex {quoted(arguments['pattern'])}: {e}") from e
    deadline = time.monotonic() + GREP_TIMEOUT
    if context.deadline is not None:
        deadline = min(deadline, context.deadline)
    root = context.workspace.resolve()
    shown = arguments.get("path", ".")
    start = resolve_inside(context.workspace, shown)
    if not start.exists():
        raise ToolError(f"path not found: {shown}")
    file_glob = arguments.get("glob")
    walk = Walk(context)
    hits: list[str] = []
    count = 0
    for path in _files(root, start, walk):
        relative = path.relative_to(root).as_posix()
        if file_glob and not PurePosixPath(relative).match(file_glob):
            continue
        if time.monotonic() >= deadline:
            context.check_stop()  # the run's end came first: say so
            raise _too_long(relative)
        text = _text(path, context, relative)
        for number, line in enumerate(split_lines(text or ""), start=1):
            try:
                context.check_stop()
                found = pattern.search(line, timeout=max(0.0, deadline - time.monotonic()), concurrent=True)
            except TimeoutError:
                context.check_stop()
                raise _too_long(f"{relative} at line {number}") from None
            if found:
                count += 1
                if len(hits) < MAX_RESULTS:
                    hits.append(f"{relative}:{number}:{line}")
    note = walk.note()
    if not count:
        return "no matches" + (f" {note}" if note else "")
    return capped(hits, "matches", "narrow the pattern, path or glob", count) + (f"\n{note}" if note else "")
