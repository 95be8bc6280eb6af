"""Finding cases: the case files that paths, folders and globs name, loading them all, ``-c`` and
``--tag`` selection, and the sources cases come from when no path is given.

Without explicit paths the sources are, least local first: the bundled suite,
installed case packs (entry point group ``tooltrial.suites``), the user's
folder (``$XDG_CONFIG_HOME/tooltrial/cases``, by default
``~/.config/tooltrial/cases``) and the project's folder (``.tooltrial/cases``
in the current directory). Cases merge by full id, the most local source
winning. Explicit paths (or ``--cases-dir``) replace all of them, so nothing
from the user's folder or a package leaks into such a run.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from runner.errors import CaseFileError, CaseFileWarning, Location, UserError, UserErrors
from runner.resources import bundled
from runner.spec.case import Case
from runner.spec.casefile import read_file
from runner.spec.notcases import RESULTS, RUNS_DIR, caseless_error, is_results_folder, not_a_case, results_error

CASE_SUFFIXES = (".yml", ".yaml", ".json")
_GLOB_CHARS = frozenset("*?[")


def discover(paths: Sequence[str | Path], cases_dir: Path | None = None) -> list[Path]:
    """The case files named by ``paths``, in order, each once.

    A path may be a file, a folder (its ``*.yml``, ``*.yaml`` and ``*.json``
    files, sorted; not recursive) or a shell glob (``cases/*.yml``; ``**``
    recurses). A folder or glob leaves out tooltrial's own files (``not_a_case``: results documents, the
    project config). No paths means every case file in ``cases_dir``, or in the
    bundled suite when that is None. Raises UserError (exit 4) naming a path
    that does not exist, a glob that matches no case file, a file or folder of tooltrial's results, a folder
    whose only files of those suffixes are tooltrial's own, or a folder of none that holds results folders or
    is a fixtures folder.
    """
    if not paths:
        paths = [cases_dir if cases_dir is not None else bundled("cases")]
    found = [file for given in paths for file in _expand(str(given))]
    return list(dict.fromkeys(found))


def _expand(given: str) -> list[Path]:
    path = Path(given)
    if path.is_dir():
        return _folder(path)
    if path.is_file():
        if not_a_case(path) == RESULTS:
            raise results_error(path)
        return [path]
    if not _GLOB_CHARS.intersection(given):
        raise UserError(f"no such file or folder: {given}")
    matches = [Path(m) for m in sorted(glob.glob(given, recursive=True))]
    files = [f for m in matches if not (is_results_folder(m) or m.name == RUNS_DIR and is_results_folder(m.parent))
             for f in (_case_files(m) if m.is_dir() else [m] if m.suffix in CASE_SUFFIXES else [])
             if not_a_case(f) is None]
    if not files:
        raise UserError(f"no case files match {given}", hint=f"case files end in {', '.join(CASE_SUFFIXES)}; "
                        "tooltrial's results and its tooltrial.yml are left out")
    return files


def _case_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.suffix in CASE_SUFFIXES and p.is_file())


def _folder(path: Path) -> list[Path]:
    """A folder's case files, tooltrial's own left out; raises UserError for a results folder, a folder whose
    only files of a case file's suffix are tooltrial's own, and one of no such files that holds results folders
    or is a fixtures folder (``caseless_error``)."""
    if is_results_folder(path):
        raise results_error(path)
    named = _case_files(path)
    if not named and (error := caseless_error(path)):
        raise error
    files = [p for p in named if not_a_case(p) is None]
    if named and not files:
        raise UserError(f"{path} holds no case files: {', '.join(f'{p.name} is {not_a_case(p)}' for p in named)}",
                        hint="give the folder of case files")
    return files


def load_cases(
    paths: Sequence[str | Path], cases_dir: Path | None = None, fixtures_dir: Path | None = None
) -> list[Case]:
    """Every case of every file ``discover`` finds, in file order (warnings left out:
    ``load_warned`` gives them).

    Raises UserError when discovery fails, and UserErrors with every error of
    every file, including a full id (``group/id``) defined in two files.
    """
    return load_warned(paths, cases_dir, fixtures_dir)[0]


def load_warned(
    paths: Sequence[str | Path], cases_dir: Path | None = None, fixtures_dir: Path | None = None
) -> tuple[list[Case], list[CaseFileWarning]]:
    """``load_cases``, and every file's warnings (runner.spec.tracerules), file by file in
    order. Raises as ``load_cases`` does: the UserErrors then list the warnings beside the errors."""
    cases: list[Case] = []
    problems: list[UserError] = []
    for file in discover(paths, cases_dir):
        found, bad = read_file(file, fixtures_dir)
        cases += found
        problems += bad
    problems += _duplicates_across_files(cases)
    if any(not isinstance(e, CaseFileWarning) for e in problems):
        raise UserErrors(problems)
    return cases, [e for e in problems if isinstance(e, CaseFileWarning)]


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


ENTRY_POINT_GROUP = "tooltrial.suites"
PROJECT_DIR = Path(".tooltrial") / "cases"
CASES_DIR = Path("cases")

BUNDLED, CASES, PACKAGE, USER, PROJECT, PATHS = "bundled", "cases", "package", "user", "project", "path"


@dataclass(frozen=True)
class Source:
    """One place cases are read from.

    Attributes:
        kind: ``bundled``, ``cases`` (./cases), ``package``, ``user``, ``project`` or ``path``.
        label: what ``list --sources`` shows: the kind, or ``package <distribution>``.
        paths: case files, folders or globs, as ``runner.spec.casefile.discover`` takes them.
    """

    kind: str
    label: str
    paths: tuple[Path | str, ...]

    def files(self) -> list[Path]:
        """The case files of this source. Raises UserError for a path that finds nothing."""
        return discover(self.paths)


@dataclass(frozen=True)
class Sourced:
    """A case with the source it came from and the less local sources it replaced, in order."""

    case: Case
    source: Source
    overrides: tuple[Source, ...] = ()


def user_cases_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/tooltrial/cases``, or ``~/.config/tooltrial/cases`` when that is unset or empty."""
    env = os.environ if environ is None else environ
    config = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(config) / "tooltrial" / "cases"


def package_sources() -> list[Source]:
    """One source per ``tooltrial.suites`` entry point, sorted by entry point name.

    An entry point names a callable that returns the path of a folder of case
    files (fixtures go in a ``fixtures`` folder beside it). Raises UserError
    naming the entry point when it cannot be loaded or gives no such folder.
    """
    sources = []
    for point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        where = f"case pack {point.name!r} ({point.value})"
        try:
            target = point.load()
            folder = target() if callable(target) else target
        except Exception as e:  # third-party code: whatever it raises is its author's to fix
            raise UserError(f"{where} failed to load: {type(e).__name__}: {e}") from e
        if not isinstance(folder, (str, os.PathLike)) or not Path(folder).is_dir():
            hint = "return the path of a folder of case files"
            raise UserError(f"{where} did not return a folder: {folder!r}", hint=hint)
        name = point.dist.name if point.dist is not None else point.name
        sources.append(Source(PACKAGE, f"{PACKAGE} {name}", (Path(folder),)))
    return sources


def select_sources(
    paths: Sequence[str | Path] = (),
    cases_dir: Path | None = None,
    user: bool = True,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Source]:
    """The sources of one command, least local first.

    ``paths`` (else ``cases_dir``) make the only source. Otherwise: the ``cases``
    folder under ``cwd`` (default: the current directory) when it exists, else the
    bundled suite; the case packs, the user's folder (unless ``user`` is False) and
    the project's folder under ``cwd``, each folder only when it exists.
    """
    if paths:
        return [Source(PATHS, PATHS, tuple(paths))]
    if cases_dir is not None:
        return [Source(PATHS, PATHS, (cases_dir,))]
    here = cwd or Path.cwd()
    sources = [_base(CASES_DIR if cwd is None else cwd / CASES_DIR), *package_sources()]  # as given: messages name it so
    folders = [(USER, user_cases_dir(environ))] if user else []
    folders.append((PROJECT, here / PROJECT_DIR))
    sources += [Source(kind, kind, (folder,)) for kind, folder in folders if folder.is_dir()]
    return sources


def _base(folder: Path) -> Source:
    """The least local source: ``folder`` (the project's ``cases``) when it exists, else the bundled
    suite (which ``folder`` is, in tooltrial's own checkout)."""
    suite = bundled("cases")
    if folder.is_dir() and folder.resolve() != suite.resolve():
        return Source(CASES, CASES, (folder,))
    return Source(BUNDLED, BUNDLED, (suite,))


def load_sourced(sources: Sequence[Source], fixtures_dir: Path | None = None) -> list[Sourced]:
    """Every case of ``sources`` merged by full id, a later (more local) source replacing an earlier one.

    A case keeps the place of the first case with its id. Two files of one
    source defining the same id is an error. Raises UserErrors with every
    error of every source.
    """
    return load_sourced_warned(sources, fixtures_dir)[0]


def load_sourced_warned(
    sources: Sequence[Source], fixtures_dir: Path | None = None
) -> tuple[list[Sourced], list[CaseFileWarning]]:
    """``load_sourced``, and the warnings of every source's files, in order."""
    merged: dict[str, Sourced] = {}
    errors: list[UserError] = []
    warnings: list[CaseFileWarning] = []
    for source in sources:
        try:
            cases, found = load_warned(source.paths, fixtures_dir=fixtures_dir)
            warnings += found
        except UserErrors as e:
            errors += e.errors
            continue
        except UserError as e:
            errors.append(e)
            continue
        for case in cases:
            earlier = merged.get(case.full_id)
            overrides = (*earlier.overrides, earlier.source) if earlier else ()
            merged[case.full_id] = Sourced(case, source, overrides)
    if errors:
        raise UserErrors([*warnings, *errors])
    return list(merged.values()), warnings
