"""The final contents of the files a run added or changed, as its record keeps them (``RunRecord.files``), so
``tooltrial rescore`` can check them again with no model call: each file's text (UTF-8) or bytes (base64), its
size and SHA-256, within a bound per file and per run; a file over the bound keeps only its size and hash.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from runner.tools.base import ToolError
from runner.tools.paths import resolve_inside

FILE_LIMIT = 256 * 1024  # bytes of one file whose content the record keeps
RUN_LIMIT = 1024 * 1024  # bytes of content one record keeps, the files taken in path order
HASH_LIMIT = 16 * 2**20  # bytes: a larger file keeps its size only (as runner.run.workspace compares it)


@dataclass(frozen=True)
class SavedFile:
    """One file as a run left it: ``size`` (bytes), ``sha256`` (hex, None for a file over HASH_LIMIT bytes),
    its content as ``text`` (when it is UTF-8) or ``base64`` (when it is not), neither when ``cut`` (the file is
    over FILE_LIMIT bytes, or the record's RUN_LIMIT was spent on files before it). The content is the
    agent's: untrusted."""

    size: int
    sha256: str | None = None
    text: str | None = None
    base64: str | None = None
    cut: bool = False

    @property
    def content(self) -> bytes | None:
        """The file's bytes, None when they were not kept."""
        if self.text is not None:
            return self.text.encode("utf-8")
        return None if self.base64 is None else base64.b64decode(self.base64)


def saved_files(root: Path, paths: Iterable[str]) -> dict[str, SavedFile]:
    """Each of ``paths`` (relative posix paths under the folder ``root``) that is a regular file -> its SavedFile,
    in path order; a path that is gone, a link or not a regular file is left out, and so is one whose name is not
    UTF-8 (a JSON key the results' schema check cannot read). Never follows a link."""
    kept: dict[str, SavedFile] = {}
    left = RUN_LIMIT
    for name in sorted(filter(_utf8, paths)):
        data, size = _read(root, name)
        if data is None:
            continue
        digest = hashlib.sha256(data).hexdigest() if size <= HASH_LIMIT else None
        if size > FILE_LIMIT or size > left:
            kept[name] = SavedFile(size, digest, cut=True)
            continue
        left -= size
        try:
            kept[name] = SavedFile(size, digest, text=data.decode("utf-8"))
        except UnicodeDecodeError:
            kept[name] = SavedFile(size, digest, base64=base64.b64encode(data).decode("ascii"))
    return kept


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.fsdecode's surrogates for bytes that are not UTF-8
        return False
    return True


def _read(root: Path, name: str) -> tuple[bytes | None, int]:
    """The first HASH_LIMIT bytes of the regular file ``root/name`` and its size; ``(None, 0)`` when it is not one."""
    try:
        fd = os.open(root / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO swapped in must not block
    except OSError:
        return None, 0
    with open(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, 0
        return f.read(HASH_LIMIT + 1), info.st_size


def restore(root: Path, changes: dict[str, list[str]], files: dict[str, SavedFile]) -> list[str]:
    """Put a run's saved changes into the workspace ``root``: each deleted path removed, each added or changed one
    written with its saved content (parents made). Returns the added or changed paths whose content the record
    does not hold (cut, or not kept at all), each left as an empty file so it exists as it did. A path that
    escapes ``root`` (runner.tools.paths) is left alone and returned too."""
    unkept: list[str] = []
    for name in changes.get("deleted", []):
        with contextlib.suppress(ToolError, OSError):
            resolve_inside(root, name).unlink()
    for name in sorted({*changes.get("added", []), *changes.get("changed", [])}):
        saved = files.get(name)
        content = None if saved is None else saved.content
        try:
            target = resolve_inside(root, name)
        except ToolError:
            unkept.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content or b"")
        if content is None:
            unkept.append(name)
    return unkept
