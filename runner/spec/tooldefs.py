"""A tool-definition file (``run -T FILE``): what the model is shown of the tools a case offers, overridden by
tool name, and which of them are shown. Each file is one arm (runner.suite.options.make_arms); its schema is
``schemas/tools.schema.json``, its reference docs/reference/tools-file.md.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import CaseFileError, Location, UserErrors, did_you_mean, in_file_order
from runner.resources import bundled
from runner.spec.fingerprint import digest
from runner.spec.offered import offered_tools, offers
from runner.spec.positions import Position, Spot, position
from runner.spec.schema import schema_errors, schema_validator
from runner.spec.source import parse, to_plain
from runner.tools.registry import BUILTINS

if TYPE_CHECKING:
    from runner.spec.case import Case


@dataclass(frozen=True)
class ParamDef:
    """What is shown of one parameter: ``name`` (None: its own), ``description`` and ``enum`` (None: its own)."""

    name: str | None = None
    description: str | None = None
    enum: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class ToolDef:
    """What is shown of one tool: its ``description`` and ``required`` list (by the tool's own parameter names;
    None: its own), and its ``parameters`` by their own names."""

    description: str | None = None
    required: tuple[str, ...] | None = None
    parameters: Mapping[str, ParamDef] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolDefs:
    """One ``-T`` file: the arm's ``name``, the ``file`` it came from, its ``fingerprint`` (hex SHA-256 of its
    canonical JSON, runner.spec.fingerprint.digest), the ``tools`` it redefines by name and ``offer`` (the tools
    shown, None: all). ``places`` maps a key path in the file (``("tools", "bash", "parameters", "command")``)
    to where it is written (1-based line, column), for errors about it."""

    name: str
    file: str
    fingerprint: str
    tools: Mapping[str, ToolDef] = field(default_factory=dict)
    offer: tuple[str, ...] | None = None
    places: Mapping[tuple[str | int, ...], Position] = field(default_factory=dict, compare=False, repr=False)

    def error(self, message: str, path: tuple[str | int, ...], hint: str = "") -> CaseFileError:
        """A CaseFileError at the key ``path`` of the file, named by it (``tools.bash.parameters.cmd``)."""
        line, column = self.places.get(path, (1, 1))
        return CaseFileError(message, Location(self.file, line, column), ".".join(map(str, path)), hint)


@functools.cache
def _validator() -> Any:
    schema = json.loads((bundled("schemas") / "tools.schema.json").read_text(encoding="utf-8"))
    return schema_validator(schema)


def load_tool_defs(path: Path) -> ToolDefs:
    """The ToolDefs of the file at ``path``. Raises UserErrors naming each problem's line and column: a file
    that cannot be read, YAML that is invalid, anything ``schemas/tools.schema.json`` refuses."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise UserErrors([CaseFileError(f"cannot read the tool-definition file: {e}", Location(file),
                                        hint="give -T a YAML file such as examples/tool-descriptions/terse.yml")]) from e
    try:
        root = parse(text, file)
        data = to_plain(root, file)
    except CaseFileError as e:
        raise UserErrors([e]) from e
    spot = Spot(file, root, empty="(file)")
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise UserErrors([spot.error("expected a mapping with tools (and optionally name, offer)",
                                     hint="see docs/reference/tools-file.md")])
    errors = [e for error in _validator().iter_errors(data) for e in schema_errors(error, spot)]
    if errors:
        raise UserErrors(in_file_order(errors))
    tools = {name: _tool(entry) for name, entry in data.get("tools", {}).items()}
    offer = data.get("offer")
    return ToolDefs(name=data.get("name") or path.stem, file=file, fingerprint=digest(data), tools=tools,
                    offer=None if offer is None else tuple(offer), places=_places(root, data))


def _tool(entry: Mapping[str, Any]) -> ToolDef:
    required = entry.get("required")
    params = {own: ParamDef(p.get("name"), p.get("description"), None if "enum" not in p else tuple(p["enum"]))
              for own, p in entry.get("parameters", {}).items()}
    return ToolDef(entry.get("description"), None if required is None else tuple(required), params)


def _places(root: Any, data: Mapping[str, Any]) -> dict[tuple[str | int, ...], Position]:
    """Where each tool, parameter, ``required`` item and ``offer`` item is written."""
    paths: list[tuple[str | int, ...]] = [("offer", i) for i in range(len(data.get("offer") or ()))]
    for tool, entry in data.get("tools", {}).items():
        paths.append(("tools", tool))
        paths += [("tools", tool, "parameters", own) for own in entry.get("parameters", {})]
        paths += [("tools", tool, "required", i) for i in range(len(entry.get("required") or ()))]
    return {path: position(root, path, key=isinstance(path[-1], str)) for path in paths}


def offer_errors(defs: ToolDefs, cases: Sequence[Mapping[str, Mapping[str, Any] | None]]) -> list[CaseFileError]:
    """What of ``defs`` names a tool no one of ``cases`` offers, or a parameter no such tool declares. Each of
    ``cases`` maps each name a case offers (an MCP server's ``SERVER__*`` pattern for its tools) to its parameter
    schema (None where unknown before it runs: then its parameters are not held). Each error is positioned in
    the file, with a did-you-mean. A file is for a whole suite: a tool some cases leave out is no error."""
    offered = {name: None for case in cases for name in case}
    listed = f"the selected cases offer: {', '.join(offered)}"
    errors = [defs.error(f"tool {name!r} is offered by no selected case", ("offer", i),
                         did_you_mean(name, offered, listed))
              for i, name in enumerate(defs.offer or ()) if not offers(offered, name)]
    for name, tool in defs.tools.items():
        if not offers(offered, name):
            errors.append(defs.error(f"tool {name!r} is offered by no selected case", ("tools", name),
                                     did_you_mean(name, offered, listed)))
            continue
        schemas = [case.get(name) for case in cases if offers(case, name)]
        declared = [s.get("properties") if isinstance(s, Mapping) else None for s in schemas]
        if not all(isinstance(d, Mapping) for d in declared):
            continue  # an MCP tool or a mock without properties: no parameters to hold it to
        known = list(dict.fromkeys(p for d in declared if isinstance(d, Mapping) for p in d))
        wheres: list[tuple[tuple[str | int, ...], str]] = [(("parameters", p), p) for p in tool.parameters]
        wheres += [(("required", i), p) for i, p in enumerate(tool.required or ())]
        for where, own in wheres:
            if own not in known:
                errors.append(defs.error(f"tool {name!r} has no parameter {own!r}", ("tools", name, *where),
                                         did_you_mean(own, known, f"its parameters: {', '.join(known)}")))
        shown = {p: (tool.parameters[p].name or p) if p in tool.parameters else p for p in known}
        for own, new in shown.items():
            other = next((p for p, n in shown.items() if n == new and p != own), None)
            if own in tool.parameters and tool.parameters[own].name and other is not None:
                errors.append(defs.error(f"tool {name!r} would show parameters {own!r} and {other!r} both as {new!r}",
                                         ("tools", name, "parameters", own), "give each parameter a name of its own"))
    return errors


def check_tool_defs(loaded: Sequence[ToolDefs], cases: Sequence[Case]) -> None:
    """Raise UserErrors with every error of ``offer_errors`` of each of ``loaded`` against the tools ``cases``
    offer, in file order, before any run."""
    offered = [case_tools(case) for case in cases]
    errors = [e for defs in loaded for e in in_file_order(offer_errors(defs, offered))]
    if errors:
        raise UserErrors(errors)


def load_all(paths: Sequence[str]) -> list[ToolDefs]:
    """The ToolDefs of each ``-T`` file, in order; raises UserErrors with every file's errors."""
    loaded, errors = [], []
    for path in paths:
        try:
            loaded.append(load_tool_defs(Path(path)))
        except UserErrors as e:
            errors += e.errors
    if errors:
        raise UserErrors(errors)
    return loaded


def case_tools(case: Case) -> dict[str, Mapping[str, Any] | None]:
    """Each tool name ``case`` offers (an MCP server's as its ``SERVER__*`` pattern) -> the parameter schema the
    model is shown of it (None for an MCP server's, known only once it runs)."""
    schemas: dict[str, Mapping[str, Any] | None] = {name: row.parameters for name, row in BUILTINS.items()}
    schemas.update({mock["name"]: mock.get("parameters") or {} for mock in case.mocks})
    servers = [server["name"] for server in case.mcp]
    names = offered_tools(case.tools, (mock["name"] for mock in case.mocks), servers)
    return {name: schemas.get(name) for name in names}
