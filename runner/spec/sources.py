"""Where cases come from, and which one wins when two sources define the same ``group/id``.

Without explicit paths the sources are, least local first: the bundled suite,
installed case packs (entry point group ``tooltrial.suites``), the user's
folder (``$XDG_CONFIG_HOME/tooltrial/cases``, by default
``~/.config/tooltrial/cases``) and the project's folder (``.tooltrial/cases``
in the current directory). Cases merge by full id, the most local source
winning. Explicit paths (or ``--cases-dir``) replace all of them, so nothing
from the user's folder or a package leaks into such a run.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from runner.spec.cases import Case, discover, load_cases
from runner.errors import UserError, UserErrors
from runner.resources import bundled

ENTRY_POINT_GROUP = "tooltrial.suites"
PROJECT_DIR = Path(".tooltrial") / "cases"

BUNDLED, PACKAGE, USER, PROJECT, PATHS = "bundled", "package", "user", "project", "path"


@dataclass(frozen=True)
class Source:
    """One place cases are read from.

    Attributes:
        kind: ``bundled``, ``package``, ``user``, ``project`` or ``path``.
        label: what ``list --sources`` shows: the kind, or ``package <distribution>``.
        paths: case files, folders or globs, as ``runner.cases.discover`` takes them.
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

    ``paths`` (else ``cases_dir``) make the only source. Otherwise: the bundled
    suite, the case packs, the user's folder (unless ``user`` is False) and the
    project's folder under ``cwd`` (default: the current directory), each
    folder only when it exists.
    """
    if paths:
        return [Source(PATHS, PATHS, tuple(paths))]
    if cases_dir is not None:
        return [Source(PATHS, PATHS, (cases_dir,))]
    sources = [Source(BUNDLED, BUNDLED, (bundled("cases"),)), *package_sources()]
    folders = [(USER, user_cases_dir(environ))] if user else []
    folders.append((PROJECT, (cwd or Path.cwd()) / PROJECT_DIR))
    sources += [Source(kind, kind, (folder,)) for kind, folder in folders if folder.is_dir()]
    return sources


def load_sourced(sources: Sequence[Source], fixtures_dir: Path | None = None) -> list[Sourced]:
    """Every case of ``sources`` merged by full id, a later (more local) source replacing an earlier one.

    A case keeps the place of the first case with its id. Two files of one
    source defining the same id is an error. Raises UserErrors with every
    error of every source.
    """
    merged: dict[str, Sourced] = {}
    errors: list[UserError] = []
    for source in sources:
        try:
            cases = load_cases(source.paths, fixtures_dir=fixtures_dir)
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
        raise UserErrors(errors)
    return list(merged.values())
