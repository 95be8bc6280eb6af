"""Case files: discovery, YAML loading with positions, schema validation, the Case model, filters.

A case file is a group (its stem is the group name) holding a list of cases or
``{defaults: {...}, cases: [...]}``; see DESIGN.md "Case files". Parsing with
positions lives in ``runner.yamlpos``, validation in ``runner.caseload``.
"""

from __future__ import annotations

import fnmatch
import glob
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from runner.spec.foreign import replio
from runner.spec.caseload import case_schema, check_file
from runner.spec.rules import Checked
from runner.errors import CaseFileError, Location, UserError, UserErrors
from runner.spec.fastyaml import fast_load
from runner.resources import bundled
from runner.spec.yamlpos import Spot, parse, position, to_plain

__all__ = ["Case", "case_schema", "discover", "load_cases", "load_file", "select", "validate_file"]

DEFAULT_MAX_TURNS = 30
CASE_SUFFIXES = (".yml", ".yaml", ".json")
GROUP_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")
_GLOB_CHARS = frozenset("*?[")
_LIST_EXPECTATIONS = ("verify", "response_contains", "response_not_contains", "response_matches")
_LIST_FILE_EXPECTATIONS = ("contains", "not_contains", "matches")


@dataclass(frozen=True)
class Case:
    """One case of a group (a case file), after defaults are merged.

    Attributes:
        group: the case file's stem (``replio`` for a replio fixture).
        id: unique within the group.
        source: the case file it came from.
        line: 1-based line of the case in ``source``.
        turns: prompt templates sent in order.
        turn_expect: per turn, the checks written on it (``{content, expect}`` turns), ``{}`` for none;
            empty when no turn has any.
        expect: the validated ``expect`` mapping; check kinds read their own key.
        script: the scripted provider's replies (``content`` / ``tool_calls``) or None.
        timeout: wall-clock seconds for the whole run, or None for the default.
        command_timeout: seconds allowed to each command (setup, tools, verify), or None for the default.
        network: whether agent commands may reach the network (sandboxed runs).
        runs / min_pass_rate: this case's repeat count and pass-rate gate, or None for the suite's.
        tools: names offered to the model, None meaning every builtin plus the mocks.
    """

    group: str
    id: str
    source: Path
    line: int
    turns: tuple[str, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    fixture: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    setup: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    vars: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None
    tools: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    mocks: tuple[Mapping[str, Any], ...] = ()
    expect: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    script: tuple[Mapping[str, Any], ...] | None = None
    fixtures_dir: Path | None = None
    command_timeout: float | None = None
    network: bool = False
    runs: int | None = None
    min_pass_rate: float | None = None
    turn_expect: tuple[Mapping[str, Any], ...] = ()

    @property
    def full_id(self) -> str:
        return f"{self.group}/{self.id}"

    @property
    def max_turns(self) -> int:
        return int(self.expect.get("max_turns", DEFAULT_MAX_TURNS))


def discover(paths: Sequence[str | Path], cases_dir: Path | None = None) -> list[Path]:
    """The case files named by ``paths``, in order, each once.

    A path may be a file, a folder (its ``*.yml``, ``*.yaml`` and ``*.json``
    files, sorted; not recursive) or a shell glob (``cases/*.yml``; ``**``
    recurses). No paths means every case file in ``cases_dir``, or in the
    bundled suite when that is None. Raises UserError (exit 4) naming a path
    that does not exist or a glob that matches no case file.
    """
    if not paths:
        paths = [cases_dir if cases_dir is not None else bundled("cases")]
    found = [file for given in paths for file in _expand(str(given))]
    return list(dict.fromkeys(found))


def _expand(given: str) -> list[Path]:
    path = Path(given)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in CASE_SUFFIXES and p.is_file())
    if path.is_file():
        return [path]
    if not _GLOB_CHARS.intersection(given):
        raise UserError(f"no such file or folder: {given}")
    matches = [Path(m) for m in sorted(glob.glob(given, recursive=True))]
    files = [f for m in matches if m.is_dir() or m.suffix in CASE_SUFFIXES for f in _expand(str(m))]
    if not files:
        raise UserError(f"no case files match {given}", hint=f"case files end in {', '.join(CASE_SUFFIXES)}")
    return files


def load_file(path: Path, fixtures_dir: Path | None = None) -> list[Case]:
    """The cases of one case file, defaults merged and normalised (see ``Case``).

    ``fixtures_dir`` is where fixtures are looked up; None means the
    ``fixtures`` folder beside the case file's folder if there is one, else the
    bundled fixtures. Raises CaseFileError: the file's first error, by position.
    """
    cases, errors = _read(Path(path), fixtures_dir)
    if errors:
        raise errors[0]
    return cases


def validate_file(path: Path, fixtures_dir: Path | None = None) -> list[UserError]:
    """Every error of one case file (CaseFileErrors, sorted by position); [] when it is valid."""
    return list(_read(Path(path), fixtures_dir)[1])


def load_cases(
    paths: Sequence[str | Path], cases_dir: Path | None = None, fixtures_dir: Path | None = None
) -> list[Case]:
    """Every case of every file ``discover`` finds, in file order.

    Raises UserError when discovery fails, and UserErrors with every error of
    every file, including a full id (``group/id``) defined in two files.
    """
    cases: list[Case] = []
    errors: list[UserError] = []
    for file in discover(paths, cases_dir):
        found, bad = _read(file, fixtures_dir)
        cases += found
        errors += bad
    errors += _duplicates_across_files(cases)
    if errors:
        raise UserErrors(errors)
    return cases


def _duplicates_across_files(cases: Sequence[Case]) -> list[UserError]:
    """A full id defined again in another file (two files with one stem), at the later case."""
    first: dict[str, Case] = {}
    errors: list[UserError] = []
    for case in cases:
        earlier = first.setdefault(case.full_id, case)
        if earlier is not case:
            hint = f"also defined at {earlier.source}:{earlier.line}; rename one or the file"
            where = Location(str(case.source), case.line)
            errors.append(CaseFileError(f"duplicate case {case.full_id!r}", where, "id", hint))
    return errors


def select(cases: Sequence[Case], globs: Sequence[str] = (), tags: Sequence[str] = ()) -> list[Case]:
    """The cases whose full id (``group/id``) matches any of ``globs`` (fnmatch) and that have any of ``tags``.

    An empty filter keeps every case; order is preserved.
    """
    return [
        case
        for case in cases
        if (not globs or any(fnmatch.fnmatchcase(case.full_id, g) for g in globs))
        and (not tags or set(tags).intersection(case.tags))
    ]


def _read(path: Path, fixtures_dir: Path | None) -> tuple[list[Case], list[CaseFileError]]:
    """The cases of one file (a case file or a replio fixture) and its errors; no cases unless it has no error.

    A case file is read on the fast path (runner.fastyaml) first; when that gives up or the
    file has any error, it is read again with positions, which every error message needs.
    """
    file = str(path)
    try:
        text = _text(path)
    except CaseFileError as e:
        return [], [e]
    fixtures = fixtures_dir if fixtures_dir is not None else _default_fixtures(path)
    fast = fast_load(text) if GROUP_PATTERN.fullmatch(path.stem) else None
    if fast is not None and not replio.is_fixture(fast.data):
        checked, problems = check_file(Spot(file, fast.data, empty="(file)"), fast.data, fixtures)
        if not problems:
            resolved = fixtures.resolve()
            lines = fast.lines
            return [_to_case(path, path.stem, lines[id(spot.node)], merged, resolved) for spot, merged in checked], []
    try:
        root = parse(text, file)
        data = to_plain(root, file)
    except CaseFileError as e:
        return [], [e]
    spot = Spot(file, root, empty="(file)")
    if replio.is_fixture(data):
        group = replio.GROUP
        checked, errors = replio.check_fixture(spot, data, path.stem, fixtures)
    else:
        group = path.stem
        checked, errors = _check_case_file(spot, data, fixtures)
    if errors:
        return [], errors
    resolved = fixtures.resolve()
    return [_to_case(path, group, position(case_spot.node, ())[0], merged, resolved) for case_spot, merged in checked], []


def _check_case_file(spot: Spot, data: Any, fixtures: Path) -> tuple[Checked, list[CaseFileError]]:
    """``check_file``, and the file's stem must be a valid group name."""
    errors: list[CaseFileError] = []
    stem = Path(spot.file).stem
    if not GROUP_PATTERN.fullmatch(stem):
        hint = f"rename the file to match {GROUP_PATTERN.pattern}"
        errors.append(CaseFileError(f"group name {stem!r} is not valid", Location(spot.file), "(file)", hint))
    checked, problems = check_file(spot, data, fixtures)
    return checked, errors + problems


def _text(path: Path) -> str:
    """The file's text; raises CaseFileError when it cannot be read or is not UTF-8."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise CaseFileError(f"cannot read the file: {e.strerror}", Location(str(path))) from e
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        column = e.start - raw.rfind(b"\n", 0, e.start)
        raise CaseFileError("the file is not UTF-8 text", Location(str(path), line, column)) from e


def _default_fixtures(path: Path) -> Path:
    """``fixtures`` beside the case file's folder when it exists, else the bundled fixtures."""
    beside = path.resolve().parent.parent / "fixtures"
    return beside if beside.is_dir() else bundled("fixtures")


def _to_case(path: Path, group: str, line: int, data: dict[str, Any], fixtures: Path) -> Case:
    """A validated case mapping (merged over the defaults), starting at ``line``, as a Case of ``group``."""
    return Case(
        group=group,
        id=data["id"],
        source=path,
        line=line,
        turns=tuple(t["content"] if isinstance(t, dict) else t for t in data["turns"]),
        description=data.get("description", ""),
        tags=tuple(data.get("tags", ())),
        fixture=data.get("fixture"),
        files=data.get("files", {}),
        setup=tuple(_as_list(data.get("setup", []))),
        env={name: _env_text(value) for name, value in data.get("env", {}).items()},
        vars=data.get("vars", {}),
        system=data.get("system"),
        tools=tuple(data["tools"]) if "tools" in data else None,
        deny=tuple(data.get("deny", ())),
        mocks=tuple(_mock(mock) for mock in data.get("mocks", ())),
        expect=_expect(data.get("expect", {})),
        timeout=float(data["timeout"]) if "timeout" in data else None,
        script=tuple(_reply(reply) for reply in data["script"]) if "script" in data else None,
        fixtures_dir=fixtures,
        command_timeout=float(data["command_timeout"]) if "command_timeout" in data else None,
        network=bool(data.get("network", False)),
        runs=data.get("runs"),
        min_pass_rate=data.get("min_pass_rate"),
        turn_expect=_turn_expect(data["turns"]),
    )


def _turn_expect(turns: list[str | dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Each turn's normalised ``expect`` (``{}`` for none); () when no turn has one."""
    found = tuple(_expect(t.get("expect", {})) if isinstance(t, dict) else {} for t in turns)
    return found if any(found) else ()


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _env_text(value: str | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _expect(expect: dict[str, Any]) -> dict[str, Any]:
    """``expect`` with every string-or-list value as a list."""
    out = dict(expect)
    for key in _LIST_EXPECTATIONS:
        if key in out:
            out[key] = _as_list(out[key])
    if "files" in out:
        out["files"] = {name: _file_expect(spec) for name, spec in out["files"].items()}
    return out


def _file_expect(spec: dict[str, Any]) -> dict[str, Any]:
    return {key: _as_list(value) if key in _LIST_FILE_EXPECTATIONS else value for key, value in spec.items()}


def _mock(mock: dict[str, Any]) -> dict[str, Any]:
    """A mock tool with every key present: name, description, parameters, responses."""
    return {"description": "", "parameters": {"type": "object", "properties": {}}, "responses": [], **mock}


def _reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A script reply whose tool calls all have ``arguments`` (default {})."""
    if "tool_calls" not in reply:
        return reply
    return {**reply, "tool_calls": [{"arguments": {}, **call} for call in reply["tool_calls"]]}
