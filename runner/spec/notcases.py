"""tooltrial's own files where case files are looked for: the results documents it writes (run files and
report.json, runner.output.store) and the project config, which a folder or glob of cases leaves out
(runner.spec.discover) and a path naming them is refused with what to give instead; so is a folder of
no case files that is a folder of results folders or a fixtures folder."""

from __future__ import annotations

import re
from pathlib import Path

from runner.errors import UserError
from runner.spec.config import CONFIG_NAME

RESULTS = "a results document tooltrial wrote"
RUNS_DIR = "runs"  # a results folder's folder of run files (runner.output.store.RUNS_DIR)
FIXTURES_DIR = "fixtures"  # the fixtures folder beside a case file's folder (runner.spec.casefile)
_HEAD = re.compile(rb'\A\s*\{\s*"schema_version"\s*:')  # how run files and report.json start; case files never do
_HEAD_BYTES = 256


def not_a_case(path: Path) -> str | None:
    """What ``path`` is when it is one of tooltrial's own files rather than a case file, else None: ``RESULTS`` for
    a JSON document that starts with ``schema_version`` (a run file, a report.json), ``the project config`` for a
    file named tooltrial.yml. Reads at most the file's first 256 bytes; a file it cannot read is None (reading it
    as a case file says why)."""
    if path.name == CONFIG_NAME:
        return "the project config"
    if path.suffix != ".json":
        return None
    try:
        with path.open("rb") as file:
            head = file.read(_HEAD_BYTES)
    except OSError:
        return None
    return RESULTS if _HEAD.match(head.removeprefix(b"\xef\xbb\xbf")) else None


def is_results_folder(path: Path) -> bool:
    """Whether ``path`` is a ``results/<run-id>/`` folder: a file of its ``runs/`` is a results document (a
    report.json alone, as ``run --report`` writes beside case files, does not make one)."""
    runs = path / RUNS_DIR
    return runs.is_dir() and any(not_a_case(p) == RESULTS for p in runs.glob("*.json"))


def results_error(path: Path) -> UserError:
    """The error for ``path``, a results folder or document, given where case files were expected."""
    folder = path if path.is_dir() else path.parent.parent if path.parent.name == RUNS_DIR else path.parent
    what = "a results folder" if path.is_dir() else "a results document"
    read = f"; 'tooltrial report {folder}' reads the results" if is_results_folder(folder) else ""
    return UserError(f"{path} is {what} tooltrial wrote, not case files",
                     hint=f"give the case files the runs were made from{read}")


def caseless_error(path: Path) -> UserError | None:
    """The error for ``path``, a folder given for case files that holds none: one holding results folders
    (``results/``, which ``tooltrial report`` reads the newest of) or a fixtures folder (one named ``fixtures``
    holding folders); None for any other folder."""
    folders = [p for p in path.iterdir() if p.is_dir()]
    if any(is_results_folder(p) for p in folders):
        return UserError(f"{path} is a folder of results folders tooltrial wrote, not case files",
                         hint=f"give the case files the runs were made from; 'tooltrial report {path}' reads the "
                              "newest of them")
    if path.resolve().name == FIXTURES_DIR and folders:
        return UserError(f"{path} is a fixtures folder, not case files",
                         hint="give the case files that name its folders in 'fixture:'; --fixtures-dir FOLDER says "
                              "where fixtures are read from")
    return None
