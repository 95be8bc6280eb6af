"""The tool-definition lint (``tooltrial validate --tools-lint``): what in the tools a case offers, as the model
is shown them (with each ``-T`` file's overrides, runner.tools.redefine), makes models misuse them. Warnings
only; each rule's reason is in docs/reference/tools-file.md#lint.

Rules (``RULES``): ``no-description`` (a tool or parameter without one), ``short-description`` (fewer than
``MIN_WORDS`` words), ``near-duplicate`` (two tools whose names, or descriptions, are at least ``SIMILAR``
alike by difflib's ratio), ``free-form-string`` (a ``string`` parameter with no ``enum``, ``format`` or
``pattern`` whose name says it holds a date, time, address or choice), ``required-with-default`` (a required
parameter that has a ``default``). An MCP server's tools are known only once it runs: not linted.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from runner.errors import Location
from runner.spec.case import Case
from runner.spec.located import template_location
from runner.spec.offered import expand, offered_tools
from runner.spec.tooldefs import ToolDefs
from runner.tools.base import Tool
from runner.tools.mocks import mock_tools
from runner.tools.redefine import redefine
from runner.tools.toolbox import BUILTIN_TOOLS

RULES = ("no-description", "short-description", "near-duplicate", "free-form-string", "required-with-default")
MIN_WORDS = 4  # "Read a file." says what, not when or how: the tool-use guides ask for a sentence or more
SIMILAR = 0.85
_FORMATS = {  # a parameter name's word -> the JSON Schema format it could name
    "date": "date", "time": "time", "datetime": "date-time", "timestamp": "date-time", "email": "email",
    "url": "uri", "uri": "uri", "uuid": "uuid", "ip": "ipv4", "hostname": "hostname",
}
_CHOICES = frozenset({"mode", "kind", "type", "status", "level", "unit", "units", "sort", "order", "format", "method"})


@dataclass(frozen=True)
class Finding:
    """One lint warning: its ``rule`` (one of RULES), the ``tool`` (and ``param``, None for the tool itself)
    it is about, what is wrong and the fix (``message``), where the definition is written (``location``: the
    ``-T`` file's entry, else the case's mocks, else the builtin's registry row), and the ``arm`` (the ``-T``
    file's name, None for the tools' own definitions)."""

    rule: str
    tool: str
    param: str | None
    message: str
    location: Location
    arm: str | None = None

    def render(self) -> str:
        """``file:line:col: tool.param: message [rule] (arm NAME)``."""
        where = self.tool if self.param is None else f"{self.tool}.{self.param}"
        arm = f" (tools {self.arm})" if self.arm else ""
        return f"{self.location}: {where}: {self.message} [{self.rule}]{arm}"


def lint_cases(cases: Sequence[Case], tool_defs: Sequence[ToolDefs]) -> list[Finding]:
    """Every finding over the tools each of ``cases`` offers, as each of ``tool_defs`` shows them (the tools'
    own definitions when none is given), each once, in the order found."""
    found: dict[tuple[Any, ...], Finding] = {}
    each: list[ToolDefs | None] = [*tool_defs] or [None]
    for defs in each:
        for case in cases:
            extra = mock_tools(case.mocks)
            known = {**BUILTIN_TOOLS, **extra}
            names = [n for n in expand(offered_tools(case.tools, extra), list(known)) if n in known]
            tools = redefine({name: known[name] for name in names}, defs)
            for finding in lint_tools(tools, functools.partial(_where, case, extra, defs), defs):
                found.setdefault((finding.rule, finding.tool, finding.param, finding.arm, finding.location), finding)
    return list(found.values())


def _where(case: Case, mocks: Mapping[str, Tool], defs: ToolDefs | None, name: str, param: str | None) -> Location:
    """Where the definition a finding is about is written: the ``-T`` file's entry of the tool (or of the
    parameter), else the case's mock (its parameter's schema), else the builtin's name."""
    if defs is not None and name in defs.tools:
        at: tuple[str | int, ...] = ("tools", name)
        if param is not None and param in defs.tools[name].parameters:
            at = ("tools", name, "parameters", param)
        line, column = defs.places.get(at, (1, 1))
        return Location(defs.file, line, column)
    if name in mocks:
        index = [mock["name"] for mock in case.mocks].index(name)
        path = ("mocks", index) if param is None else ("mocks", index, "parameters", "properties", param)
        return template_location(case, path, None)[0]
    return Location(f"builtin tool {name}")


def lint_tools(tools: Mapping[str, Tool], where: Callable[[str, str | None], Location],
               defs: ToolDefs | None = None) -> Iterator[Finding]:
    """The findings of the tools ``tools`` (name -> Tool as shown); ``where(name, param)`` is where a tool's (or
    its parameter's, by its own name) definition is written."""
    arm = None if defs is None else defs.name
    for name, tool in tools.items():
        at = where(name, None)
        yield from (Finding(rule, name, None, text, at, arm) for rule, text in _described("tool", tool.description))
        schema = tool.parameters
        required = set(schema.get("required") or ())
        for param, spec in (schema.get("properties") or {}).items():
            if not isinstance(spec, Mapping):
                continue
            own = tool.renamed.get(param, param)
            for rule, text in [*_described("parameter", spec.get("description")), *_typed(param, spec)]:
                yield Finding(rule, name, param, text, where(name, own), arm)
            if param in required and "default" in spec:
                yield Finding("required-with-default", name, param, f"required, yet has a default ({spec['default']!r}): "
                              "drop it from required, or drop the default", where(name, own), arm)
    for (a, one), (b, two) in combinations(tools.items(), 2):
        if difflib.SequenceMatcher(None, a, b).ratio() >= SIMILAR:
            yield Finding("near-duplicate", b, None, f"its name is close to {a!r}: name them by what sets them apart",
                          where(b, None), arm)
        elif one.description and difflib.SequenceMatcher(None, one.description, two.description).ratio() >= SIMILAR:
            yield Finding("near-duplicate", b, None, f"its description is close to {a!r}'s: say when to use each",
                          where(b, None), arm)


def _described(what: str, text: Any) -> list[tuple[str, str]]:
    if not isinstance(text, str) or not text.strip():
        return [("no-description", f"the {what} has no description: say what it is for and when to use it")]
    words = len(text.split())
    if words < MIN_WORDS:
        text = (f"the {what}'s description is {words} word{'s' * (words != 1)} (fewer than {MIN_WORDS}): "
                "say what it takes and what it is for")
        return [("short-description", text)]
    return []


def _typed(param: str, spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    if spec.get("type") != "string" or any(k in spec for k in ("enum", "format", "pattern", "const")):
        return []
    words = set(re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", param).lower()))
    format_ = next((_FORMATS[w] for w in sorted(words) if w in _FORMATS), None)
    if format_ is not None:
        return [("free-form-string", f"a free-form string: name its format ({format_!r}) or a pattern")]
    if words & _CHOICES:
        return [("free-form-string", "a free-form string that names a choice: list its values as an enum")]
    return []
