"""The pytest plugin (entry point ``pytest11``): ``pytest cases/ --tooltrial-provider scripted`` runs
tooltrial cases as pytest items.

It does nothing unless ``--tooltrial-provider`` is given: without it no file is collected, no
collector is imported (runner.cli.pytest_cases) and no provider resolved, so a project that merely
has tooltrial installed tests as before (importing this module loads the ``tooltrial`` command's
modules, ``runner.cli``, but not litellm). With it, a ``.yml``, ``.yaml`` or ``.json`` file is a case file when its
text has both an ``id`` and a ``turns`` key (a YAML config, a workflow or a JSON Schema has not),
and each of its cases becomes one item per provider x prompt x run (runner.cli.pytest_cases).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from runner.cli.pytest_cases import Suite

CASE_SUFFIXES = (".yml", ".yaml", ".json")  # those of runner.spec.discover, without importing it
_ID_KEY = re.compile(r"""(?:^|[\s{,\-])["']?id["']?\s*:""", re.MULTILINE)
_TURNS_KEY = re.compile(r"""(?:^|[\s{,\-])["']?turns["']?\s*:""", re.MULTILINE)
_SNIFF_LIMIT = 1 << 20  # bytes of a file read to tell whether it is a case file
SUITE: pytest.StashKey[Suite] = pytest.StashKey()  # this session's arms and options, only with --tooltrial-provider


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``tooltrial`` option group."""
    group = parser.getgroup("tooltrial", "tooltrial cases as tests (collected only with --tooltrial-provider)")
    group.addoption("--tooltrial-provider", action="append", default=[], metavar="PROVIDER",
                    help="collect tooltrial case files and run each case with PROVIDER: 'scripted', a litellm "
                         "model or an alias from tooltrial.yml (repeatable: one item per provider)")
    group.addoption("--tooltrial-prompt", action="append", default=[], metavar="FILE",
                    help="system prompt template (repeatable: one item per prompt; default: the bundled one)")
    group.addoption("--tooltrial-runs", type=int, default=1, metavar="N",
                    help="run each case N times, one item per run (a case's runs: wins)")
    group.addoption("--tooltrial-sandbox", choices=("auto", "bwrap", "none"), default="auto",
                    help="confine commands with bubblewrap: auto (when it works, default), bwrap, none")
    group.addoption("--tooltrial-config", metavar="FILE", help="project config (default: ./tooltrial.yml if it exists)")


def pytest_configure(config: pytest.Config) -> None:
    """With ``--tooltrial-provider``, resolve the arms and the sandbox once; a bad provider, prompt
    or config is a usage error (pytest exits 4) before anything is collected."""
    config.addinivalue_line("markers", "tooltrial: one run of a tooltrial case (collected with --tooltrial-provider)")
    if config.getoption("tooltrial_provider"):
        from runner.cli.pytest_cases import Suite

        config.stash[SUITE] = Suite.from_config(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A case file's collector, or None: always None without ``--tooltrial-provider``."""
    suite = parent.config.stash.get(SUITE, None)
    if suite is None or file_path.suffix not in CASE_SUFFIXES or not is_case_file(file_path):
        return None
    from runner.cli.pytest_cases import CaseFile

    return CaseFile.from_parent(parent, path=file_path)


def is_case_file(path: Path) -> bool:
    """Whether ``path`` (YAML or JSON) names both an ``id`` and a ``turns`` key in its first MiB: a
    case file, or one meant to be that has an error the collector will report."""
    try:
        with path.open("rb") as file:
            text = file.read(_SNIFF_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(_ID_KEY.search(text) and _TURNS_KEY.search(text))

