"""The folder tree is the architecture: each package calls only the stages below it.

A module may import types from anywhere (dataclasses, enums, exceptions, protocols, constants:
the shapes data flows in), but behaviour (functions, other classes) only from its own package,
the small shared modules at the top of ``runner/``, and the packages listed for it in
``MAY_CALL``. An upward call (say, a check calling the run engine) fails here. A table that is an
extension point is held here too: the provider kinds' (``PROVIDER_KIND_ROWS``), which ``spec`` and
``checks`` read as data, through the one name rule of runner.names; the output formats' (``OUTPUT_FORMATS``).
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

from runner.output.formats import FORMATS, load
from runner.providers.registry import PROVIDER_KINDS
from tests.helpers import ROOT

RUNNER = ROOT / "runner"
SHARED = {"errors", "kinds", "names", "patterns", "resources", "sums", "text"}  # modules at runner/ every stage may call
PACKAGES = ("spec", "sandbox", "providers", "tools", "endpoint", "checks", "scoring", "terminal", "output", "run", "suite", "cli")
MAY_CALL = {  # package -> the other packages whose behaviour it may call
    "spec": set(),
    "sandbox": set(),
    "providers": set(),
    "tools": {"sandbox", "spec"},
    "endpoint": {"spec", "sandbox", "providers", "tools"},
    "checks": {"spec", "sandbox", "tools"},
    "scoring": {"spec", "checks"},
    "terminal": {"scoring"},
    "output": {"spec", "scoring", "terminal"},
    "run": {"spec", "sandbox", "providers", "tools", "endpoint", "checks", "scoring", "output", "terminal"},
    "suite": {"spec", "sandbox", "providers", "tools", "endpoint", "checks", "scoring", "output", "terminal", "run"},
    "cli": set(PACKAGES) - {"cli"},
}


# The provider kinds' table (runner.providers.registry.PROVIDER_KINDS), in the order a name is matched:
# each kind, the names it takes (None: the aliases in tooltrial.yml), and the module that resolves its names.
PROVIDER_KIND_ROWS = [
    ("scripted", "scripted", "runner.providers.scripted"),
    ("alias", None, "runner.providers.live"),
    ("scripted-judge", "scripted\\-judge:.+", "runner.providers.scriptedjudge"),
    ("model", "[^/]*/.*", "runner.providers.live"),
    ("bare", ".*", "runner.providers.live"),
]


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
                                              "runner.spec", "runner.spec.case", "runner.spec.expect", "runner.spec.inject"]


# --- one home each: a rule or a fact is written in one module, and its users import it ---------------

_FIT_PARTS = {"arguments_mismatch", "arguments_mismatches", "schema_type_mismatch"}  # what a call-fit rule is made of


def _names_used(path: Path) -> set[str]:
    """The names ``path`` reads (variables and attributes), its imports left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return ({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
            | {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)})


def test_the_call_fit_rule_is_written_once_and_its_users_import_it() -> None:
    users = {path.relative_to(RUNNER).as_posix() for path in RUNNER.rglob("*.py") if _names_used(path) & _FIT_PARTS}
    # the matchers build their own parts; a mock's ``when`` chooses a response and a fault's the calls it fits,
    # neither expects a call
    assert users == {"checks/callfit.py", "spec/matchers.py", "tools/faults.py", "tools/mocks.py"}
    for user in ("checks/calls.py", "checks/trace.py", "scoring/trajectorymatch.py"):
        assert "runner.checks.callfit" in {module for module, _ in _runtime_imports(RUNNER / user)}, user


def _literals(path: Path) -> list[tuple[int, set[str]]]:
    """(line, the strings in it) of each set, list, tuple and dict literal of ``path`` (keys and values)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Set, ast.List, ast.Tuple, ast.Dict)):
            items = [*node.keys, *node.values] if isinstance(node, ast.Dict) else node.elts
            found.append((node.lineno, {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}))
    return found


def test_the_builtin_tools_facts_come_from_one_table() -> None:
    from runner.scoring import metrics
    from runner.tools import registry
    from runner.tools.toolbox import BUILTIN_TOOLS

    rows = registry.BUILTINS
    assert registry.BUILTIN_NAMES == tuple(rows) == tuple(BUILTIN_TOOLS)
    for name, tool in BUILTIN_TOOLS.items():
        module, function = rows[name].run.split(":")
        assert (tool.description, tool.parameters) == (rows[name].description, rows[name].parameters)
        assert tool.parameters is rows[name].parameters
        assert (tool.run.__module__, tool.run.__name__) == (module, function)
    assert metrics.READ_ONLY_TOOLS is registry.READ_ONLY_TOOLS == {name for name, row in rows.items() if row.read_only}


def test_no_module_holds_a_hand_copy_of_the_builtin_tools_facts() -> None:
    from runner.tools.registry import BUILTINS

    names = set(BUILTINS)
    parameters = [set(row.parameters["properties"]) for row in BUILTINS.values() if len(row.parameters["properties"]) > 1]
    descriptions = {row.description for row in BUILTINS.values()}
    copies = []
    for path in sorted(RUNNER.rglob("*.py")):
        where = path.relative_to(RUNNER).as_posix()
        if where.startswith("spec/foreign/"):  # another harness's tool names mapped to ours
            continue
        for line, strings in _literals(path):
            if len(strings & names) >= 3:  # BUILTINS' rows are calls, so even the table holds no such list
                copies.append(f"{where}:{line} lists builtin tools {sorted(strings & names)}")
            if where != "tools/registry.py" and any(params <= strings for params in parameters):
                copies.append(f"{where}:{line} lists a builtin's parameters {sorted(strings)}")
        if where != "tools/registry.py":
            tree = ast.parse(path.read_text(encoding="utf-8"))
            copies += [f"{where}:{node.lineno} copies a builtin's description" for node in ast.walk(tree)
                       if isinstance(node, ast.Constant) and node.value in descriptions]
    assert copies == []


def test_the_provider_kinds_are_one_table() -> None:
    rows = [(kind.name, kind.pattern.pattern if kind.pattern else None, kind.resolve.__module__) for kind in PROVIDER_KINDS]
    assert rows == PROVIDER_KIND_ROWS


# The output formats (runner.output.formats): name, options, streamed as runs are saved, commands, variable.
OUTPUT_FORMATS = [
    ("report", ["--report"], True, {"run", "rescore"}, None),
    ("junit", ["--junit"], False, {"run", "rescore"}, None),
    ("html", ["--html"], False, {"run", "report", "rescore"}, None),
    ("summary_md", ["--summary-md"], False, {"run", "report", "rescore"}, None),
    ("step_summary", [], False, {"run"}, "GITHUB_STEP_SUMMARY"),
    ("otel", ["--otel", "--otel-endpoint", "--otel-content"], False, {"run"}, None),
]
WRITERS = {f"runner.output.{name}" for name in ("html", "junit", "markdown", "otel", "otlp")}


def test_the_output_formats_are_one_table() -> None:
    assert [(row.name, [option.flag for option in row.options], row.streams, set(row.commands), row.env)
            for row in FORMATS] == OUTPUT_FORMATS
    for row in FORMATS:
        assert row.writer.startswith("runner.output.")  # the format's module, beside the others
        for ref in filter(None, (row.writer, row.item, row.target)):
            assert callable(load(ref)), ref


def test_the_command_line_loads_no_writer_until_its_option_is_used() -> None:
    assert WRITERS & set(_loaded_by("runner.cli.app")) == set()


def test_every_benchmark_script_imports() -> None:
    """benchmarks/ is not run by the tests: an import it lost (a moved function) would go unseen until a figure is
    wanted."""
    names = sorted(p.stem for p in (ROOT / "benchmarks").glob("*.py"))
    done = subprocess.run([sys.executable, "-c", f"import {', '.join(names)}"], cwd=ROOT / "benchmarks",
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
