"""The pytest plugin (entry point ``pytest11``): ``pytest cases/ --tooltrial-provider scripted`` runs
tooltrial cases as pytest items.

It does nothing unless ``--tooltrial-provider`` is given: without it no file is collected, no
collector is imported (runner.cli.pytest_cases) and no provider resolved, so a project that merely
has tooltrial installed tests as before (importing this module loads the ``tooltrial`` command's
modules, ``runner.cli``, but not litellm). With it, a ``.yml``, ``.yaml`` or ``.json`` file is a case file when it
parses as one: a list of cases, or a mapping with a ``cases`` list, where a case (or the ``defaults``) has an ``id``
and ``turns`` or ``user`` (a YAML config, a workflow or a JSON Schema has not). Each of its cases becomes one
item per provider x prompt x run (runner.cli.pytest_cases); a file that is one but does not validate is a
collection error.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    from runner.cli.pytest_cases import Suite

CASE_SUFFIXES = (".yml", ".yaml", ".json")  # those of runner.spec.discover, without importing it
_ID_KEY = re.compile(r"""(?:^|[\s{,\-])["']?id["']?\s*:""", re.MULTILINE)
_TURNS_KEY = re.compile(r"""(?:^|[\s{,\-])["']?(?:turns|user)["']?\s*:""", re.MULTILINE)
_CONVERSATION = ("turns", "user")  # a case has one of these
_READ_LIMIT = 64 << 20  # bytes: a bigger file is not read to tell whether it is a case file
SUITE: pytest.StashKey[Suite] = pytest.StashKey()  # this session's arms and options, only with --tooltrial-provider


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ``tooltrial`` option group."""
    group = parser.getgroup("tooltrial", "tooltrial cases as tests (collected only with --tooltrial-provider)")
    group.addoption("--tooltrial-provider", action="append", default=[], metavar="PROVIDER",
                    help="collect tooltrial case files and run each case with PROVIDER: 'scripted', a litellm "
                         "model or an alias from tooltrial.yml (repeatable: one item per provider)")
    group.addoption("--tooltrial-prompt", action="append", default=[], metavar="FILE",
                    help="system prompt template: a file, or a bundled prompt's name (default, terse) "
                         "(repeatable: one item per prompt; default: the bundled default)")
    group.addoption("--tooltrial-tools", action="append", default=[], metavar="FILE",
                    help="tool definitions the model is shown (descriptions, parameter names, enums, which tools): "
                         "a YAML file, as run -T takes it (repeatable: one item per file)")
    group.addoption("--tooltrial-faults", action="append", default=[], metavar="FILE|off|case",
                    help="a fault arm, as run --faults takes it: a fault profile file, off (no faults) or case (each "
                         "case's own faults); repeatable, the clean twin (off) added when not given")
    group.addoption("--tooltrial-runs", type=int, default=1, metavar="N",
                    help="run each case N times, one item per run (a case's runs: wins)")
    group.addoption("--tooltrial-sandbox", choices=("auto", "bwrap", "none"), default="auto",
                    help="confine commands with bubblewrap: auto (when it works, default), bwrap, none")
    group.addoption("--tooltrial-config", metavar="FILE", help="project config (default: ./tooltrial.yml if it exists)")


def pytest_configure(config: pytest.Config) -> None:
    """With ``--tooltrial-provider``, resolve the arms and the sandbox once; a bad provider, prompt, tool-definition
    file, fault profile or config is a usage error (pytest exits 4) before anything is collected."""
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


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--tooltrial-tools``, hold each file to the tools the selected items' cases offer (after ``-k``
    deselects), as ``run -T`` does: a tool or parameter no such case has is a collection error of the file."""
    suite = config.stash.get(SUITE, None)
    if suite is not None and suite.tool_defs:
        from runner.cli.pytest_cases import report_tool_names

        report_tool_names(suite, session, items)


def is_case_file(path: Path) -> bool:
    """Whether ``path`` (YAML or JSON) is a case file, or one meant to be that has an error the collector reports.

    It is when it parses as a list of mappings, or a mapping whose ``cases`` is one, and some case (or the
    ``defaults``) has an ``id`` and a ``turns`` or ``user`` key. A file that does not parse is one when its
    text names ``id`` and ``turns`` or ``user`` keys, so its syntax error is reported rather than skipped.
    """
    try:
        if path.stat().st_size > _READ_LIMIT:
            return False
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return False
    try:
        shape = _json_shape(json.loads(text)) if path.suffix == ".json" else _yaml_shape(text)
    except (ValueError, yaml.YAMLError, RecursionError):
        return bool(_ID_KEY.search(text) and _TURNS_KEY.search(text))
    if shape is None:
        return False
    shared, cases = shape
    return any("id" in keys and (shared | keys) & set(_CONVERSATION) for keys in cases)


Shape = tuple[set[str], list[set[str]]]  # the keys of the defaults, and of each distinct case


def _json_shape(data: Any) -> Shape | None:
    cases = data.get("cases") if isinstance(data, dict) else data
    if not isinstance(cases, list) or not all(isinstance(case, dict) for case in cases):
        return None
    defaults = data.get("defaults") if isinstance(data, dict) else None
    return set(defaults) if isinstance(defaults, dict) else set(), [set(case) for case in cases]


def _yaml_shape(text: str) -> Shape | None:
    """The shape from YAML's node graph, not loaded values: an alias is looked at once, however often it
    is used, so an alias bomb costs no more than its text. Raises yaml.YAMLError for text that does not parse."""
    root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    top = _keys(root) if isinstance(root, yaml.MappingNode) else {}
    cases = top.get("cases") if isinstance(root, yaml.MappingNode) else root
    if not isinstance(cases, yaml.SequenceNode):
        return None
    distinct = list({id(case): case for case in cases.value}.values())
    if not all(isinstance(case, yaml.MappingNode) for case in distinct):
        return None
    defaults = top.get("defaults")
    return set(_keys(defaults)) if isinstance(defaults, yaml.MappingNode) else set(), [set(_keys(c)) for c in distinct]


def _keys(node: yaml.MappingNode) -> dict[str, yaml.Node]:
    return {key.value: value for key, value in node.value if isinstance(key, yaml.ScalarNode)}
