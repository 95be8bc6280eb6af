"""Search tools: glob (files by name pattern) and grep (lines by regex). Results are workspace-relative.

grep compiles the model's pattern with the ``regex`` package (Python's ``re`` syntax)
because its searches can be stopped: a pattern that backtracks without end makes
the call an error result instead of stalling the run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

import regex

from runner.tools.base import Tool, ToolContext, ToolError
from runner.tools.files import MAX_FILE_BYTES, is_binary, object_schema, split_lines
from runner.tools.paths import resolve_inside

MAX_RESULTS = 500  # files for glob, matching lines for grep
GREP_TIMEOUT = 5.0  # seconds one grep call may take, matching lines included


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (symlinks followed) is inside ``root`` (resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (RuntimeError, OSError):  # a symlink loop
        return False


def _capped(lines: list[str], noun: str, hint: str) -> str:
    """``lines`` joined, at most MAX_RESULTS of them, with a note on how many were left out."""
    if len(lines) <= MAX_RESULTS:
        return "\n".join(lines)
    left = len(lines) - MAX_RESULTS
    return "\n".join([*lines[:MAX_RESULTS], f"[... {left} more {noun} not shown; {hint}]"])


def _glob(arguments: dict[str, Any], context: ToolContext) -> str:
    pattern = arguments["pattern"]
    root = context.workspace.resolve()
    base = resolve_inside(context.workspace, arguments.get("path", "."))
    if ".." in PurePosixPath(pattern).parts:
        raise ToolError("pattern must not contain '..'")
    if not base.is_dir():
        raise ToolError(f"directory not found: {arguments.get('path', '.')}")
    try:
        matches = list(base.glob(pattern))
    except ValueError as e:  # an empty or absolute pattern
        raise ToolError(f"invalid pattern {pattern!r}: {e}") from e
    found = sorted(
        {
            relative.as_posix()
            for match in matches
            if ".git" not in (relative := match.relative_to(root)).parts
            and match.is_file()
            and _inside(root, match)
        }
    )
    if not found:
        return f"no files match {pattern}"
    return _capped(found, "files", "narrow the pattern")


def _files(root: Path, start: Path) -> Iterator[Path]:
    """Regular files under ``start`` (or ``start`` itself), sorted, skipping .git and links leading out."""
    if start.is_file():
        yield start
        return
    for folder, dirs, names in os.walk(start):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(folder, name)
            if path.is_file() and _inside(root, path):
                yield path


def _grep(arguments: dict[str, Any], context: ToolContext) -> str:
    """Matching lines as ``file:line:text``; raises ToolError for a bad pattern or path, or
    when the search takes longer than GREP_TIMEOUT seconds."""
    try:
        pattern = regex.compile(arguments["pattern"])
    except regex.error as e:
        raise ToolError(f"invalid regex {arguments['pattern']!r}: {e}") from e
    deadline = time.monotonic() + GREP_TIMEOUT
    root = context.workspace.resolve()
    shown = arguments.get("path", ".")
    start = resolve_inside(context.workspace, shown)
    if not start.exists():
        raise ToolError(f"path not found: {shown}")
    file_glob = arguments.get("glob")
    hits: list[str] = []
    for path in _files(root, start):
        relative = path.relative_to(root).as_posix()
        if file_glob and not PurePosixPath(relative).match(file_glob):
            continue
        if path.stat().st_size > MAX_FILE_BYTES or is_binary(path):
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(split_lines(text), start=1):
            try:
                found = pattern.search(line, timeout=max(0.0, deadline - time.monotonic()), concurrent=True)
            except TimeoutError:
                raise ToolError(
                    f"pattern took longer than {GREP_TIMEOUT:g} s (stopped in {relative} at line {number}); "
                    "simplify it or narrow the path or glob"
                ) from None
            if found:
                hits.append(f"{relative}:{number}:{line}")
    if not hits:
        return "no matches"
    return _capped(hits, "matches", "narrow the pattern, path or glob")


GLOB = Tool(
    name="glob",
    description=(
        "Find files by name pattern (e.g. '*.md', '**/*.py' for any depth) under `path`. "
        "Returns workspace-relative paths, sorted."
    ),
    parameters=object_schema(
        {
            "pattern": {"type": "string", "minLength": 1, "description": "'**' matches any depth."},
            "path": {"type": "string", "description": "Directory to search in (default '.')."},
        },
        ["pattern"],
    ),
    run=_glob,
)

GREP = Tool(
    name="grep",
    description=(
        "Search file contents with a Python regular expression. Returns 'file:line:text' "
        "for every matching line, sorted by file then line; binary files are skipped."
    ),
    parameters=object_schema(
        {
            "pattern": {"type": "string", "description": "Python regular expression, searched in each line."},
            "path": {"type": "string", "description": "File or directory to search (default '.')."},
            "glob": {"type": "string", "description": "Only files whose path matches, e.g. '*.py'."},
        },
        ["pattern"],
    ),
    run=_grep,
)
