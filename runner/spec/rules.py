"""The rules the case schema cannot say, each reported where the value was written.

Ids are unique in a file; the fixture folder exists, is reached from its fixtures folder with no
symbolic link on the way (runner.spec.fixture) and holds nothing the workspace copy refuses (named
pipes, sockets, devices); every regex the check table names compiles
(``matches`` in replies, files and argument matchers, per-turn ones too);
the tools and parameters a case names (runner.spec.tracerules); ``files`` paths stay
inside the workspace; mocks have unique names, a valid ``parameters`` schema
(checked once per distinct schema), and responses that give exactly one of
``result``/``error``, at most one of them without ``when``; no ``verify`` or ``check`` command is blank;
MCP servers as runner.spec.mcpservers says; a case gives ``turns`` or a
simulated ``user`` (runner.spec.conversation); an inline ``agent`` as runner.spec.agentspec
says, and for a case with an ``agent`` no rule about tool names (the agent's tools are its own).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

import regex

from runner.checks.table import KINDS, KeyPath
from runner.errors import CaseFileError, did_you_mean
from runner.patterns import compile_pattern, quoted
from runner.resources import bundled
from runner.spec.agentspec import case_agent_errors
from runner.spec.conversation import conversation_errors
from runner.spec.fixture import LINK_HINT, beside_link, link_on_the_way, special_kind
from runner.spec.injectrules import inject_errors, twin_clashes
from runner.spec.jsonpaths import response_json_errors
from runner.spec.mcpservers import mcp_server_errors
from runner.spec.positions import Spot, position, written
from runner.spec.schemacheck import schema_problem
from runner.spec.tracerules import script_call_errors, strings_at, tool_rule_errors

Checked = list[tuple[Spot, dict[str, Any]]]  # each case merged over the defaults, with its Spot


def extra_rule_errors(checked: Checked, defaults: Spot | None, fixtures: Path) -> list[CaseFileError]:
    """Every extra-rule error of the file's cases."""
    return _duplicate_ids(checked) + twin_clashes(checked) + _rules(checked, defaults, fixtures)


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
                errors.append(written(path, spot, defaults).error(f"invalid regex {quoted(pattern)}: {e}", path))
        if "agent" in case:  # an external agent's tools are its own: no name of them is known here
            errors += case_agent_errors(case, spot, defaults)
        else:
            errors += tool_rule_errors(case, spot, defaults) + script_call_errors(case, spot, defaults)
        errors += _file_path_errors(case, spot, defaults) + inject_errors(case, spot, defaults)
        errors += _mock_errors(case, spot, defaults) + _verify_errors(case, spot, defaults)
        errors += mcp_server_errors(case, spot, defaults) + conversation_errors(case, spot, defaults)
        errors += response_json_errors(case, spot, defaults)
    return errors


def _verify_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Each ``expect.verify`` and ``expect.check`` command holds more than blanks: an empty command exits 0 in
    every shell, so the check would pass whatever the agent did."""
    expect = case["expect"] if isinstance(case.get("expect"), dict) else {}
    check = expect.get("check")
    items = check if isinstance(check, list) else [check]
    commands = strings_at(expect.get("verify"), ["expect", "verify"]) + strings_at(check, ["expect", "check"]) + [
        (["expect", "check", *([i] if isinstance(check, list) else []), "run"], item["run"])
        for i, item in enumerate(items) if isinstance(item, dict) and isinstance(item.get("run"), str)]
    errors = []
    for path, command in commands:
        if not command.strip():
            kind = path[1]
            hint = f"write a shell command that exits 0 only when the task is done, or remove {kind}"
            errors.append(written(path, spot, defaults).error(f"empty {kind} command: it passes whatever the agent did",
                                                              path, hint=hint))
    return errors


def _file_path_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Paths under ``files`` and ``expect.files`` stay inside the workspace."""
    expect = case["expect"] if isinstance(case.get("expect"), dict) else {}
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
    beside = beside_link(fixtures, Path(spot.file))
    if beside is not None:
        return [spot.error(f"fixture {fixture!r}: {beside[0]}", ["fixture"], hint=beside[1])]
    link = link_on_the_way(fixtures, fixture)
    if link is not None:
        return [spot.error(link, ["fixture"], hint=LINK_HINT)]
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
            what = special_kind(mode)
            if what is not None:
                return f"{Path(folder, name).relative_to(root).as_posix()} ({what})"
    return None


def _mock_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Duplicate mock names, invalid ``parameters`` schemas, and malformed ``responses``."""
    mocks = case["mocks"] if isinstance(case.get("mocks"), list) else []
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
        problem = schema_problem(mock["parameters"]) if isinstance(mock.get("parameters"), dict) else None
        if problem is not None:
            errors.append(here.error(problem, ["mocks", i, "parameters"]))
        responses = mock["responses"] if isinstance(mock.get("responses"), list) else []
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
    turn (response_matches, files.*.matches, ``{matches: ...}`` matchers in trace.args) and ``expect.attack``, and
    in the mocks' ``when``."""
    expect = case.get("expect")
    found = _expect_regexes(expect, ["expect"])
    if isinstance(expect, dict):  # the attacker's checks (runner.spec.inject) hold patterns too
        found += _expect_regexes(expect.get("attack"), ["expect", "attack"])
    for i, turn in enumerate(case["turns"] if isinstance(case.get("turns"), list) else []):
        if isinstance(turn, dict):
            found += _expect_regexes(turn.get("expect"), ["turns", i, "expect"])
    for i, mock in enumerate(case["mocks"] if isinstance(case.get("mocks"), list) else []):
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
                found += [hit for path, value in _at(expect[name], keys, [*at, name]) for hit in strings_at(value, path)]
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
    if isinstance(value, dict):
        if len(value) == 1 and isinstance(value.get("matches"), str):
            return [([*path, "matches"], value["matches"])]
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return []
    # Only containers can hold a matcher: scalars are not walked into.
    return [found for key, item in items if isinstance(item, (dict, list))
            for found in _matcher_regexes(item, [*path, key])]
