"""A run's throwaway workspace: temp dir, fixture copy, inline files, setup commands, snapshots, cleanup."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from runner.cases import Case
from runner.sandbox import Sandbox, budget, scrubbed_env
from runner.tools.base import ToolError
from runner.tools.paths import resolve_inside


class SetupError(Exception):
    """A setup command failed or timed out; the run is an ERROR.

    Attributes: ``command``, ``exit_code`` (None when it timed out), ``output``.
    """

    def __init__(self, command: str, exit_code: int | None, output: str, timeout: float) -> None:
        self.command = command
        self.exit_code = exit_code
        self.output = output
        if exit_code is None:
            super().__init__(f"setup command timed out after {timeout:g}s: {command}")
        else:
            super().__init__(f"setup command failed (exit {exit_code}): {command}")


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
    sandbox: Sandbox

    @classmethod
    def create(cls, case: Case, sandbox: Sandbox) -> Workspace:
        """A fresh ``tooltrial-*`` temp dir holding the case's fixture (symlinks copied as links)
        and inline ``files`` (written as UTF-8, parents created).

        Raises ValueError for a fixture that cannot be found or a file path escaping the
        workspace; the temp dir is removed then.
        """
        workspace = cls(Path(tempfile.mkdtemp(prefix="tooltrial-")).resolve(), sandbox)
        try:
            workspace._fill(case)
        except BaseException:
            workspace.cleanup()
            raise
        return workspace

    def _fill(self, case: Case) -> None:
        if case.fixture is not None:
            if case.fixtures_dir is None or not (case.fixtures_dir / case.fixture).is_dir():
                raise ValueError(f"{case.full_id}: fixture folder not found: {case.fixture}")
            shutil.copytree(case.fixtures_dir / case.fixture, self.path, symlinks=True, dirs_exist_ok=True)
        for relative, content in case.files.items():
            try:
                target = resolve_inside(self.path, relative)
            except ToolError as e:
                raise ValueError(f"{case.full_id}: files: {e}") from e
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8"))

    def env(self, case: Case) -> dict[str, str]:
        """The environment for commands of ``case`` in this workspace (see scrubbed_env)."""
        return scrubbed_env(self.path, case.env)

    def run_setup(self, case: Case, timeout: float = 60.0, deadline: float | None = None) -> None:
        """Run each of ``case.setup`` in order, each with ``timeout`` seconds, all before
        ``deadline`` (``time.monotonic()``, the run's end) when given.

        Raises SetupError for the first command that exits non-zero or times out.
        """
        env = self.env(case)
        for command in case.setup:
            allowed = budget(timeout, deadline)
            result = self.sandbox.run(command, self.path, env, allowed, network=case.network)
            if result.timed_out or result.exit_code != 0:
                raise SetupError(command, result.exit_code, result.output, allowed)

    def snapshot(self) -> dict[str, str]:
        """Relative posix path -> sha256 hex digest of every regular file (no symlinks, nothing in .git)."""
        digests: dict[str, str] = {}
        for folder, dirs, names in os.walk(self.path):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in names:
                path = Path(folder, name)
                if path.is_file() and not path.is_symlink():
                    with path.open("rb") as f:
                        digest = hashlib.file_digest(f, "sha256").hexdigest()
                    digests[path.relative_to(self.path).as_posix()] = digest
        return digests

    def changes(self, before: dict[str, str]) -> Changes:
        """What differs between ``before`` (an earlier snapshot) and the workspace now."""
        after = self.snapshot()
        return Changes(
            added=tuple(sorted(after.keys() - before.keys())),
            changed=tuple(sorted(p for p in after.keys() & before.keys() if after[p] != before[p])),
            deleted=tuple(sorted(before.keys() - after.keys())),
        )

    def cleanup(self) -> None:
        """Delete the workspace; one already gone is fine."""
        try:
            shutil.rmtree(self.path)
        except FileNotFoundError:
            pass
