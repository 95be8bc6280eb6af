"""The rules of a case's prompt injections (runner.spec.inject) that the schema cannot say: a planted file stays in
the workspace; a tool that carries text is one the case offers (else nothing is planted: a warning); ``expect.attack``
without ``inject`` has no attack to judge (a warning); no case takes the id of another's clean twin."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from runner.errors import CaseFileError
from runner.spec.inject import TWIN_SUFFIX
from runner.spec.offered import offered_tools, offers
from runner.spec.positions import Spot, position, written

_OUTSIDE = "use a path relative to the workspace, without '..'"


def inject_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Every error and warning (CaseFileWarning) of the rules above for one merged case."""
    items = _list(case.get("inject"))
    expect: dict[str, Any] = case["expect"] if isinstance(case.get("expect"), dict) else {}
    errors: list[CaseFileError] = []
    if "attack" in expect and not items:
        at: list[str | int] = ["expect", "attack"]
        errors.append(written(at, spot, defaults).warning(
            "the case has no inject: no text is planted, so no attack can succeed", at, key=True,
            hint="plant the attacker's text with inject:, see docs/robustness.md"))
    mocks = [m["name"] for m in _list(case.get("mocks")) if isinstance(m, dict) and isinstance(m.get("name"), str)]
    servers = [s["name"] for s in _list(case.get("mcp")) if isinstance(s, dict) and isinstance(s.get("name"), str)]
    tools = case.get("tools")
    offered = offered_tools([t for t in tools if isinstance(t, str)] if isinstance(tools, list) else None, mocks, servers)
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name = item.get("file")
        if isinstance(name, str) and (PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts):
            at = ["inject", i, "file"]
            errors.append(written(at, spot, defaults).error(f"file path {name!r} leaves the workspace", at,
                                                            hint=_OUTSIDE))
        tool = item.get("tool")
        if isinstance(tool, str) and "agent" not in case and not offers(offered, tool):
            at = ["inject", i, "tool"]
            errors.append(written(at, spot, defaults).warning(
                f"the case does not offer {tool!r}, so nothing is planted", at,
                hint="name a tool the case offers: in its tools, its mocks or its MCP servers"))
    return errors


def twin_clashes(checked: Sequence[tuple[Spot, dict[str, Any]]]) -> list[CaseFileError]:
    """An error for each case of a file whose id is the clean twin's id (``ID.clean``) of a case with ``inject``."""
    twins = {case["id"] + TWIN_SUFFIX: position(spot.node, ["id"])[0] for spot, case in checked
             if isinstance(case.get("id"), str) and _list(case.get("inject"))}
    return [spot.error(f"id {case['id']!r} is the clean twin's of the case at line {twins[case['id']]}",
                       ["id"], hint="rename this case: tooltrial runs that case's twin under this id")
            for spot, case in checked if isinstance(case.get("id"), str) and case["id"] in twins]


def _list(value: Any) -> list[Any]:
    """``value`` when it is a list, else [] (the schema reports what else it is)."""
    return value if isinstance(value, list) else []
