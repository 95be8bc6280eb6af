"""replio eval fixtures read as cases: one JSON (or YAML) mapping per file, all in the group ``replio``.

A file whose top level is a mapping with a ``task`` key (and neither ``cases``
nor ``turns``) is a replio fixture. It is validated against
``schemas/replio.schema.json``, every error positioned like a case file's,
then mapped onto a case mapping:

    id (else the file stem)  -> id          verifier.exact/must_include/avoid -> expect.trace.*
    description              -> description verifier.max_calls/min_calls/args -> expect.trace.*
    task                     -> one turn    expected                          -> expect.trace.expected
    files                    -> files       tool_permission + tools_deny      -> deny
    script (tooltrial's own) -> script

Tool names go through ``TOOL_NAMES``; tooltrial's own names pass unchanged.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import CaseFileError, did_you_mean, in_file_order
from runner.names import ID_PATTERN
from runner.resources import bundled
from runner.spec.positions import Spot
from runner.spec.rules import Checked, extra_rule_errors
from runner.spec.schema import case_schema, schema_errors, schema_validator
from runner.tools.registry import BUILTIN_NAMES

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

GROUP = "replio"
# replio's tool name -> tooltrial's builtin tool
TOOL_NAMES = {
    "file_read": "read_file",
    "file_write": "write_file",
    "file_edit": "edit_file",
    "file_list": "list_dir",
    "file_glob": "glob",
    "file_grep": "grep",
    "run_command": "bash",
}
# replio's permission categories -> the builtin tools in each (web and mcp have none)
CATEGORIES = {
    "read": ("read_file", "grep"),
    "list": ("list_dir", "glob"),
    "edit": ("write_file", "edit_file"),
    "bash": ("bash",),
    "web": (),
    "mcp": (),
}
DEFAULT_PERMISSIONS = {"read": "allow", "list": "allow", "web": "allow", "edit": "deny", "bash": "deny", "mcp": "deny"}
_TEMPLATE_MARK = re.compile(r"\{[{%#]")
_NAME_LISTS = (  # where tool names are listed
    ("expected",), ("verifier", "exact"), ("verifier", "must_include"), ("verifier", "avoid"), ("tools_deny",)
)


def is_fixture(data: Any) -> bool:
    """Whether a parsed file is a replio fixture rather than a case file."""
    return isinstance(data, dict) and "task" in data and not {"cases", "turns"} & data.keys()


@functools.cache
def _validator() -> Draft202012Validator:
    """The replio schema's validator; its ``$ref`` into the case schema resolves offline."""
    from referencing import (  # imported here: folders without replio files load faster
        Registry,
        Resource,
    )

    schema = json.loads((bundled("schemas") / "replio.schema.json").read_text(encoding="utf-8"))
    case = case_schema()
    return schema_validator(schema, registry=Registry().with_resource(case["$id"], Resource.from_contents(case)))


def check_fixture(spot: Spot, data: dict[str, Any], stem: str, fixtures: Path) -> tuple[Checked, list[CaseFileError]]:
    """Validate a replio fixture (``data`` is ``to_plain`` of ``spot.node``) and map it onto a case.

    Returns ``[(spot, case mapping)]`` and no errors, or no case and every
    error sorted by position. ``stem`` is the file name without its extension.
    """
    errors = [one for error in _validator().iter_errors(data) for one in schema_errors(error, spot)]
    errors += _name_errors(spot, data)
    if "id" not in data and not ID_PATTERN.fullmatch(stem):
        hint = "give the fixture an 'id', or rename the file"
        errors.append(spot.error(f"no 'id', and the file name {stem!r} is not a valid case id", hint=hint))
    if not errors:
        case = to_case_mapping(data, stem)
        errors = extra_rule_errors([(spot, case)], None, fixtures)
        if not errors:
            return [(spot, case)], []
    return [], in_file_order(errors)


def _name_errors(spot: Spot, data: dict[str, Any]) -> list[CaseFileError]:
    """A tool name that is neither replio's (``TOOL_NAMES``) nor tooltrial's, where it was written."""
    known = [*TOOL_NAMES, *BUILTIN_NAMES]
    found: list[tuple[list[str | int], Any, bool]] = []
    for path in _NAME_LISTS:
        names = _get(data, path)
        found += [([*path, i], name, False) for i, name in enumerate(names if isinstance(names, list) else [])]
    args = _get(data, ("verifier", "args"))
    found += [(["verifier", "args", name], name, True) for name in (args if isinstance(args, dict) else {})]
    hint = "known: " + ", ".join(known)
    return [
        spot.error(f"unknown tool {name!r}", path, key=key, hint=did_you_mean(name, known, hint))
        for path, name, key in found
        if isinstance(name, str) and name not in known
    ]


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for step in path:
        data = data.get(step) if isinstance(data, dict) else None
    return data


def tool_name(name: str) -> str:
    """tooltrial's name for a replio (or tooltrial) tool name."""
    return TOOL_NAMES.get(name, name)


def to_case_mapping(data: dict[str, Any], stem: str) -> dict[str, Any]:
    """A valid replio fixture as a case mapping (keys of ``schemas/case.schema.json``).

    The task is sent as written: when it holds Jinja markers it goes through
    the case variable ``task`` so nothing in it is rendered.
    """
    task = data["task"]
    case: dict[str, Any] = {"id": data.get("id", stem)}
    if "description" in data:
        case["description"] = data["description"]
    if _TEMPLATE_MARK.search(task):
        case.update(vars={"task": task}, turns=["{{ task }}"])
    else:
        case["turns"] = [task]
    if "files" in data:
        case["files"] = data["files"]
    if deny := denied_tools(data):
        case["deny"] = deny
    if trace := _trace(data):
        case["expect"] = {"trace": trace}
    if "script" in data:
        case["script"] = [_script_reply(reply) for reply in data["script"]]
    return case


def _script_reply(reply: Any) -> Any:
    """A script reply with replio tool names in its calls turned into tooltrial's."""
    calls = reply.get("tool_calls") if isinstance(reply, dict) else None
    if not isinstance(calls, list):
        return reply
    renamed = [{**c, "name": tool_name(c["name"])} if isinstance(c, dict) and isinstance(c.get("name"), str) else c
               for c in calls]
    return {**reply, "tool_calls": renamed}


def denied_tools(data: dict[str, Any]) -> list[str]:
    """The builtin tools a fixture refuses: denied categories over replio's defaults, plus ``tools_deny``."""
    permissions = {**DEFAULT_PERMISSIONS, **data.get("tool_permission", {})}
    denied = {tool for category, action in permissions.items() if action == "deny" for tool in CATEGORIES[category]}
    denied |= {tool_name(name) for name in data.get("tools_deny", [])}
    return [tool for tool in BUILTIN_NAMES if tool in denied]


def _trace(data: dict[str, Any]) -> dict[str, Any]:
    """``expect.trace`` from ``expected`` and the ``verifier``, tool names mapped."""
    verifier = data.get("verifier", {})
    names = ("exact", "must_include", "avoid")
    trace: dict[str, Any] = {key: [tool_name(n) for n in verifier[key]] for key in names if key in verifier}
    trace.update({key: verifier[key] for key in ("max_calls", "min_calls") if key in verifier})
    if "args" in verifier:
        trace["args"] = {tool_name(name): wanted for name, wanted in verifier["args"].items()}
    if "expected" in data:
        trace["expected"] = [tool_name(name) for name in data["expected"]]
    return trace
