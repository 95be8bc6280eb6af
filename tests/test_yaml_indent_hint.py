"""A line indented unlike its siblings: the hint names the siblings' column, one space too few or
too many, at each nesting depth, and the parent's too where the line could belong to either."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import CaseFileError
from runner.spec.source import parse
from tests.helpers import run_cli

# The tutorial's case (docs/tutorial.md, cases/mine.yml): the case's keys at column 3, expect's at 5, trace's at 7.
TUTORIAL = """\
- id: count-todos
  description: Count the TODO comments in a small project.
  files:                                  # written into the empty workspace
    app.py: |
      def main():
          pass  # TODO: real work
    lib/util.py: |
      # TODO: remove once the new parser lands
      def helper():
          return 1  # TODO: handle None
  turns:
    - How many TODO comments are in this project? Reply with the number.
  expect:
    response_matches: ['(?<!\\d)3(?!\\d)']  # the reply says 3
    trace:
      must_include: [grep]                # searched rather than guessed
      avoid: [write_file, edit_file]      # a question is no reason to change files
      max_calls: 3
    max_turns: 5
  script:                                 # what the scripted provider replies, in order
    - tool_calls: [{name: grep, arguments: {pattern: TODO}}]
    - content: There are 3 TODO comments, in app.py and lib/util.py.
"""
UNLIKE = "invalid YAML: this line is indented unlike the lines around it"
NO_KEY = "invalid YAML: a ':' where no key can start"


def _moved(text: str, line: str, spaces: int) -> str:
    """``text`` with the line that starts ``line`` (after its indentation) indented ``spaces`` spaces."""
    old = next(raw for raw in text.splitlines() if raw.lstrip(" ").startswith(line))
    return text.replace(old + "\n", " " * spaces + old.lstrip(" ") + "\n", 1)


@pytest.mark.parametrize(
    ("line", "spaces", "error"),
    [
        ("script:", 1, "20:2: {} (indent this line like its siblings at column 3)"),
        ("script:", 3, "20:4: {} (indent this line like its siblings at column 3)"),
        ("expect:", 1, "13:2: {} (indent this line like its siblings at column 3)"),
        ("turns:", 3, "11:4: {} (indent this line like its siblings at column 3)"),
        ("trace:", 3, "15:4: {} (indent this line like its siblings at column 5)"),
        ("trace:", 5, "15:6: {} (indent this line like its siblings at column 5)"),
        ("lib/util.py", 5, "7:6: {} (indent this line like its siblings at column 5)"),
        ("max_calls: 3", 7, "18:8: {} (indent this line like its siblings at column 7)"),
        ("avoid:", 7, "17:8: {} (indent this line like its siblings at column 7)"),
        ("avoid:", 5, "17:6: {} (indent this line like its siblings at column 7)"),
        # the last line of its level: a key of expect.trace or of expect, either way
        ("max_calls: 3", 5, "18:6: {} (indent this line like its siblings at column 7, or like its parent's at column 5)"),
        ("max_turns", 3, "19:4: {} (indent this line like its siblings at column 5, or like its parent's at column 3)"),
        ("max_turns", 5, "19:6: {} (indent this line like its siblings at column 7, or like its parent's at column 5)"),
        ("- content", 3, "22:4: {} (indent this line like its siblings at column 5)"),
        ("- content", 5, "22:6: {} (indent this line like its siblings at column 5)"),
    ],
)
def test_the_hint_names_the_siblings_column_at_each_depth(line: str, spaces: int, error: str, tmp_path: Path) -> None:
    path = tmp_path / "cases" / "mine.yml"
    path.parent.mkdir()
    path.write_text(_moved(TUTORIAL, line, spaces), encoding="utf-8")
    done = run_cli("validate", "cases/mine.yml", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (4, "", f"error: cases/mine.yml:{error.format(UNLIKE)}\n")


def test_run_refuses_with_the_same_hint(tmp_path: Path) -> None:
    path = tmp_path / "mine.yml"
    path.write_text(_moved(TUTORIAL, "script:", 1), encoding="utf-8")
    done = run_cli("run", str(path), "--results", str(tmp_path / "results"))
    assert (done.returncode, done.stderr) == (4, f"error: {path}:20:2: {UNLIKE} (indent this line like its siblings at column 3)\n")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        # a key between a mapping's keys (column 5) and the sequence of case items (column 1): no key goes at column 1
        ("- id: a\n  turns: [x]\n  expect:\n    max_turns: 3\n script: []\n", "5:2: {} (indent this line like its siblings at column 3)"),
        # its children at the upper level's column: it belongs to the lower one
        ("defaults:\n  timeout: 3\n cases:\n  - id: a\n", "3:2: {} (indent this line like its siblings at column 1)"),
        # its keys at the upper level's column: they could be its children or its siblings
        ("a:\n  b:\n    c: 1\n   d:\n    e: 1\n",
         "4:4: {} (indent this line like its siblings at column 5, or like its parent's at column 3)"),
        # a later sibling at column 5: it belongs to the upper one, though its children are deeper
        ("a:\n  b:\n    c: 1\n   d:\n      e: 1\n    f: 2\n", "4:4: {} (indent this line like its siblings at column 5)"),
        # the same without the later sibling: either
        ("a:\n  b:\n    c: 1\n   d:\n      e: 1\n",
         "4:4: {} (indent this line like its siblings at column 5, or like its parent's at column 3)"),
        # a block scalar's text is no level; a '- ' item has only items for siblings
        ("a:\n  b: |\n      x: 1\n   c: 2\n", "4:4: {} (indent this line like its siblings at column 3)"),
        ("a:\n  - x\n  - y:\n      - z\n     - w\n", "5:6: {} (indent this line like its siblings at column 7)"),
        # a sequence written at its key's column takes a '- ' at that column
        ("a:\n  b:\n  - x:\n      y: 1\n   - z\n", "5:4: {} (indent this line like its siblings at column 3)"),
    ],
)
def test_the_hint_reads_the_levels_yaml_opened(text: str, error: str, tmp_path: Path) -> None:
    path = tmp_path / "y.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseFileError) as raised:
        parse(text, "y.yml")
    assert raised.value.render() == f"y.yml:{error.format(UNLIKE)}"


def _tree(leaves: int) -> st.SearchStrategy[list[str]]:
    """Lines of a block mapping under ``root:``, two spaces a level, of up to ``leaves`` values (a
    number, or a list of one to three ``- `` items), each key named by its line (k1, k2...) so that
    none is a duplicate wherever it moves."""
    leaf = st.one_of(st.just(["k: 1"]), st.integers(1, 3).map(lambda n: ["k:", *["  - x"] * n]))
    entry = st.recursive(leaf, lambda inner: st.lists(inner, min_size=1, max_size=3).map(
        lambda children: ["k:", *("  " + line for child in children for line in child)]), max_leaves=leaves)
    rooted = st.lists(entry, min_size=1, max_size=3).map(
        lambda entries: ["root:", *("  " + line for lines in entries for line in lines)])
    return rooted.map(lambda lines: [re.sub(r"\bk:", f"k{i}:", line) for i, line in enumerate(lines)])


_HINTED = re.compile(r"column (\d+)")


@settings(max_examples=300, deadline=None)
@given(_tree(12), st.data())
def test_a_line_moved_one_space_gets_a_hint_naming_where_it_was_and_no_fix_makes_it_worse(
        lines: list[str], data: st.DataObject) -> None:
    at = data.draw(st.integers(1, len(lines) - 1))
    indent = len(lines[at]) - len(lines[at].lstrip(" "))
    shift = data.draw(st.sampled_from([-1, 1]))
    moved = [*lines[:at], " " * (indent + shift) + lines[at].lstrip(" "), *lines[at + 1:]]
    try:
        parse("\n".join(moved) + "\n", "f.yml")
    except CaseFileError as e:
        if e.message not in (UNLIKE, NO_KEY) or e.location.line != at + 1:
            return
        columns = [int(c) - 1 for c in _HINTED.findall(e.hint)]
        assert indent in columns
        for column in columns:
            fixed = [*moved[:at], " " * column + lines[at].lstrip(" "), *moved[at + 1:]]
            try:
                parse("\n".join(fixed) + "\n", "f.yml")
            except CaseFileError as later:
                assert (later.location.line or 0) > at + 1
