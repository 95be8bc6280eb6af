"""The folder tree is the architecture: each package calls only the stages below it.

A module may import types from anywhere (dataclasses, enums, exceptions, protocols, constants:
the shapes data flows in), but behaviour (functions, other classes) only from its own package,
the small shared modules at the top of ``runner/``, and the packages listed for it in
``MAY_CALL``. An upward call (say, a check calling the run engine) fails here.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import importlib
import inspect
import subprocess
import sys
import typing
from pathlib import Path

from tests.helpers import ROOT

RUNNER = ROOT / "runner"
SHARED = {"errors", "kinds", "names", "patterns", "redact", "resources", "sums", "text"}  # modules at runner/ every stage may call
PACKAGES = ("spec", "sandbox", "providers", "tools", "agents", "checks", "scoring", "terminal", "output", "run", "cli")
MAY_CALL = {  # package -> the other packages whose behaviour it may call
    "spec": set(),
    "sandbox": set(),
    "providers": set(),
    "tools": {"sandbox", "spec"},
    "agents": {"spec", "sandbox", "providers", "tools"},
    "checks": {"spec", "sandbox", "tools"},
    "scoring": {"spec", "checks"},
    "terminal": {"scoring"},
    "output": {"spec", "scoring", "terminal"},
    "run": {"spec", "sandbox", "providers", "tools", "agents", "checks", "scoring", "output", "terminal"},
    "cli": set(PACKAGES) - {"cli"},
}


def _package(module: str) -> str:
    """``spec`` for ``runner.spec.case``, ``shared`` for ``runner.errors``, ``runner`` for ``runner`` itself."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] == "__main__":
        return "runner"
    return parts[1] if parts[1] in PACKAGES else "shared"


def _is_type(value: object) -> bool:
    """Whether an imported name is a shape rather than behaviour: a dataclass, enum, exception or
    protocol class, a type alias, or a constant (a module-level value that is not a function or class)."""
    if inspect.isclass(value):
        return (dataclasses.is_dataclass(value) or issubclass(value, (enum.Enum, BaseException))
                or getattr(value, "_is_protocol", False))
    if callable(value) and not isinstance(value, (dict, list, tuple, frozenset)):
        return typing.get_origin(value) is not None  # an alias such as tuple[str, int]
    return True


def _runtime_imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` for each ``from runner... import name`` in ``path`` outside ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", getattr(block.test, "attr", "")) == "TYPE_CHECKING"
                   for node in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("runner") and id(node) not in typing_only:
            found += [(node.module, alias.name) for alias in node.names]
    return found


def _upward_calls() -> list[str]:
    found = []
    for path in sorted(RUNNER.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        own = _package(module)
        for source, name in _runtime_imports(path):
            theirs = _package(source)
            if theirs in ("shared", own, "runner") or own == "runner" or theirs in MAY_CALL.get(own, set()):
                continue
            value = getattr(importlib.import_module(source), name, None)
            if value is None:  # a submodule
                value = importlib.import_module(f"{source}.{name}")
            if inspect.ismodule(value) or not _is_type(value):
                found.append(f"{module} calls {source}.{name} ({own} may not call {theirs})")
    return found


def test_no_package_calls_up_the_flow() -> None:
    assert _upward_calls() == []


def test_the_top_level_holds_only_the_shared_modules() -> None:
    modules = {p.stem for p in RUNNER.glob("*.py")} - {"__init__", "__main__"}
    packages = {p.name for p in RUNNER.iterdir() if (p / "__init__.py").is_file()} - {"data"}
    assert (modules, packages) == (SHARED, set(PACKAGES))


def test_package_inits_hold_no_code() -> None:
    for init in RUNNER.rglob("__init__.py"):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        code = [node for node in tree.body if not isinstance(node, (ast.Expr, ast.ImportFrom, ast.Assign))]
        names = [t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets]
        assert code == [] and set(names) <= {"__all__", "__version__"}, init


def test_no_module_is_over_300_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in RUNNER.rglob("*.py") if (n := len(p.read_text().splitlines())) > 300}
    assert long == {}


def _loaded_by(module: str) -> list[str]:
    code = f"import sys, {module}; print(' '.join(sorted(m for m in sys.modules if m.startswith('runner'))))"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def test_the_seams_load_nothing_else() -> None:
    # runner.kinds is the vocabulary (enums only): the error kinds a provider raises are its members
    assert _loaded_by("runner.providers.base") == ["runner", "runner.kinds", "runner.providers", "runner.providers.base"]
    # the case model reads the check table (data only) for its list keys, and nothing of the checks' code
    assert _loaded_by("runner.spec.case") == ["runner", "runner.checks", "runner.checks.table", "runner.kinds",
                                              "runner.spec", "runner.spec.case", "runner.spec.expect"]
