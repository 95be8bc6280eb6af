"""A case file with a problem, read again with positions for just the cases the problem lies in.

The fast path (runner.spec.fastyaml) keeps no positions, so a file with any error or warning is read
again by ruamel's round-trip parser, which is pure Python (an imported 4.7 MB file: about 40 s). When
every problem belongs to one case (checking that case alone under the file's defaults finds it again),
only those cases need positions: the text is read again with every other case's lines left blank, so
each line and column stays where it was and ruamel reads a few cases, not thousands.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from runner.errors import CaseFileError
from runner.spec.fastyaml import FastDoc

Check = Callable[[Any], list[CaseFileError]]  # a document's problems, as runner.spec.casefile.check_file finds them


def narrowed(text: str, doc: FastDoc, problems: list[CaseFileError], check: Check) -> str | None:
    """``text`` (the file ``doc`` was read from, with ``problems``) with the lines of each case that has
    none blanked; None when a problem belongs to no one case (a repeated id, the defaults, the file's
    shape), when two cases share a line, or when anything follows the ``cases`` list: then the whole
    file must be read with positions."""
    data = doc.data
    if isinstance(data, dict) and list(data)[-1:] == ["cases"] and isinstance(data["cases"], list):
        cases: list[Any] = data["cases"]

        def alone(case: Any) -> Any:
            return {**data, "cases": [case]}
    elif isinstance(data, list):
        cases = data

        def alone(case: Any) -> Any:
            return [case]
    else:
        return None
    if not all(isinstance(case, dict) for case in cases):
        return None
    starts = [doc.lines[id(case)] - 1 for case in cases]  # 0-based
    if any(later <= earlier for earlier, later in itertools.pairwise(starts)):
        return None
    found: set[str] = set()
    keep: set[int] = set()
    for index, case in enumerate(cases):
        if own := check(alone(case)):
            keep.add(index)
            found.update(problem.render() for problem in own)
    if found != {problem.render() for problem in problems}:
        return None
    lines = text.splitlines(keepends=True)
    for index, (start, end) in enumerate(zip(starts, [*starts[1:], len(lines)], strict=True)):
        if index not in keep:
            lines[start:end] = ["\n"] * (end - start)
    return "".join(lines)
