"""Every package runner/ imports is declared, the same in pyproject.toml and requirements.in, and the lock
says each declared one is there because requirements.in asks for it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from tests.helpers import ROOT


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised (PEP 503): ``ruamel.yaml>=0.18`` -> ``ruamel-yaml``."""
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement.strip()).group()).lower()


PYTEST_PLUGIN = {"pytest_plugin.py", "pytest_cases.py"}  # runner/cli/: loaded by pytest only (entry point pytest11)


def _imported_modules() -> dict[str, set[str]]:
    """Each top-level module runner/ imports (stdlib and runner left out) -> the distributions that
    install it, normalised (several when, say, two share a namespace package). The pytest plugin's
    import of pytest is left out: only pytest loads it, and the ``pytest`` extra declares it."""
    modules: set[str] = set()
    for path in (ROOT / "runner").rglob("*.py"):
        if path.parent.name == "cli" and path.name in PYTEST_PLUGIN:
            modules |= _imports(path) - {"pytest"}
        else:
            modules |= _imports(path)
    providers = metadata.packages_distributions()
    return {module: {_name(d) for d in providers.get(module, [module])}
            for module in modules - set(sys.stdlib_module_names) - {"runner"}}


def _imports(path: Path) -> set[str]:
    """The top-level modules the file at ``path`` imports (absolute imports)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return modules


def _runtime_in() -> list[str]:
    """requirements.in's runtime section: the lines from ``# Runtime`` to the next comment line."""
    lines = (ROOT / "requirements.in").read_text(encoding="utf-8").splitlines()
    start = lines.index("# Runtime") + 1
    section = []
    for line in lines[start:]:
        if line.startswith("#"):
            break
        if line.strip():
            section.append(line)
    return section


def test_every_imported_package_is_declared_alike_in_pyproject_and_requirements_in() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [_name(r) for r in project["dependencies"]]
    assert sorted(declared) == sorted(_name(r) for r in _runtime_in())
    engines = {_name(r) for extra, requirements in project["optional-dependencies"].items()
               if extra not in ("test", "docs") for r in requirements}  # optional engines, imported only when used
    undeclared = {module: dists for module, dists in _imported_modules().items() if not dists & (set(declared) | engines)}
    assert undeclared == {}
    assert [_name(r) for r in project["optional-dependencies"]["pytest"]] == ["pytest"]  # what the plugin imports


def test_the_lock_pins_each_declared_package_for_requirements_in() -> None:
    lock = (ROOT / "requirements.lock").read_text(encoding="utf-8")
    blocks = {_name(block.split("==")[0]): block for block in re.split(r"\n(?=[A-Za-z0-9])", lock) if "==" in block}
    asked = ("#   -r requirements.in", "# via -r requirements.in")
    missing = [name for name in map(_name, _runtime_in())
               if name not in blocks or not any(note in blocks[name] for note in asked)]
    assert missing == []


def test_a_new_venv_gets_the_pinned_pip_hash_checked_before_the_lock() -> None:
    pip_lock = (ROOT / "requirements-pip.lock").read_text(encoding="utf-8")
    pins = re.findall(r"^([A-Za-z0-9_.-]+==\S+)", pip_lock, re.MULTILINE)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert pins == re.findall(r"^BOOTSTRAP_PIP := (\S+)$", makefile, re.MULTILINE)
    assert pins[0].startswith("pip==") and pip_lock.count("--hash=sha256:") >= 1
    steps = [line.strip() for line in makefile.splitlines() if "install --require-hashes" in line]
    assert steps == ["$(PIP) install --require-hashes -r requirements-pip.lock",
                     "$(PIP) install --require-hashes -r requirements.lock"]
