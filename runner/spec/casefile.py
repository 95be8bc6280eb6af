"""One case file: its text read, parsed (fast path first, then with positions), validated as
a whole, and its cases built; both shapes (a list of cases, or ``{defaults, cases}``) and the
one defaults merge.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.errors import CaseFileError, CaseFileWarning, Location, UserError, did_you_mean, in_file_order
from runner.names import ID_PATTERN
from runner.resources import bundled
from runner.spec.case import Case, build_case
from runner.spec.dataset import RENDERED, Row, Rows, expand, expands, first_of_each
from runner.spec.defaults import merged_case
from runner.spec.fastyaml import fast_load
from runner.spec.foreign import replio
from runner.spec.inject import with_twins
from runner.spec.narrow import narrowed
from runner.spec.positions import Spot, kind_of, position
from runner.spec.rules import Checked, extra_rule_errors
from runner.spec.schema import compiled, merged_errors, partial_errors, surely_valid
from runner.spec.source import parse, to_plain


def load_file(path: Path, fixtures_dir: Path | None = None) -> list[Case]:
    """The cases of one case file, defaults merged and normalised (see ``Case``).

    ``fixtures_dir`` is where fixtures are looked up; None means the
    ``fixtures`` folder beside the case file's folder if there is one, else the
    bundled fixtures. Raises CaseFileError: the file's first error, by position (a warning
    stops nothing).
    """
    cases, problems = read_file(Path(path), fixtures_dir)
    errors = [e for e in problems if not isinstance(e, CaseFileWarning)]
    if errors:
        raise errors[0]
    return cases


def validate_file(path: Path, fixtures_dir: Path | None = None) -> list[UserError]:
    """Every error and warning of one case file (CaseFileErrors, CaseFileWarnings among them,
    sorted by position); [] when it is valid."""
    return list(read_file(Path(path), fixtures_dir)[1])


def read_file(path: Path, fixtures_dir: Path | None) -> tuple[list[Case], list[CaseFileError]]:
    """The cases of one file (a case file or a replio fixture) and its errors and warnings
    (CaseFileWarning), in file order; no cases unless it has no error, warnings or not.

    A case file is read on the fast path (runner.spec.fastyaml) first; when that gives up, the
    file is read again with positions, which every message needs; when the file has an error or
    warning, just the cases it lies in are (runner.spec.narrow), or the whole file when it lies in none.
    """
    file = str(path)
    try:
        text = _text(path)
    except CaseFileError as e:
        return [], [e]
    fixtures = fixtures_dir if fixtures_dir is not None else _default_fixtures(path)
    fast = fast_load(text) if ID_PATTERN.fullmatch(path.stem) else None
    if fast is not None and not replio.is_fixture(fast.data):
        checked, problems = check_file(Spot(file, fast.data, empty="(file)"), fast.data, fixtures)
        errors: list[CaseFileError] = []
        if problems:  # read again with positions: the problems' cases alone when they are the problems' only place
            narrow = narrowed(text, fast, problems, lambda data: check_file(Spot(file, data, empty="(file)"), data, fixtures)[1])
            if narrow is None:
                return _read_positioned(path, text, fixtures)
            errors = _read_positioned(path, narrow, fixtures)[1]
            if any(not isinstance(e, CaseFileWarning) for e in errors):
                return [], errors
        resolved = fixtures.resolve()
        lines = fast.lines
        cases = (build_case(path, path.stem, lines[id(spot.node)], merged, resolved) for spot, merged in checked)
        return with_twins(cases), errors
    return _read_positioned(path, text, fixtures)


def _read_positioned(path: Path, text: str, fixtures: Path) -> tuple[list[Case], list[CaseFileError]]:
    """``read_file`` of ``text`` by the round-trip parser, which keeps every position."""
    file = str(path)
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
    if any(not isinstance(e, CaseFileWarning) for e in errors):
        return [], errors
    resolved = fixtures.resolve()
    return with_twins(build_case(path, group, position(case_spot.node, ())[0], merged, resolved)
                      for case_spot, merged in checked), errors


def _check_case_file(spot: Spot, data: Any, fixtures: Path) -> tuple[Checked, list[CaseFileError]]:
    """``check_file``, and the file's stem must be a valid group name."""
    errors: list[CaseFileError] = []
    stem = Path(spot.file).stem
    if not ID_PATTERN.fullmatch(stem):
        hint = f"rename the file to match {ID_PATTERN.pattern}"
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


_FILE_KEYS = ("defaults", "cases")


def check_file(spot: Spot, data: Any, fixtures: Path) -> tuple[Checked, list[CaseFileError]]:
    """Validate a whole case file: ``data`` is ``to_plain`` of ``spot.node``, the file's top node.

    Returns each case mapping merged over the file's defaults, with the Spot of
    the case, and every error of the file, each once, sorted by position.
    ``fixtures`` is the folder that ``fixture`` keys name folders in.
    """
    errors: list[CaseFileError] = []
    parts = _split(spot, data, errors)
    full, partial = compiled()
    if parts.spot:
        if not surely_valid(partial, parts.defaults):
            errors += partial_errors(parts.defaults, parts.spot)
        if "id" in parts.defaults:
            hint = "give each case its own id"
            errors.append(parts.spot.error("'id' cannot have a default", at=["id"], key=True, hint=hint))
    checked: Checked = []
    expansions: list[list[tuple[Row, dict[str, Any]]] | None] = []
    datasets: dict[Path, Rows] = {}
    for case_spot, case in parts.cases:
        merged = merged_case(case, parts.defaults)
        found: list[CaseFileError] = []
        # Without defaults the merged case is the case, and valid in full means valid in part too.
        if not (surely_valid(full, merged) and (not parts.defaults or surely_valid(partial, case))):
            found = partial_errors(case, case_spot) + merged_errors(merged, case_spot, parts.spot)
        errors += found
        checked.append((case_spot, merged))
        made, problems = expand(case_spot, merged, datasets) if expands(merged) and not found else (None, [])
        expansions.append(made)
        errors += problems
    rule_errors = extra_rule_errors(checked, parts.spot, fixtures)
    errors += rule_errors
    if any(made is not None for made in expansions):
        checked, more = _expanded(checked, expansions, parts.spot, fixtures, {e.render() for e in rule_errors})
        errors += more
    unique = {error.render(): error for error in errors}
    return checked, in_file_order(unique.values())


def _expanded(
    checked: Checked, expansions: list[list[tuple[Row, dict[str, Any]]] | None], defaults: Spot | None,
    fixtures: Path, known: set[str],
) -> tuple[Checked, list[CaseFileError]]:
    """Each case naming a dataset or matrix replaced by the cases it expands into (runner.spec.dataset),
    and the errors a row's values make (not the case's own, ``known``), each at its row."""
    full, _ = compiled()
    ids = {case.get("id") for (_, case), made in zip(checked, expansions, strict=True) if made is None}
    found: Checked = []
    errors: list[CaseFileError] = []
    for (spot, case), made in zip(checked, expansions, strict=True):
        for row, one in made if made is not None else [(None, case)]:
            found.append((spot, one))
            if row is None:
                continue
            if one["id"] in ids:
                errors.append(row.error(f"duplicate id {one['id']!r}", hint="ids must be unique in a file"))
            ids.add(one["id"])
            if all(one.get(key) is case.get(key) for key in RENDERED):
                continue  # nothing rendered: valid as the case is
            problems = [] if surely_valid(full, one) else partial_errors(one, spot) + merged_errors(one, spot, defaults)
            problems += extra_rule_errors([(spot, one)], defaults, fixtures)
            errors += [_at_row(e, row) for e in problems if e.render() not in known]
    return found, first_of_each(errors)


def _at_row(error: CaseFileError, row: Row) -> CaseFileError:
    """An expanded case's error at the row whose values made it."""
    hint = f"{error.hint}; the value comes from {row.label}" if error.hint else f"the value comes from {row.label}"
    moved = row.error(error.message, error.path, hint=hint)
    return CaseFileWarning(moved.message, moved.location, moved.path, moved.hint) if isinstance(error, CaseFileWarning) else moved


@dataclass
class _Parts:
    """A case file taken apart: the defaults (with their Spot when written) and the case mappings."""

    defaults: dict[str, Any] = field(default_factory=dict)
    spot: Spot | None = None
    cases: Checked = field(default_factory=list)


def _split(spot: Spot, data: Any, errors: list[CaseFileError]) -> _Parts:
    """The parts of a file of either form; what is wrong with its shape goes to ``errors``."""
    if isinstance(data, list):
        return _Parts(cases=_cases(spot, data, [], errors))
    if data is None:
        errors.append(spot.error("the file is empty", hint="write a list of cases, each starting with '- id:'"))
    elif not isinstance(data, dict):
        errors.append(spot.error(f"expected a list of cases, got {kind_of(data)}"))
    elif "cases" not in data and {"id", "turns"} & data.keys():
        errors.append(spot.error("expected a list of cases, got a single case", hint="start the case with '- '"))
    else:
        return _wrapper(spot, data, errors)
    return _Parts()


def _wrapper(spot: Spot, data: dict[str, Any], errors: list[CaseFileError]) -> _Parts:
    """The parts of a ``{defaults, cases}`` file."""
    for key in data.keys() - set(_FILE_KEYS):
        hint = did_you_mean(key, _FILE_KEYS, "allowed: " + ", ".join(_FILE_KEYS))
        errors.append(spot.error(f"unknown key {key!r}", at=[key], key=True, hint=hint))
    parts = _Parts()
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        errors.append(spot.error(f"expected a mapping, got {kind_of(defaults)}", ["defaults"]))
    elif "defaults" in data:
        parts = _Parts(defaults, Spot(spot.file, spot.node["defaults"], ("defaults",)))
    cases = data.get("cases")
    if isinstance(cases, list):
        parts.cases = _cases(spot, cases, ["cases"], errors)
    elif "cases" in data:
        errors.append(spot.error(f"expected a list of cases, got {kind_of(cases)}", ["cases"]))
    elif not difflib.get_close_matches("cases", list(data), n=1):  # else reported as a misspelling
        errors.append(spot.error("missing required key 'cases'"))
    return parts


def _cases(spot: Spot, cases: list[Any], at: list[str], errors: list[CaseFileError]) -> Checked:
    """The case mappings of the list at ``at`` (a path from the file's top), each with its Spot."""
    if not cases:
        errors.append(spot.error("no cases", at=at, hint="add a case: '- id: ...'"))
    node = spot.node[at[0]] if at else spot.node
    found = []
    for index, case in enumerate(cases):
        if isinstance(case, dict):
            found.append((Spot(spot.file, node[index]), case))
        else:
            errors.append(spot.error(f"each case must be a mapping, got {kind_of(case)}", at=[*at, index]))
    return found
