"""BFCL's files in, tooltrial's case files out: a JSON-lines file's values, whether a category is imported,
and one category's case file: its name, the defaults its cases share, its YAML text
(runner.spec.foreign.bfcl makes the cases)."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import yaml

from runner.errors import CaseFileError, Location, UserErrors

_FILE_NAME = re.compile(r"BFCL_v\d+_(\w+)\.json")  # a category's questions or answer key, as BFCL names it
IMPORTED = ("simple_python, multiple, parallel, parallel_multiple, irrelevance, live_simple, live_multiple, "
            "live_parallel, live_parallel_multiple, live_irrelevance and live_relevance")
# a name in a category's, as whole words -> why tooltrial does not import it (bfcl_eval/constants/category_mapping.py)
_REFUSED = {
    "java": "its arguments are Java source text, which BFCL's checker converts by Java's types",
    "javascript": "its arguments are JavaScript source text, which BFCL's checker converts by JavaScript's types",
    "multi_turn": "its turns call BFCL's stateful Python classes and are checked by the state and results they leave",
    "memory": "it needs BFCL's memory backends, filled by conversations before each question",
    "web_search": "the model searches the live web and is checked by its final answer",
    "format_sensitivity": "it asks other categories' entries again in the prompt formats of models that write calls as text",
    "exec": "its answers are calls BFCL runs to compare their results, a category BFCL no longer scores",
    "rest": "its answers are live REST responses, a category BFCL no longer scores",
}


def refused_because(category: str) -> str | None:
    """Why BFCL's ``category`` (``simple_java``) is not imported, or None when it is: a category whose name
    holds a refused name as whole words, ``_`` apart (``multi_turn_base`` holds ``multi_turn``), is refused."""
    return next((why for name, why in _REFUSED.items() if f"_{name}_" in f"_{category}_"), None)


def read_lines(path: Path) -> tuple[list[tuple[int, Any]], list[CaseFileError]]:
    """The JSON value of each non-blank line of ``path`` with its 1-based line number, and an error per
    line that is not JSON, at its line and column. Raises UserErrors for a file that cannot be read, and
    for one BFCL names for a category tooltrial does not import (``BFCL_v4_memory.json``), saying why."""
    named = _FILE_NAME.fullmatch(path.name)
    why = refused_because(named.group(1)) if named else None
    if named and why:
        raise UserErrors([CaseFileError(f"category {named.group(1)!r} is not imported: {why}", Location(str(path)),
                                        hint=f"tooltrial imports {IMPORTED}")])
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserErrors([CaseFileError(f"cannot read: {e}", Location(str(path)))]) from e
    values, errors = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                values.append((number, json.loads(line)))
            except json.JSONDecodeError as e:
                errors.append(CaseFileError(f"not JSON: {e.msg}", Location(str(path), number, e.colno),
                                            hint="each line of a BFCL file is one JSON object"))
    return values, errors


def defaults_for(category: str) -> dict[str, Any]:
    """What every case of ``category`` shares (a case file's ``defaults``): tags, and for an AST category
    BFCL's strictness: no parameter the answer does not name, JSON Schema types as the function doc
    says them (5.0 is no integer), no call beyond the expected ones."""
    defaults: dict[str, Any] = {"tags": ["bfcl", category]}
    if not category.endswith("relevance"):
        defaults["expect"] = {"trace": {"exact_args": True, "strict_types": True, "extra_calls": False}}
    return defaults


def file_name(category: str) -> str:
    """The case file a category is written to: ``bfcl_<category>.yml`` (its group is the stem)."""
    return f"bfcl_{category}.yml"


def case_file_text(category: str, cases: list[dict[str, Any]], source: str) -> str:
    """The YAML text of one category's case file: a comment naming ``source``, then ``{defaults, cases}``;
    collections of scalars only in flow style.

    Written by libyaml's emitter (PyYAML's ``CSafeDumper``), so libyaml, the parser of tooltrial's fast
    path, reads every line (ruamel's emitter writes plain scalars such as ``[days?]`` that it does
    not); a string some YAML 1.2 rule reads as another type (``1e3``, ``0o17``: tooltrial's loader
    reads YAML 1.2) is quoted, as YAML 1.1's already are.
    """
    text = yaml.dump({"defaults": defaults_for(category), "cases": cases}, Dumper=_dumper(), sort_keys=False,
                     allow_unicode=True, width=4096, default_flow_style=None)
    named = " ".join(source.split())  # one comment line, whatever the file name holds
    return f"# BFCL {category}, imported by `tooltrial import bfcl` from {named}\n" + text


@functools.cache
def _dumper() -> type[yaml.CSafeDumper]:
    """libyaml's safe dumper that quotes the strings YAML 1.2 resolves to another type too (ruamel's rules)."""
    from ruamel.yaml.resolver import implicit_resolvers

    class Dumper(yaml.CSafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True  # a value two entries share is written twice: anchors send the file off the fast path

    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions:
            Dumper.add_implicit_resolver(tag, regexp, list(first))
    return Dumper
