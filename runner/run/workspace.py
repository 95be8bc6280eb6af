"""A run's throwaway workspace: temp dir, fixture copy, inline files, setup commands, snapshots, cleanup."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.run.context import RunContext
from runner.run.record import COMMAND_OUTPUT_LIMIT, CommandRun
from runner.sandbox.bounds import Access, Bounds
from runner.sandbox.command import scrubbed_env
from runner.sandbox.visible import HiddenFile, hidden_file, hidden_message
from runner.spec.case import Case
from runner.spec.fixture import FixtureError, copy_fixture
from runner.tools.base import ToolError
from runner.tools.paths import resolve_inside

HASH_LIMIT = 16 * 2**20  # bytes: a larger file is compared by its size and mtime, not its bytes
MAX_SNAPSHOT_FILES = 200_000  # files one snapshot compares; the rest are left out of a run's changes
_CHUNK = 2**20  # bytes per read while hashing


class SetupError(Exception):
    """A setup command failed or timed out; the run is an ERROR.

    Attributes: ``command``, ``exit_code`` (None when it timed out), ``output`` (its stdout).
    """

    def __init__(self, command: str, exit_code: int | None, output: str, timeout: float) -> None:
        self.command = command
        self.exit_code = exit_code
        self.output = output
        if exit_code is None:
            super().__init__(f"setup command timed out after {timeout:g}s: {command}")
        else:
            super().__init__(f"setup command failed (exit {exit_code}): {command}")


class WorkspaceError(Exception):
    """The case's fixture or ``files`` could not be put into the workspace (the fixture folder is
    gone, holds what cannot be copied, a symbolic link was put on its way since the case was loaded,
    an inline file clashes with a folder); the run is an ERROR of kind ``workspace``, the case's data
    to fix. The message names the fixture or file and the reason."""


class SnapshotStopped(Exception):
    """A snapshot did not finish: its message says why (the run's time is up, the suite was interrupted)."""


@dataclass(frozen=True)
class Changes:
    """Files added, changed and deleted during a run: relative posix paths, each tuple sorted."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]


@dataclass(frozen=True)
class Workspace:
    """A temp dir holding one run's files; ``path`` is absolute and resolved."""

    path: Path

    @classmethod
    def create(cls, case: Case) -> Workspace:
        """A fresh ``tooltrial-*`` temp dir holding the case's fixture (runner.spec.fixture: symlinks
        inside it copied as links, none followed) and inline ``files`` (written as UTF-8, parents created).

        Raises WorkspaceError for a fixture that cannot be found or copied (a symbolic link on its way
        included), or a file that cannot be written (its path escapes the workspace, or clashes with a
        file or folder there); the temp dir is removed then.
        """
        workspace = cls(Path(tempfile.mkdtemp(prefix="tooltrial-")).resolve())
        try:
            workspace._fill(case)
        except BaseException:
            workspace.cleanup()
            raise
        return workspace

    def _fill(self, case: Case) -> None:
        if case.fixture is not None:
            if case.fixtures_dir is None:
                raise WorkspaceError(f"fixture folder {case.fixture!r} not found in {case.fixtures_dir}")
            try:
                copy_fixture(case.fixtures_dir, case.fixture, self.path)
            except FixtureError as e:
                raise WorkspaceError(str(e)) from e
        for relative, content in case.files.items():
            try:
                target = resolve_inside(self.path, relative)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode("utf-8"))
            except ToolError as e:
                raise WorkspaceError(f"files: {e}") from e
            except OSError as e:
                raise WorkspaceError(f"files: {relative} cannot be written: {e.strerror or e}") from e

    def env(self, case: Case) -> dict[str, str]:
        """The environment for commands of ``case`` in this workspace (see scrubbed_env)."""
        return scrubbed_env(self.path, case.env)

    def run_setup(self, case: Case, run: RunContext) -> None:
        """Run each of ``case.setup`` in order under ``run.sandbox``, each with ``run.command_timeout`` seconds,
        all before ``run.deadline`` (``time.monotonic()``, the run's end); each one that ran is appended to
        ``run.commands`` (its output capped at COMMAND_OUTPUT_LIMIT bytes a stream), the failing one too.

        Raises SetupError for the first command that exits non-zero or times out, HiddenFile (before it runs) for
        the first that names a file the sandbox hides (runner.sandbox.visible).
        """
        env = self.env(case)
        for command in case.setup:
            hidden = hidden_file(run.sandbox, command, self.path, env)
            if hidden is not None:
                raise HiddenFile(hidden_message("setup command", hidden, "put it in the case's fixture"))
            allowed = run.command_seconds()
            result = run.sandbox.run(command, self.path, env, Bounds(allowed, COMMAND_OUTPUT_LIMIT),
                                     Access(network=case.network), split=True)
            run.commands.append(CommandRun.of("setup", command, result))
            if result.timed_out or result.exit_code != 0:
                raise SetupError(command, result.exit_code, result.output, allowed)

    def snapshot(self, run: RunContext | None = None) -> dict[str, str]:
        """Relative posix path -> digest of every regular file (no symlinks, nothing in .git).

        Files are looked at in path order, each stat'ed before it is read: one of at
        most HASH_LIMIT bytes gets the sha256 of its bytes, a larger one (or one that
        cannot be read) a digest made of its size and mtime_ns, so a change to it shows
        only when it changes either. At most MAX_SNAPSHOT_FILES files are taken; the
        rest are left out. Raises SnapshotStopped once ``run.deadline`` (``time.monotonic()``)
        passes or ``run.cancel`` is set; without ``run``, nothing stops it.
        """
        digests: dict[str, str] = {}
        for folder, dirs, names in os.walk(self.path):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in sorted(names):
                reason = None if run is None else run.stop_reason()
                if reason is not None:
                    raise SnapshotStopped(reason)
                if len(digests) >= MAX_SNAPSHOT_FILES:
                    return digests
                path = Path(folder, name)
                try:
                    info = path.lstat()
                except OSError:  # gone since the folder was read
                    continue
                if stat.S_ISREG(info.st_mode):
                    digests[path.relative_to(self.path).as_posix()] = _digest(path, info)
        return digests

    def changes(self, before: dict[str, str], run: RunContext | None = None) -> Changes:
        """What differs between ``before`` (an earlier snapshot) and the workspace now.

        Raises SnapshotStopped as ``snapshot`` does.
        """
        after = self.snapshot(run)
        return Changes(
            added=tuple(sorted(after.keys() - before.keys())),
            changed=tuple(sorted(p for p in after.keys() & before.keys() if after[p] != before[p])),
            deleted=tuple(sorted(before.keys() - after.keys())),
        )

    def cleanup(self) -> list[str]:
        """Delete the workspace, folders a command made read-only or unreadable in it too (as Go's
        module cache is); one already gone is fine.

        Returns a warning line when something still cannot be removed (how many entries are left,
        the first and why), else []. Never raises OSError: a workspace left behind ends no suite.
        """
        try:
            shutil.rmtree(self.path)
            return []
        except FileNotFoundError:
            return []
        except OSError:
            _grant_folders(self.path)
        raised: list[tuple[str, BaseException]] = []  # rmtree reports only OSErrors
        shutil.rmtree(self.path, onerror=lambda function, path, info: raised.append((path, info[1])))
        left = [(path, error) for path, error in raised
                if isinstance(error, OSError) and not isinstance(error, FileNotFoundError)]
        if not left:
            return []
        path, error = left[0]
        return [f"cleanup left {len(left)} {'entry' if len(left) == 1 else 'entries'} in {self.path}, the first {path}: {error.strerror or error}"]


def _digest(path: Path, info: os.stat_result) -> str:
    """``sha256:<hex>`` of the file's first HASH_LIMIT bytes when its size (``info``) is at most that,
    else (or when it cannot be read) ``stat:<size>:<mtime_ns>``."""
    by_stat = f"stat:{info.st_size}:{info.st_mtime_ns}"
    if info.st_size > HASH_LIMIT:
        return by_stat
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO swapped in must not block
    except OSError:
        return by_stat
    digest = hashlib.sha256()
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return by_stat
        left = HASH_LIMIT  # a file growing while it is read is not read past the limit
        while left > 0 and (chunk := f.read(min(_CHUNK, left))):
            digest.update(chunk)
            left -= len(chunk)
    return f"sha256:{digest.hexdigest()}"


def _grant_folders(root: Path) -> None:
    """Give the owner every right on ``root`` and each folder below it (symlinks untouched), each
    before it is listed, so rmtree can empty and remove them; a folder that refuses is left as is."""
    for folder in (root, *_folders(root)):
        with contextlib.suppress(OSError):
            os.chmod(folder, stat.S_IRWXU)


def _folders(root: Path) -> Iterator[Path]:
    """Every folder below ``root``, top down, each yielded before os.walk lists it."""
    for folder, dirs, _ in os.walk(root):
        for name in dirs:
            path = Path(folder, name)
            if not path.is_symlink():
                yield path
