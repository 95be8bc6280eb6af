"""A case's fixture folder: where it may be, and its copy into a workspace.

A fixture is a folder inside its fixtures folder, reached from it with no symbolic link on the way;
the fixtures folder is resolved once, when the case is loaded. The copy opens every folder from
``/`` down to the fixture, and every entry below it, with ``O_NOFOLLOW``, so a link put on the
way after the case was checked is refused, not followed out of the fixtures folder.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from pathlib import Path, PurePosixPath

LINK_HINT = "copy the files in instead of linking them"
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC  # a FIFO swapped in must not block
_SPECIAL = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"),
            (stat.S_ISBLK, "a device"))


class FixtureError(Exception):
    """A fixture that cannot be copied; the message names the fixture and the reason (a link on the
    way with its target, an entry that is no file, folder or link, a read or write that failed)."""


class FixtureMissing(FixtureError):
    """The fixture folder is not there: ``fixture folder 'NAME' not found in FIXTURES``."""


def special_kind(mode: int) -> str | None:
    """``a named pipe``, ``a socket`` or ``a device`` for an ``st_mode`` the copy refuses, else None."""
    return next((noun for test, noun in _SPECIAL if test(mode)), None)


def link_message(name: str, link: str, target: str, fixtures: Path) -> str:
    """Why fixture ``name`` is refused: ``link`` (the part of it that is a link, a relative posix
    path) points at ``target``; ``fixtures`` is the folder as the user knows it."""
    whole = link == PurePosixPath(name).as_posix()
    what = f"is a symbolic link (to {target})" if whole else f"goes through a symbolic link: {link} (to {target})"
    return f"fixture {name!r} {what}; a fixture must be a folder inside {fixtures}, with no symbolic link on the way"


def link_on_the_way(fixtures: Path, name: str) -> str | None:
    """``link_message`` for the first part of ``name`` (a relative path, no ``..``) that is a symbolic
    link below ``fixtures`` (resolved first: its own links are the user's), else None; None too
    when a part is missing or no folder (the fixture is then not found)."""
    here = fixtures.resolve()
    parts = PurePosixPath(name).parts
    for count, part in enumerate(parts, 1):
        here = here / part
        if here.is_symlink():
            return link_message(name, "/".join(parts[:count]), os.readlink(here), fixtures)
        if not here.is_dir():
            return None
    return None


def beside_link(fixtures: Path, case_file: Path) -> tuple[str, str] | None:
    """(message, hint) when ``fixtures`` is the ``fixtures`` folder beside the case file's folder
    (runner.spec.casefile) and a symbolic link that resolves outside the folder holding both: a case
    pack's files do not choose a folder elsewhere; else None (``--fixtures-dir`` is the user's choice)."""
    holder = case_file.resolve().parent.parent
    if fixtures != holder / "fixtures" or not fixtures.is_symlink():
        return None
    resolved = fixtures.resolve()
    if resolved.is_relative_to(holder):
        return None
    message = (f"the fixtures folder {fixtures} is a symbolic link (to {os.readlink(fixtures)}), which leads out of"
               f" {holder}")
    return message, f"give --fixtures-dir {resolved} to use it, or copy the fixtures in"


def copy_fixture(fixtures: Path, name: str, target: Path) -> None:
    """Copy fixture ``name`` (a relative path) of ``fixtures`` (absolute and resolved, as
    ``Case.fixtures_dir`` is) into ``target``, an existing folder: folders and regular files with
    their permission bits and times (a file with several hard links becomes a file of its own), and
    symbolic links inside the fixture as links, never followed.

    Raises FixtureMissing when the folder is not there, FixtureError for a symbolic link on the way
    (on the fixtures folder's own path too: it was resolved when the case was loaded), an entry that
    is no regular file, folder or link, an entry that changed while it was copied, or a read or write
    that failed.
    """
    parts = [*fixtures.parts[1:], *PurePosixPath(name).parts]
    inside = len(fixtures.parts) - 1  # parts[inside:] are the fixture's own
    folder = os.open("/", _FOLDER)
    try:
        for index, part in enumerate(parts):
            try:
                inner = os.open(part, _FOLDER, dir_fd=folder)
            except OSError as e:
                own = "/".join(parts[inside:index + 1]) if index >= inside else None
                raise _refused(folder, part, Path("/", *parts[:index + 1]), own, name, fixtures, e) from e
            os.close(folder)
            folder = inner
        _copy_folder(folder, fixtures / name, target, name)
        try:
            _copy_times(folder, target)
        except OSError as e:
            raise FixtureError(f"fixture {name!r} cannot be copied: {target}: {e.strerror or e}") from e
    finally:
        os.close(folder)


def _refused(folder: int, part: str, path: Path, own: str | None, name: str, fixtures: Path,
             error: OSError) -> FixtureError:
    """Why ``part`` of the open ``folder`` (at ``path``) could not be opened as a folder; ``own`` is
    its path in the fixture, or None when it is on the way to the fixtures folder."""
    try:
        mode = os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode
        target = os.readlink(part, dir_fd=folder) if stat.S_ISLNK(mode) else None
    except FileNotFoundError:
        return FixtureMissing(f"fixture folder {name!r} not found in {fixtures}")
    except OSError:
        return FixtureError(f"fixture {name!r} cannot be copied: {path}: {error.strerror}")
    if target is not None and own is not None:
        return FixtureError(f"{link_message(name, own, target, fixtures)} ({LINK_HINT})")
    if target is not None:
        where = f"the fixtures folder {fixtures}"
        where = where if path == fixtures else f"{path}, on the way to {where},"
        return FixtureError(f"fixture {name!r} cannot be copied: {where} has become a symbolic link (to {target}) since"
                            " the case was loaded")
    if not stat.S_ISDIR(mode):
        return FixtureMissing(f"fixture folder {name!r} not found in {fixtures}")
    return FixtureError(f"fixture {name!r} cannot be copied: {path}: {error.strerror}")


def _copy_folder(folder: int, source: Path, target: Path, name: str) -> None:
    """Copy what the open ``folder`` (at ``source``, for messages) holds into ``target``."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError as e:
        raise FixtureError(f"fixture {name!r} cannot be copied: {source}: {e.strerror or e}") from e
    for entry in entries:
        path = source / entry
        try:
            info = os.stat(entry, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(entry, dir_fd=folder), target / entry)
                continue
            what = special_kind(info.st_mode)
            if what is not None:
                raise FixtureError(f"fixture {name!r} cannot be copied: {path} is {what}")
            try:
                opened = os.open(entry, _FOLDER if stat.S_ISDIR(info.st_mode) else _FILE, dir_fd=folder)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):  # else swapped for a link or file since
                    raise
                raise FixtureError(f"fixture {name!r} cannot be copied: {path} changed while it was copied") from e
            try:
                _copy_entry(opened, info, path, target / entry, name)
            finally:
                os.close(opened)
        except OSError as e:
            raise FixtureError(f"fixture {name!r} cannot be copied: {path}: {e.strerror or e}") from e


def _copy_entry(opened: int, info: os.stat_result, path: Path, target: Path, name: str) -> None:
    """Copy the open folder or file ``opened`` (``info``: its ``lstat`` before it was opened)."""
    now = os.fstat(opened)
    if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino) or stat.S_IFMT(now.st_mode) != stat.S_IFMT(info.st_mode):
        raise FixtureError(f"fixture {name!r} cannot be copied: {path} changed while it was copied")
    if stat.S_ISDIR(now.st_mode):
        target.mkdir()
        _copy_folder(opened, path, target, name)
        _copy_times(opened, target)
        return
    written = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with open(opened, "rb", closefd=False) as reader, open(written, "wb", closefd=False) as writer:
            shutil.copyfileobj(reader, writer)
        os.fchmod(written, stat.S_IMODE(now.st_mode))
        os.utime(written, ns=(now.st_atime_ns, now.st_mtime_ns))
    finally:
        os.close(written)


def _copy_times(opened: int, target: Path) -> None:
    """Give the folder ``target`` the permission bits and times of the open folder ``opened``."""
    now = os.fstat(opened)
    os.chmod(target, stat.S_IMODE(now.st_mode))
    os.utime(target, ns=(now.st_atime_ns, now.st_mtime_ns))
