"""Fingerprints of what a run ran on: the SHA-256 of a canonical form (JSON, keys sorted), so two runs made
from the same inputs carry the same fingerprints and an edit between them can be named.

A case's fingerprint is split into parts (``CASE_PARTS``), so a change reads as the parts it touched
(``expect`` only, or ``turns``); where the case file is and its line, its description, tags and gate
settings are not part of it: they change nothing a run does.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from enum import Enum
from pathlib import Path, PurePath
from typing import Any

from runner.spec.case import Case

CASE_PARTS: dict[str, tuple[str, ...]] = {  # part -> the Case fields it holds
    "turns": ("turns",),
    "user": ("user",),
    "system": ("system",),
    "files": ("fixture", "files"),
    "setup": ("setup", "env"),
    "tools": ("tools", "deny", "mocks", "mcp"),
    "expect": ("expect", "turn_expect"),
    "script": ("script",),
    "other": ("vars", "timeout", "command_timeout", "network", "agent", "inject", "attack"),
    "faults": ("faults",),  # a part only where the case declares some, so a case without them reads as before
}
NOT_FINGERPRINTED = frozenset({"group", "id", "source", "line", "fixtures_dir", "description", "tags", "runs",
                               "min_pass_rate", "twin_of"})  # Case fields that change nothing a run does
JUDGE_PART = "judge"  # expect.judge, apart from the rest of ``expect``
ATTACK_PART = "attack"  # expect.attack, apart from ``other``: the attacker's checks, which a rescore judges again


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data: dataclasses and mappings as dicts, tuples as lists, paths as strings,
    enums as their values; an agent spec without ``here`` (where its file is, not what it does)."""
    names = _field_names(type(value))  # type: ignore[arg-type]  # mypy#11470: a class is hashable
    if names is not None:
        return {name: canonical(getattr(value, name)) for name in names}
    if isinstance(value, Mapping):
        return {str(key): canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(item) for item in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    return value


@functools.cache  # once a type, not once a value: half of what digesting a run record took
def _field_names(kind: type) -> tuple[str, ...] | None:
    """The fields ``canonical`` keeps of dataclass ``kind`` (all but ``here``), None for any other type."""
    return tuple(f.name for f in dataclasses.fields(kind) if f.name != "here") if dataclasses.is_dataclass(kind) else None


def digest(value: Any) -> str:
    """The hex SHA-256 of ``value``'s canonical JSON (``canonical``; keys sorted, no spaces)."""
    text = json.dumps(canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate is text a case may hold


def case_parts(case: Case) -> dict[str, str]:
    """Each part of ``case`` (``CASE_PARTS``, ``judge``: its ``expect.judge``, and ``attack``: its ``expect.attack``,
    each where it has one) -> its fingerprint."""
    parts = {part: digest({name: getattr(case, name) for name in names}) for part, names in CASE_PARTS.items()
             if part != "faults" or case.faults}
    if case.expect.judge is not None:  # the rubric apart, so a rubric edit is named as one
        rest = dataclasses.replace(case.expect, judge=None)
        parts["expect"] = digest({"expect": rest, "turn_expect": case.turn_expect})
        judge = canonical(case.expect.judge)
        parts[JUDGE_PART] = digest({k: v for k, v in judge.items() if k != "min_kappa"})  # not what it grades
    if case.attack is not None:  # ``other`` as of a case without one, so an edit of the attack's checks reads as one
        parts["other"] = digest({name: getattr(case, name) if name != "attack" else None for name in CASE_PARTS["other"]})
        parts[ATTACK_PART] = digest(case.attack)
    return parts


def fixture_digest(case: Case) -> str | None:
    """The fingerprint of the case's fixture tree: each entry's path (relative, posix), mode and contents (a
    link's target, never followed), in path order; None for a case without a fixture, or one that is not there."""
    if case.fixture is None or case.fixtures_dir is None:
        return None
    root = case.fixtures_dir / case.fixture
    if not root.is_dir():
        return None
    whole = hashlib.sha256()
    for path in sorted(_entries(root)):
        info = path.lstat()
        whole.update(os.fsencode(path.relative_to(root).as_posix()) + f"\0{stat.S_IMODE(info.st_mode):o}\0".encode())
        if stat.S_ISLNK(info.st_mode):
            whole.update(b"link\0" + os.fsencode(os.readlink(path)))
        elif stat.S_ISREG(info.st_mode):
            whole.update(b"file\0" + _file_digest(path).encode())
        whole.update(b"\n")
    return whole.hexdigest()


def _entries(root: Path) -> list[Path]:
    """Every entry below ``root``, links not followed."""
    found: list[Path] = []
    for folder, names, files in os.walk(root, followlinks=False):
        found.extend(Path(folder) / name for name in (*names, *files))
    return found


def _file_digest(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
