"""Other harnesses' case formats: replio JSON fixtures and elelem YAML cases run as they are.

``tests/foreign/replio/read-file-lines.json`` is replio's documented example and
``tests/foreign/elelem/cases/fix.yml`` elelem's (with Python in place of Ruby),
both byte for byte. Neither has a script, so a test plays the model here.
Each ``tests/foreign/broken/NAME.json`` is paired with ``NAME.expected``;
regenerate those with:

    TOOLTRIAL_REGEN=1 .venv/bin/python -m pytest tests/test_foreign.py -k broken
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.providers.kind import ProviderSpec
from runner.providers.registry import resolve_provider
from runner.providers.scripted import ScriptedProvider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import RunRecord
from runner.sandbox.command import Sandbox
from runner.spec.case import Case
from runner.spec.casefile import load_file, validate_file
from runner.spec.expect import Expect, TraceExpect
from runner.spec.foreign.replio import to_case_mapping
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import run_cli
from tests.strategies import anything, check

FOREIGN = Path(__file__).parent / "foreign"
BROKEN = sorted(p.name for p in (FOREIGN / "broken").glob("*.json"))


def play(case: Case, script: list[dict[str, Any]]) -> RunRecord:
    """Run ``case`` with a model that replies ``script``, whatever the case says."""
    model = ProviderSpec("model", lambda _case: ScriptedProvider(script))
    return execute(case, Arm(model, load_prompt(None)), RunOptions(Sandbox()))


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.mark.parametrize("name", BROKEN)
def test_broken_replio_file_gives_its_exact_errors(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FOREIGN / "broken")
    actual = "".join(f"{error.render()}\n" for error in validate_file(Path(name)))
    expected = FOREIGN / "broken" / name.replace(".json", ".expected")
    if os.environ.get("TOOLTRIAL_REGEN"):
        expected.write_text(actual, encoding="utf-8")
    assert actual == expected.read_text(encoding="utf-8")


def test_replio_fixture_maps_onto_a_case() -> None:
    (case,) = load_file(FOREIGN / "replio" / "read-file-lines.json")
    assert (case.full_id, case.description, case.line) == ("replio/read-file-lines", "Read a file and report its line count", 1)
    assert case.turns == ("Read src/app.py and report how many lines it has.",)
    assert case.files == {"src/app.py": "import sys\n\ndef main():\n    return 0\n"}
    assert case.deny == ("write_file", "edit_file", "bash")  # replio's defaults: edit and bash denied
    assert case.expect == Expect(
        trace=TraceExpect(must_include=("read_file",), avoid=("bash",), max_calls=2, expected=("read_file",))
    )
    assert case.script is None


def test_permissions_merge_over_the_defaults_and_the_task_stays_literal() -> None:
    mapped = to_case_mapping(
        {"task": "Keep {{ this }}.", "tool_permission": {"edit": "ask", "list": "deny"}, "tools_deny": ["file_write"]},
        "stem",
    )
    assert mapped == {
        "id": "stem",
        "vars": {"task": "Keep {{ this }}."},
        "turns": ["{{ task }}"],
        "deny": ["write_file", "list_dir", "glob", "bash"],
    }


def test_replio_fixture_runs_and_its_verifier_judges_the_trace() -> None:
    (case,) = load_file(FOREIGN / "replio" / "read-file-lines.json")
    good = play(case, [call("read_file", path="src/app.py"), {"content": "src/app.py has 4 lines."}])
    assert good.status == "pass", good.checks
    bad = play(case, [call("bash", command="wc -l src/app.py"), {"content": "4 lines."}])
    assert bad.steps[0].result == "Error: tool 'bash' is denied in this case"
    assert [c.check for c in bad.failed_checks] == ["trace.must_include", "trace.avoid"]


def test_replio_script_passthrough_runs_offline_from_the_cli(tmp_path: Path) -> None:
    done = run_cli("run", "tests/foreign/replio", "-p", "scripted", "-c", "replio/bump-version", "--results", str(tmp_path))
    assert done.returncode == 0
    assert done.stdout.splitlines()[:2] == ["PASS replio/bump-version", "1/1 passed"]


def test_a_fixture_without_script_is_refused_before_any_scripted_run(tmp_path: Path) -> None:
    done = run_cli("run", "tests/foreign/replio", "-p", "scripted", "--results", str(tmp_path / "r"))
    assert done.returncode == 4  # the case cannot run offline: the case's mistake, not the provider's outage
    assert done.stdout == ""
    assert done.stderr == ("error: tests/foreign/replio/read-file-lines.json:1: case replio/read-file-lines has no script: "
                           "the scripted provider needs one (add a `script:` to the case, or run it with a live model: -p MODEL)\n")
    assert not (tmp_path / "r").exists()


def test_elelem_case_runs_unchanged() -> None:
    (case,) = load_file(FOREIGN / "elelem" / "cases" / "fix.yml")
    assert case.fixtures_dir == (FOREIGN / "elelem" / "fixtures").resolve()
    fix = {"path": "lib/calc.py", "old_string": "a - b", "new_string": "a + b"}
    good = play(case, [call("bash", command="python3 test.py"), call("edit_file", **fix), {"content": "Fixed add()."}])
    assert good.status == "pass", good.checks
    lazy = play(case, [{"content": "sorry, no"}])
    assert [c.check for c in lazy.failed_checks] == [
        "verify", "files", "files", "response_contains", "response_not_contains"
    ]
    assert lazy.failed_checks[0].message == "verify failed (exit 1): python3 -m unittest -q test"


replio_names = st.sampled_from(["file_read", "read_file", "run_command", "bash", "file_raed", 3])
replio_fixture = st.fixed_dictionaries(
    {"task": st.text(max_size=12) | anything},
    optional={
        "id": st.sampled_from(["a", "Bad Id"]) | anything,
        "files": st.dictionaries(st.sampled_from(["a.txt", "../up", ""]), st.text(max_size=5) | anything),
        "expected": st.lists(replio_names, max_size=3) | anything,
        "verifier": st.dictionaries(
            st.sampled_from(["exact", "must_include", "avoid", "max_calls", "min_calls", "args", "avoids"]),
            st.lists(replio_names, max_size=2) | st.dictionaries(replio_names.filter(lambda n: isinstance(n, str)), anything) | anything,
        ) | anything,
        "tool_permission": st.dictionaries(st.sampled_from(["edit", "bash", "shell"]), st.sampled_from(["allow", "ask", "deny", "no"])),
        "tools_deny": st.lists(replio_names, max_size=2) | anything,
        "script": anything,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replio_fixture)
def test_any_replio_data_loads_or_fails_with_a_located_error(data: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check(data, Path(folder))


@pytest.mark.usefixtures("litellm_loaded")
def test_both_samples_run_unchanged_against_a_live_model(tmp_path: Path) -> None:
    """The CLI, over HTTP through litellm to a loopback fake OpenAI server, on the files as they are."""
    with OpenAIServer() as server:
        server.push(
            openai_reply(None, [("read_file", {"path": "src/app.py"})]),
            openai_reply("src/app.py has 4 lines."),
            openai_reply(None, [("bash", {"command": "python3 test.py"})]),
            openai_reply(None, [("edit_file", {"path": "lib/calc.py", "old_string": "a - b", "new_string": "a + b"})]),
            openai_reply("Fixed add() in lib/calc.py."),
        )
        config = tmp_path / "tooltrial.yml"
        config.write_text(f"providers:\n  live:\n    model: openai/fake\n    api_base: {server.api_base}\n", encoding="utf-8")
        done = run_cli("run", "tests/foreign/replio/read-file-lines.json", "tests/foreign/elelem/cases",
                       "-p", "live", "--config", str(config), "--results", str(tmp_path / "results"), "-j", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[:3] == ["PASS replio/read-file-lines", "PASS fix/fix-failing-test", "2/2 passed"]
    offered = [tool["function"]["name"] for tool in server.chats[0].body["tools"]]
    assert offered == ["read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "bash"]


def test_replio_tool_names_in_a_script_are_mapped_too(tmp_path: Path) -> None:
    fixture = tmp_path / "lines.json"
    fixture.write_text(
        '{"id": "count", "task": "How many lines are in a.txt?", "files": {"a.txt": "1\\n2\\n"},'
        ' "verifier": {"must_include": ["file_read"]},'
        ' "script": [{"tool_calls": [{"name": "file_read", "arguments": {"path": "a.txt"}}]}, {"content": "2 lines"}]}'
    )
    (case,) = load_file(fixture)
    assert case.script[0]["tool_calls"][0]["name"] == "read_file"
    record = execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(sandbox=Sandbox()))
    assert (record.status, [s.name for s in record.steps]) == ("pass", ["read_file"])
