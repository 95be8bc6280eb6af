"""The test suite's own layout: test modules share helpers through the helper modules, never each other."""

from __future__ import annotations

import ast

from tests.helpers import ROOT

TESTS = ROOT / "tests"


def _imported(path: str) -> set[str]:
    tree = ast.parse((TESTS / path).read_text(encoding="utf-8"))
    names = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return names | {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


def test_no_test_module_imports_another() -> None:
    crossing = {path.name: sorted(name for name in _imported(path.name) if name.startswith("tests.test_"))
                for path in sorted(TESTS.glob("*.py"))}
    assert {name: found for name, found in crossing.items() if found} == {}


def test_every_module_that_runs_litellm_in_process_loads_it_through_the_session_fixture() -> None:
    # litellm's log handlers keep the stream of whoever imported it first; the fixture makes them follow run_cli
    live = ("OpenAIServer", "fake_wire", "wire_runs", "LiteLLMProvider", "load_litellm")
    missing = [path.name for path in sorted(TESTS.glob("test_*.py"))
               if any(word in (text := path.read_text(encoding="utf-8")) for word in live) and "litellm_loaded" not in text]
    assert missing == []
