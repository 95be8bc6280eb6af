"""One BFCL category as a tooltrial case file: its name, the defaults its cases share, and its YAML text
(runner.spec.foreign.bfcl makes the cases)."""

from __future__ import annotations

import functools
from typing import Any

import yaml


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
        pass

    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions:
            Dumper.add_implicit_resolver(tag, regexp, list(first))
    return Dumper
