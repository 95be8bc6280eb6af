"""The rules the case schema cannot say, each reported where the value was written.

Ids are unique in a file; the fixture folder exists and holds nothing the workspace copy
refuses (named pipes, sockets, devices); every regex the check table names compiles
(``matches`` in replies, files and argument matchers, per-turn ones too);
``tools``/``deny`` and the trace checks (``expected``, ``exact``, ``exact_unordered``, ``must_include``,
``avoid``, ``order``, ``args`` keys, ``calls`` names; per-turn ones too) name builtin tools or the case's
mocks, and those of ``exact_unordered`` and ``calls`` tools the case offers and does not deny; ``files`` paths stay
inside the workspace; mocks have unique names, a valid ``parameters`` schema,
and responses that give exactly one of ``result``/``error``, at most one of
them without ``when``; a case gives ``turns`` or a simulated ``user`` (runner.spec.conversation).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

import regex

from runner.checks.table import KINDS, KeyPath
from runner.errors import CaseFileError, did_you_mean
from runner.patterns import compile_pattern
from runner.resources import bundled
from runner.spec.conversation import conversation_errors
from runner.spec.offered import offered_tools
from runner.spec.positions import Spot, position, written

Checked = list[tuple[Spot, dict[str, Any]]]  # each case merged over the defaults, with its Spot


def extra_rule_errors(checked: Checked, defaults: Spot | None, fixtures: Path) -> list[CaseFileError]:
    """Every extra-rule error of the file's cases."""
    return _duplicate_ids(checked) + _rules(checked, defaults, fixtures)


def _duplicate_ids(checked: Checked) -> list[CaseFileError]:
    errors = []
    first: dict[str, int] = {}
    for spot, case in checked:
        case_id = case.get("id")
        if isinstance(case_id, str) and case_id in first:
            hint = f"first used at line {first[case_id]}; ids must be unique in a file"
            errors.append(spot.error(f"duplicate id {case_id!r}", ["id"], hint=hint))
        elif isinstance(case_id, str):
            first[case_id] = position(spot.node, ["id"])[0]
    return errors


def _rules(checked: Checked, defaults: Spot | None, fixtures: Path) -> list[CaseFileError]:
    """The fixture folder exists and every regex compiles, reported where each value was written."""
    errors = []
    for spot, case in checked:
        if isinstance(case.get("fixture"), str) and case["fixture"]:
            errors += _fixture_errors(case["fixture"], written(["fixture"], spot, defaults), fixtures)
        for path, pattern in _regexes(case):
            try:
                compile_pattern(pattern)
            except regex.error as e:
                errors.append(written(path, spot, defaults).error(f"invalid regex {pattern!r}: {e}", path))
        errors += _tool_name_errors(case, spot, defaults) + _file_path_errors(case, spot, defaults)
        errors += _mock_errors(case, spot, defaults) + conversation_errors(case, spot, defaults)
    return errors


# The trace keys whose list items name tools; ``args`` names them by its keys, ``calls`` by each one's ``name``.
_TRACE_TOOL_LISTS = ("expected", "exact", "exact_unordered", "must_include", "avoid", "order")
# The trace keys that only a call of an offered, undenied tool can satisfy: a call of any other is refused.
_RUN_ONLY = ("exact_unordered", "calls")


def _tool_name_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Every tool ``tools``, ``deny`` and the trace checks (the case's and each turn's) name is a
    builtin or one of the case's mocks. A script's tool calls may name any tool: a model may too."""
    mocks = case.get("mocks") if isinstance(case.get("mocks"), list) else []
    mock_names = [m["name"] for m in mocks if isinstance(m, dict) and isinstance(m.get("name"), str)]
    known = offered_tools(None, mock_names)
    tools = case.get("tools") if isinstance(case.get("tools"), list) else None
    usable = [n for n in offered_tools(tools, mock_names) if n not in _list(case.get("deny"))]
    errors = []
    for path, name, key in _named_tools(case):
        at = written(path, spot, defaults)
        if name not in known:
            hint = did_you_mean(name, known, "known tools: " + ", ".join(known))
            errors.append(at.error(f"unknown tool {name!r}", path[:-1] if key else path, at=path, key=key, hint=hint))
        elif name not in usable and any(part in _RUN_ONLY for part in path):
            denied = name in _list(case.get("deny"))
            why = "denied by the case" if denied else "not offered by the case"
            fix = "remove it from deny" if denied else f"add it to tools (offered: {', '.join(usable)})"
            hint = did_you_mean(name, usable, f"a call of it is refused and never counts; {fix}")
            errors.append(at.error(f"tool {name!r} is {why}", path, hint=hint))
    return errors


def _named_tools(case: dict[str, Any]) -> list[tuple[list[str | int], str, bool]]:
    """(path, tool name, whether the name is a mapping key) of each tool name the case writes."""
    found: list[tuple[list[str | int], str, bool]] = []
    for key in ("tools", "deny"):
        found += [(path, name, False) for path, name in _strings(_list(case.get(key)), [key])]
    traces: list[tuple[list[str | int], Any]] = [(["expect", "trace"], _get(case.get("expect"), "trace"))]
    for i, turn in enumerate(_list(case.get("turns"))):
        traces.append((["turns", i, "expect", "trace"], _get(_get(turn, "expect"), "trace")))
    for at, trace in traces:
        for key in _TRACE_TOOL_LISTS:
            found += [(path, name, False) for path, name in _strings(_list(_get(trace, key)), [*at, key])]
        calls = [(i, _get(call, "name")) for i, call in enumerate(_list(_get(trace, "calls")))]
        found += [([*at, "calls", i, "name"], name, False) for i, name in calls if isinstance(name, str)]
        args = _get(trace, "args")
        found += [([*at, "args", name], name, True) for name in args if isinstance(name, str)] if isinstance(args, dict) else []
    return found


def _get(value: Any, key: str) -> Any:
    """``value[key]`` when ``value`` is a mapping; else None (a wrong shape is the schema's business)."""
    return value.get(key) if isinstance(value, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _file_path_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Paths under ``files`` and ``expect.files`` stay inside the workspace."""
    expect = case.get("expect") if isinstance(case.get("expect"), dict) else {}
    places: list[tuple[list[str | int], Any]] = [(["files"], case.get("files")), (["expect", "files"], expect.get("files"))]
    errors = []
    for at, files in places:
        for name in files if isinstance(files, dict) else {}:
            path = PurePosixPath(name)
            if not name or path.is_absolute() or ".." in path.parts:
                hint = "use a path relative to the workspace, without '..'"
                errors.append(written(at, spot, defaults).error(f"file path {name!r} leaves the workspace", at, hint=hint))
    return errors


def _fixture_errors(fixture: str, spot: Spot, fixtures: Path) -> list[CaseFileError]:
    if Path(fixture).is_absolute() or ".." in Path(fixture).parts:
        return [spot.error(f"fixture {fixture!r} must be a folder inside {fixtures}", ["fixture"])]
    if (fixtures / fixture).is_dir():
        special = _special_file(fixtures / fixture)
        if special is None:
            return []
        hint = "remove it from the fixture folder, or make it with a setup command"
        return [spot.error(f"fixture {fixture!r} holds {special}, which cannot be copied", ["fixture"], hint=hint)]
    known = [p.name for p in fixtures.iterdir() if p.is_dir()] if fixtures.is_dir() else []
    message, fix = _fixture_search(fixture, Path(spot.file), fixtures)
    return [spot.error(message, ["fixture"], hint=did_you_mean(fixture, known, fix))]


def _fixture_search(fixture: str, case_file: Path, fixtures: Path) -> tuple[str, str]:
    """(message, fix) for a fixture found in no folder searched: ``fixtures``, which is the
    ``fixtures`` folder beside the case file's folder, the bundled fixtures when that folder does
    not exist (runner.spec.casefile), or the folder ``--fixtures-dir`` gave."""
    beside = case_file.resolve().parent.parent / "fixtures"
    home = bundled("fixtures")
    if fixtures.resolve() == beside:
        where = f"{fixtures} (the fixtures folder beside the cases folder)"
        fix = f"create the folder {fixtures / fixture}, or give --fixtures-dir FOLDER"
        return f"fixture folder {fixture!r} not found in {where}", fix
    if fixtures.resolve() == home.resolve():
        message = (f"fixture folder {fixture!r} not found: there is no {beside} beside the cases folder,"
                   f" and the bundled fixtures ({home}) have none")
        return message, f"create the folder {beside / fixture}, or give --fixtures-dir FOLDER that holds {fixture}/"
    message = f"fixture folder {fixture!r} not found in {fixtures} (the --fixtures-dir folder)"
    return message, f"create the folder {fixtures / fixture}, or point --fixtures-dir at the folder that holds it"


_SPECIAL = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
            (stat.S_ISBLK, "a device"))


def _special_file(root: Path) -> str | None:
    """``path (what it is)`` of the first entry below ``root``, in walk order, that is no regular
    file, folder or symlink (a named pipe, socket or device: the workspace copy refuses it), else None."""
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            try:
                mode = os.lstat(os.path.join(folder, name)).st_mode
            except OSError:  # gone since the folder was read
                continue
            what = next((noun for test, noun in _SPECIAL if test(mode)), None)
            if what is not None:
                return f"{Path(folder, name).relative_to(root).as_posix()} ({what})"
    return None


def _mock_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Duplicate mock names, invalid ``parameters`` schemas, and malformed ``responses``."""
    mocks = case.get("mocks") if isinstance(case.get("mocks"), list) else []
    errors: list[CaseFileError] = []
    names: set[str] = set()
    for i, mock in enumerate(mocks):
        if not isinstance(mock, dict):
            continue
        here = written(["mocks", i], spot, defaults)
        name = mock.get("name")
        if isinstance(name, str) and name in names:
            errors.append(here.error(f"duplicate mock {name!r}", ["mocks", i, "name"], hint="give each mock its own name"))
        elif isinstance(name, str):
            names.add(name)
        from jsonschema import (
            Draft202012Validator,  # imported here: files without mocks load faster
        )
        from jsonschema.exceptions import SchemaError

        try:
            if isinstance(mock.get("parameters"), dict):
                Draft202012Validator.check_schema(mock["parameters"])
        except SchemaError as e:
            where = "/".join(map(str, e.absolute_path))
            message = f"invalid JSON Schema{f' at {where!r}' if where else ''}: {e.message}"
            errors.append(here.error(message, ["mocks", i, "parameters"]))
        responses = mock.get("responses") if isinstance(mock.get("responses"), list) else []
        errors += _response_errors(responses, ["mocks", i, "responses"], here)
    return errors


def _response_errors(responses: list[Any], path: list[str | int], spot: Spot) -> list[CaseFileError]:
    shaped = [(j, r) for j, r in enumerate(responses) if isinstance(r, dict)]
    errors = [spot.error("give exactly one of 'result' or 'error'", [*path, j])
              for j, r in shaped if ("result" in r) == ("error" in r)]
    hint = "only one response may lack 'when': it answers when no 'when' matches"
    fallbacks = [j for j, r in shaped if "when" not in r]
    return errors + [spot.error("another fallback response", [*path, j], hint=hint) for j in fallbacks[1:]]


def _regexes(case: dict[str, Any]) -> list[tuple[list[str | int], str]]:
    """(path in the case, pattern) of every regex: in ``expect`` and each ``{content, expect}``
    turn (response_matches, files.*.matches, ``{matches: ...}`` matchers in trace.args), and in
    the mocks' ``when``."""
    found = _expect_regexes(case.get("expect"), ["expect"])
    for i, turn in enumerate(case.get("turns") if isinstance(case.get("turns"), list) else []):
        if isinstance(turn, dict):
            found += _expect_regexes(turn.get("expect"), ["turns", i, "expect"])
    for i, mock in enumerate(case.get("mocks") if isinstance(case.get("mocks"), list) else []):
        responses = mock.get("responses") if isinstance(mock, dict) else None
        for j, response in enumerate(responses if isinstance(responses, list) else []):
            if isinstance(response, dict):
                found += _matcher_regexes(response.get("when"), ["mocks", i, "responses", j, "when"])
    return found


def _expect_regexes(expect: Any, at: list[str | int]) -> list[tuple[list[str | int], str]]:
    """(path, pattern) of every regex the check table's kinds say ``expect`` holds: each string at
    a kind's regex key, each ``{matches: ...}`` matcher below a kind's matcher key."""
    if not isinstance(expect, dict):
        return []
    found = []
    for name, kind in KINDS.items():
        if name in expect:
            for keys in kind.regex_keys:
                found += [hit for path, value in _at(expect[name], keys, [*at, name]) for hit in _strings(value, path)]
            for keys in kind.matcher_keys:
                found += [hit for path, value in _at(expect[name], keys, [*at, name]) for hit in _matcher_regexes(value, path)]
    return found


def _at(value: Any, keys: KeyPath, path: list[str | int]) -> list[tuple[list[str | int], Any]]:
    """(path, value) of what lies at ``keys`` in ``value`` (``*``: every key of a mapping); a
    value not shaped so is the schema's business and yields nothing."""
    if not keys:
        return [(path, value)]
    if not isinstance(value, dict):
        return []
    names = list(value) if keys[0] == "*" else [keys[0]] if keys[0] in value else []
    return [found for name in names for found in _at(value[name], keys[1:], [*path, name])]


def _matcher_regexes(value: Any, path: list[str | int]) -> list[tuple[list[str | int], str]]:
    """(path, pattern) of every ``{matches: pattern}`` matcher anywhere inside ``value``."""
    if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("matches"), str):
        return [([*path, "matches"], value["matches"])]
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    return [found for key, item in items for found in _matcher_regexes(item, [*path, key])]


def _strings(value: Any, path: list[str | int]) -> list[tuple[list[str | int], str]]:
    """(path, text) of each string of a string-or-list value; other items are the schema's business."""
    if isinstance(value, str):
        return [(path, value)]
    items = value if isinstance(value, list) else []
    return [([*path, i], item) for i, item in enumerate(items) if isinstance(item, str)]
