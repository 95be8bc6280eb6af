"""Tools as a tool-definition arm shows them (``run -T FILE``, runner.spec.tooldefs): the description, the
parameters' descriptions, names and enums, and the required list replaced where the file says, and a call
made with the names shown mapped back to the tool's own before it runs, so the tool and the trace checks see
the names the tool declares (docs/reference/tools-file.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from runner.spec.offered import offers
from runner.spec.tooldefs import ToolDef, ToolDefs
from runner.tools.base import Tool, ToolContext


@dataclass(frozen=True)
class _OwnNames:
    """A tool's function called with the arguments renamed back (``back``: shown name -> own name)."""

    run: Callable[[dict[str, Any], ToolContext], str]
    back: Mapping[str, str]

    def __call__(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return self.run(own_arguments(arguments, self.back), context)


def own_arguments(arguments: dict[str, Any], back: Mapping[str, str]) -> dict[str, Any]:
    """``arguments`` with each top-level key the arm renamed (``back``: shown -> own) under its own name."""
    return {back.get(key, key): value for key, value in arguments.items()} if back else arguments


def redefine(tools: Mapping[str, Tool], defs: ToolDefs | None) -> dict[str, Tool]:
    """``tools`` (name -> Tool, in the order offered) as ``defs`` shows them: those ``defs.offer`` leaves out
    dropped, each tool ``defs.tools`` names shown with its overrides; ``tools`` itself when ``defs`` is None.
    A parameter or tool ``defs`` names that a tool lacks is passed over (``validate -T`` reports it)."""
    if defs is None:
        return dict(tools)
    shown = [name for name in tools if defs.offer is None or offers(defs.offer, name)]
    return {name: _redefined(tools[name], defs.tools[name]) if name in defs.tools else tools[name] for name in shown}


def _redefined(tool: Tool, change: ToolDef) -> Tool:
    schema = copy.deepcopy(dict(tool.parameters))
    properties = schema.get("properties")
    own: dict[str, Any] = properties if isinstance(properties, dict) else {}
    names = {p: p for p in own}
    for param, shown in change.parameters.items():
        if param not in own or not isinstance(own[param], dict):
            continue
        if shown.description is not None:
            own[param]["description"] = shown.description
        if shown.enum is not None:
            own[param]["enum"] = list(shown.enum)
        names[param] = shown.name or param
    if own:
        schema["properties"] = {names[p]: value for p, value in own.items()}
    required = change.required if change.required is not None else schema.get("required")
    if isinstance(required, (list, tuple)):
        schema["required"] = [names.get(p, p) for p in required if p in names]
    back = {new: old for old, new in names.items() if new != old}
    return replace(tool, description=tool.description if change.description is None else change.description,
                   parameters=schema, run=_OwnNames(tool.run, back) if back else tool.run, renamed=back)
