"""The common YAML syntax errors in words an author can act on: where the fault is and how to fix it.

ruamel's parser says what token it expected (``expected <block end>, but found '<block mapping
start>'``); most such errors in hand-written files are a line indented unlike its siblings, a key
without its colon, a quote or bracket left open. Each is recognised by ruamel's problem and context
texts (ruamel.yaml.parser and ruamel.yaml.scanner), and given a message at the place to change and
a fix; any other error keeps ruamel's own words.
"""

from __future__ import annotations

from dataclasses import dataclass

from ruamel.yaml.error import MarkedYAMLError

from runner.spec.yamlindent import candidate_columns


@dataclass(frozen=True)
class Explained:
    """A worded YAML error: its message, the 0-based (line, column) it is about, and the fix."""

    message: str
    at: tuple[int, int]
    hint: str


_CLOSERS = {"flow sequence": ("[", "]"), "flow mapping": ("{", "}")}


def explain(error: MarkedYAMLError, text: str) -> Explained | None:
    """``error`` raised parsing ``text`` worded for its author; None for an error of another kind."""
    problem, context = str(error.problem or ""), str(error.context or "")
    mark, opened = error.problem_mark, error.context_mark
    if mark is None:
        return None
    here = (mark.line, mark.column)
    if problem.startswith("expected <block end>") and opened is not None:
        item = "<block sequence start>" in problem
        columns = candidate_columns(text, mark.line, mark.column, item) or (opened.column,)
        hint = f"indent this line like its siblings at column {columns[0] + 1}"
        if len(columns) > 1:
            hint += f", or like its parent's at column {columns[1] + 1}"
        return Explained("invalid YAML: this line is indented unlike the lines around it", here, hint)
    if problem == "mapping values are not allowed here":
        lines = text.splitlines()
        sibling = next((c for c in map(_key_start, reversed(lines[: mark.line])) if c is not None), None)
        moved = sibling is not None and mark.line < len(lines) and _key_start(lines[mark.line]) != sibling
        fix = (f"indent this line like its siblings at column {sibling + 1}, or "
               if moved and sibling is not None else "")
        return Explained("invalid YAML: a ':' where no key can start", here, f"{fix}put a value that holds ': ' in quotes")
    if problem == "could not find expected ':'" and opened is not None:
        return Explained("invalid YAML: a key without its ':'", (opened.line, opened.column),
                         "write 'key: value', with ': ' after the key, or quote the text if it is no key")
    if context.startswith("while scanning a quoted scalar") and opened is not None:
        index = opened.index
        quote = text[index] if 0 <= index < len(text) and text[index] in "'\"" else '"'
        return Explained(f"invalid YAML: the quote {quote!r} opened here is never closed", (opened.line, opened.column),
                         f"end the text with {quote!r}, or write it without quotes")
    for kind, (start, end) in _CLOSERS.items():
        if context.startswith(f"while parsing a {kind}") and opened is not None and problem.startswith("expected ','"):
            hint = f"close it with {end!r} before line {mark.line + 1}, column {mark.column + 1}, and separate its items with ', '"
            return Explained(f"invalid YAML: {start!r} is not closed", (opened.line, opened.column), hint)
    return None


def _key_start(line: str) -> int | None:
    """The 0-based column of the key ``line`` starts with (after any ``- ``); None for a blank or
    comment line or one with no ':'."""
    body = line.lstrip(" ")
    if not body or body.startswith("#") or ":" not in body:
        return None
    while body.startswith("- "):
        body = body[2:].lstrip(" ")
    return len(line) - len(body)
