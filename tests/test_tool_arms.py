"""Tool-definition arms (``run -T FILE``): each file an arm whose model requests carry exactly its tool
definitions (over the loopback OpenAI server, as an alias), a renamed parameter mapped back so the tool and the
trace checks see its own name, the arm named and fingerprinted in the run files, report.json and the HTML page;
``validate -T`` holding a file to the tools a case offers, with positions and did-you-mean."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from runner.spec.fingerprint import digest
from runner.spec.source import parse, to_plain
from runner.tools.registry import BUILTINS
from tests.fake_servers import OpenAIServer, Received, Reply, openai_reply
from tests.helpers import ROOT, cli_output
from tests.html_pages import embedded

CASE = """\
- id: write-hi
  turns: [Write hi to out.txt]
  tools: [read_file, write_file]
  expect:
    files: {out.txt: {equals: hi}}
    trace: {args: {write_file: {path: out.txt}}}
"""

RENAMED = """\
name: renamed
tools:
  write_file:
    description: Create or replace one file of the workspace with the text given.
    parameters:
      path:
        name: file_path
        description: Where to write, relative to the workspace.
      content: {description: The whole new text of the file.}
"""

ONLY_WRITE = """\
offer: [write_file]
tools:
  write_file:
    required: [path]
"""


def _responder(received: Received) -> Reply:
    """A write of ``hi`` by the name the request shows write_file's path under, then a reply."""
    body = received.body or {}
    if any(m.get("role") == "assistant" for m in body.get("messages", [])):
        return openai_reply("Done.")
    write = next(t["function"] for t in body["tools"] if t["function"]["name"] == "write_file")
    key = "file_path" if "file_path" in write["parameters"]["properties"] else "path"
    return openai_reply(None, tool_calls=[("write_file", {key: "out.txt", "content": "hi"})])


def _shown(name: str) -> dict[str, Any]:
    row = BUILTINS[name]
    return {"type": "function", "function": {"name": name, "description": row.description,
                                             "parameters": copy.deepcopy(dict(row.parameters))}}


def _expected() -> dict[str, list[dict[str, Any]]]:
    """Each arm's tool definitions, as the server must have received them."""
    renamed = _shown("write_file")
    function = renamed["function"]
    function["description"] = "Create or replace one file of the workspace with the text given."
    props = function["parameters"]["properties"]
    props["path"]["description"] = "Where to write, relative to the workspace."
    props["content"]["description"] = "The whole new text of the file."
    function["parameters"]["properties"] = {"file_path": props["path"], "content": props["content"]}
    function["parameters"]["required"] = ["file_path", "content"]
    only = _shown("write_file")
    only["function"]["parameters"]["required"] = ["path"]
    return {"renamed": [_shown("read_file"), renamed], "only-write": [only]}


@pytest.mark.usefixtures("litellm_loaded")
def test_each_arms_requests_carry_exactly_its_tool_definitions_and_the_record_names_and_fingerprints_it(
        tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text(CASE, encoding="utf-8")
    (tmp_path / "renamed.yml").write_text(RENAMED, encoding="utf-8")
    (tmp_path / "only-write.yml").write_text(ONLY_WRITE, encoding="utf-8")
    with OpenAIServer(responder=_responder) as server:
        (tmp_path / "tooltrial.yml").write_text(
            f"providers:\n  fake:\n    model: openai/fake\n    api_base: {server.api_base}\n    timeout: 10\n",
            encoding="utf-8")
        code, _, err = cli_output([
            "run", str(tmp_path / "case.yml"), "-p", "fake", "--config", str(tmp_path / "tooltrial.yml"),
            "-T", str(tmp_path / "renamed.yml"), "-T", str(tmp_path / "only-write.yml"), "-j", "1",
            "--results", str(tmp_path / "results"), "--sandbox", "none", "--html", str(tmp_path / "r.html"),
            "--junit", str(tmp_path / "junit.xml")])
        bodies = [chat.body for chat in server.chats]
    assert code == 0, err
    expected = _expected()
    # -j 1: the arm "renamed" runs first, its two requests, then "only-write"'s two
    assert [body["tools"] for body in bodies] == [expected["renamed"]] * 2 + [expected["only-write"]] * 2
    (results,) = (tmp_path / "results").iterdir()
    runs = sorted((json.loads(p.read_text(encoding="utf-8")) for p in (results / "runs").iterdir()),
                  key=lambda run: list(expected).index(run["tool_defs"]))
    fingerprints = {name: digest(to_plain(parse((tmp_path / f"{name}.yml").read_text(encoding="utf-8"), name), name))
                    for name in expected}
    assert [(r["tool_defs"], r["status"], r["tools"], r["provenance"]["tool_defs"]) for r in runs] == [
        (name, "pass", expected[name], fingerprints[name]) for name in ("renamed", "only-write")]
    # the model wrote file_path; the tool and the trace check (args: {path: ...}) saw the tool's own name
    assert runs[0]["steps"][0]["arguments"] == {"path": "out.txt", "content": "hi"}
    sent = runs[0]["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(sent) == {"file_path": "out.txt", "content": "hi"}
    assert [c["passed"] for c in runs[0]["checks"]] == [True, True]
    report = json.loads((results / "report.json").read_text(encoding="utf-8"))
    assert [(r["tool_defs"], r["trace"][0]["arguments"]) for r in report["runs"]] == [
        ("renamed", {"path": "out.txt", "content": "hi"}), ("only-write", {"path": "out.txt", "content": "hi"})]
    assert [(a["arm"], a["tool_defs"], a["provenance"]["tool_defs"]) for a in report["arms"]] == [
        ("fake · default · renamed", "renamed", fingerprints["renamed"]),
        ("fake · default · only-write", "only-write", fingerprints["only-write"])]
    (paired,) = report["comparisons"]
    assert (paired["a"], paired["b"]) == ("fake · default · renamed", "fake · default · only-write")
    assert paired["changed"] == []  # the tools offered differ by design: no case is left out as changed
    suites = ElementTree.parse(tmp_path / "junit.xml").getroot().findall("testsuite")
    assert [(s.get("name"), {p.get("name"): p.get("value") for p in s.iter("property")}["tool_defs"]) for s in suites] == [
        ("fake · default · renamed", "renamed"), ("fake · default · only-write", "only-write")]
    shown = embedded(tmp_path / "r.html", "summary")
    assert isinstance(shown, dict)
    assert [(a["arm"], a["tool_defs"], a["provenance"]["tool_defs"]) for a in shown["arms"]] == [
        (a["arm"], a["tool_defs"], a["provenance"]["tool_defs"]) for a in report["arms"]]


def test_scripted_arms_of_prompts_and_tool_definitions_compare_one_factor_at_a_time(tmp_path: Path) -> None:
    examples = ROOT / "examples" / "tool-descriptions"
    code, out, err = cli_output(["run", str(ROOT / "cases" / "fs.yml"), "-p", "scripted", "-P", "terse", "-P", "default",
                                 "-T", str(examples / "terse.yml"), "-T", str(examples / "guided.yml"),
                                 "--results", str(tmp_path), "--sandbox", "none", "-q"])
    assert code == 0, err
    (results,) = tmp_path.iterdir()
    report = json.loads((results / "report.json").read_text(encoding="utf-8"))
    assert [a["arm"] for a in report["arms"]] == [
        "scripted · terse · terse", "scripted · terse · guided", "scripted · default · terse", "scripted · default · guided"]
    assert [c["factor"] for c in report["comparisons"]] == [
        {"name": "prompt", "a": "terse", "b": "default", "fixed": {"tools": "terse", "provider": "scripted"}},
        {"name": "prompt", "a": "terse", "b": "default", "fixed": {"tools": "guided", "provider": "scripted"}},
        {"name": "tools", "a": "terse", "b": "guided", "fixed": {"prompt": "terse", "provider": "scripted"}},
        {"name": "tools", "a": "terse", "b": "guided", "fixed": {"prompt": "default", "provider": "scripted"}}]
    assert "tools guided vs terse, prompt terse, provider scripted" in out + err


def test_validate_names_an_unknown_tool_or_parameter_where_the_file_writes_it(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text(CASE, encoding="utf-8")
    (tmp_path / "t.yml").write_text(
        "tools:\n  write_fle:\n    description: x\n  write_file:\n    parameters:\n      pth: {name: where}\n"
        "    required: [content, pth]\noffer: [read_file, bsh]\n", encoding="utf-8")
    code, out, err = cli_output(["validate", str(tmp_path / "case.yml"), "-T", str(tmp_path / "t.yml")])
    t = tmp_path / "t.yml"
    assert (code, out) == (4, "")
    assert err.splitlines() == [
        f"error: {t}:2:3: tools.write_fle: tool 'write_fle' is offered by no selected case (did you mean 'write_file'?)",
        f"error: {t}:6:7: tools.write_file.parameters.pth: tool 'write_file' has no parameter 'pth' (did you mean 'path'?)",
        f"error: {t}:7:25: tools.write_file.required.1: tool 'write_file' has no parameter 'pth' (did you mean 'path'?)",
        (f"error: {t}:8:20: offer.1: tool 'bsh' is offered by no selected case "
        "(the selected cases offer: read_file, write_file)")]


def test_a_malformed_tool_definition_file_is_refused_with_its_position_before_any_run(tmp_path: Path) -> None:
    (tmp_path / "t.yml").write_text("tools:\n  bash:\n    descripton: Run it.\n", encoding="utf-8")
    code, out, err = cli_output(["run", str(ROOT / "cases" / "fs.yml"), "-T", str(tmp_path / "t.yml"),
                                 "--results", str(tmp_path / "results")])
    assert (code, out) == (4, "")
    assert err.splitlines() == [(f"error: {tmp_path / 't.yml'}:3:5: tools.bash: unknown key 'descripton' "
                                "(did you mean 'description'?)")]
    assert not (tmp_path / "results").exists()


def test_two_tool_definition_files_of_one_name_are_refused(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.yml").write_text("tools: {}\n", encoding="utf-8")
    code, _, err = cli_output(["run", str(ROOT / "cases" / "fs.yml"), "-T", str(tmp_path / "a" / "t.yml"),
                               "-T", str(tmp_path / "b" / "t.yml"), "--results", str(tmp_path / "results")])
    assert code == 4
    assert err.splitlines() == [("error: tool-definition set 't' is given twice with -T (give each -T once; to run "
                                "each case more often, use --runs N)")]


LINTED = """\
- id: lookup
  turns: [Find the weather]
  tools: [get_weather, get_weathers, bash]
  mocks:
    - name: get_weather
      description: Weather.
      parameters:
        type: object
        properties:
          city: {type: string}
          date: {type: string, description: The day to forecast, as the user said it.}
          units: {type: string, description: Celsius or fahrenheit for the temperatures returned., default: celsius}
        required: [city, units]
      responses: [{result: sunny}]
    - name: get_weathers
      description: The weather forecast of several cities at once, by name.
      parameters: {type: object, properties: {cities: {type: array, description: The names of the cities to look up.}}}
      responses: [{result: sunny}]
"""


def test_the_tools_lint_warns_of_each_rule_with_its_position_and_exits_0(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text(LINTED, encoding="utf-8")
    (tmp_path / "t.yml").write_text("name: plain\ntools:\n  bash:\n    description: Run it.\n", encoding="utf-8")
    code, out, err = cli_output(["validate", str(tmp_path / "case.yml"), "--tools-lint", "-T", str(tmp_path / "t.yml")])
    case, t = tmp_path / "case.yml", tmp_path / "t.yml"
    assert code == 0
    assert out.splitlines()[-1] == "tools lint: 7 findings"
    assert err.splitlines() == [
        (f"warning: {case}:5:7: get_weather: the tool's description is 1 word (fewer than 4): say what it takes and what "
        "it is for [short-description] (tools plain)"),
        (f"warning: {case}:10:17: get_weather.city: the parameter has no description: say what it is for and when to use it "
        "[no-description] (tools plain)"),
        (f"warning: {case}:11:17: get_weather.date: a free-form string: name its format ('date') or a pattern "
        "[free-form-string] (tools plain)"),
        (f"warning: {case}:12:18: get_weather.units: a free-form string that names a choice: list its values as an enum "
        "[free-form-string] (tools plain)"),
        (f"warning: {case}:12:18: get_weather.units: required, yet has a default ('celsius'): drop it from required, or "
        "drop the default [required-with-default] (tools plain)"),
        (f"warning: {t}:3:3: bash: the tool's description is 2 words (fewer than 4): say what it takes and what it is "
        "for [short-description] (tools plain)"),
        (f"warning: {case}:15:7: get_weathers: its name is close to 'get_weather': name them by what sets them apart "
        "[near-duplicate] (tools plain)")]


def test_the_tools_lint_finds_nothing_in_tooltrial_s_own_builtin_tools(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text("- id: every-builtin\n  turns: [Hi]\n", encoding="utf-8")  # offers them all
    code, out, err = cli_output(["validate", str(tmp_path / "case.yml"), "--tools-lint"])
    assert (code, out, err) == (0, "1 case in 1 file is valid\ntools lint: 0 findings\n", "")
    assert all(spec.get("description") for tool in BUILTINS.values() for spec in tool.parameters["properties"].values())


ENUM_CASE = """\
- id: set-mode
  turns: [Go fast]
  tools: [set_mode]
  mocks:
    - name: set_mode
      description: Set how the machine runs from now on.
      parameters: {type: object, properties: {mode: {type: string}}, required: [mode]}
      responses: [{result: ok}]
  script:
    - tool_calls: [{name: set_mode, arguments: {mode: quick}}]
    - content: Done.
"""


def test_an_enum_the_arm_shows_holds_the_calls_of_that_arm_alone(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text(ENUM_CASE, encoding="utf-8")
    (tmp_path / "modes.yml").write_text("tools:\n  set_mode:\n    parameters:\n      mode: {enum: [fast, slow]}\n",
                                        encoding="utf-8")
    runs = {}
    for flags in ([], ["-T", str(tmp_path / "modes.yml")]):
        results = tmp_path / f"results{len(flags)}"
        code, _, err = cli_output(["run", str(tmp_path / "case.yml"), "--results", str(results), "--sandbox", "none",
                                   *flags])
        assert code == 0, err
        (folder,) = results.iterdir()
        (path,) = (folder / "runs").iterdir()
        runs[len(flags)] = json.loads(path.read_text(encoding="utf-8"))
    assert [(s["status"], s["result"]) for s in runs[0]["steps"]] == [("executed", "ok")]
    assert [(s["status"], s["result"]) for s in runs[2]["steps"]] == [
        ("refused", "Error: invalid arguments for set_mode: mode: 'quick' is not one of ['fast', 'slow']")]
    assert runs[2]["tools"][0]["function"]["parameters"]["properties"] == {"mode": {"type": "string", "enum": ["fast", "slow"]}}


def test_resume_reuses_the_runs_of_a_tool_definition_file_and_refuses_them_once_it_is_edited(tmp_path: Path) -> None:
    tools = tmp_path / "a.yml"
    tools.write_text("tools:\n  bash:\n    description: Run one shell command in the workspace.\n", encoding="utf-8")
    argv = ["run", str(ROOT / "cases" / "fs.yml"), "-c", "fs/find-then-read", "-T", str(tools),
            "--results", str(tmp_path / "results"), "--sandbox", "none", "-q"]
    assert cli_output(argv)[0] == 0
    (folder,) = (tmp_path / "results").iterdir()
    code, _, err = cli_output([*argv, "-c", "fs/grep-symbol", "--resume", str(folder)])
    assert code == 0, err
    (resumed,) = [f for f in (tmp_path / "results").iterdir() if f != folder] or [folder]
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in (resumed / "runs").iterdir()]
    assert sorted((r["case"], r["tool_defs"]) for r in runs) == [("fs/find-then-read", "a"), ("fs/grep-symbol", "a")]
    tools.write_text("tools:\n  bash:\n    description: Run one shell command, then read what it printed.\n",
                     encoding="utf-8")
    code, _, err = cli_output([*argv, "--resume", str(folder)])
    assert code == 4
    assert err.splitlines()[-1] == (
        f"error: --resume {folder}: its runs of fs/find-then-read [scripted · default · a] were made from other "
        "inputs: tool definitions a changed (run the suite afresh (without --resume), or put back what changed)")


def test_resume_with_one_more_tool_definition_arm_runs_that_arm_and_reuses_the_other(tmp_path: Path) -> None:
    for name, text in (("a", "Run one shell command in the workspace."), ("b", "Run a command; read its output.")):
        (tmp_path / f"{name}.yml").write_text(f"tools:\n  bash:\n    description: {text}\n", encoding="utf-8")
    argv = ["run", str(ROOT / "cases" / "fs.yml"), "-c", "fs/find-then-read", "--results", str(tmp_path / "results"),
            "--sandbox", "none", "-q", "-T", str(tmp_path / "a.yml")]
    assert cli_output(argv)[0] == 0
    (folder,) = (tmp_path / "results").iterdir()
    code, _, err = cli_output([*argv, "-T", str(tmp_path / "b.yml"), "--resume", str(folder)])
    assert code == 0, err
    (resumed,) = [f for f in (tmp_path / "results").iterdir() if f != folder]
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in (resumed / "runs").iterdir()]
    first = {r["tool_defs"]: r for r in (json.loads(p.read_text(encoding="utf-8")) for p in (folder / "runs").iterdir())}
    assert sorted(r["tool_defs"] for r in runs) == ["a", "b"]
    by_arm = {r["tool_defs"]: r for r in runs}
    assert by_arm["a"]["started"] == first["a"]["started"]  # reused as it was
    assert by_arm["b"]["tools"][-1]["function"]["description"] == "Run a command; read its output."


def test_record_keeps_each_tool_definition_arms_run_as_a_case_of_its_own(tmp_path: Path) -> None:
    examples = ROOT / "examples" / "tool-descriptions"
    code, _, err = cli_output(["run", str(ROOT / "cases" / "fs.yml"), "-c", "fs/find-then-read", "-T",
                               str(examples / "terse.yml"), "-T", str(examples / "guided.yml"), "--results",
                               str(tmp_path / "results"), "--record", str(tmp_path / "rec"), "--sandbox", "none", "-q"])
    assert code == 0, err
    recorded = (tmp_path / "rec" / "cases" / "fs.yml").read_text(encoding="utf-8")
    assert [line.strip() for line in recorded.splitlines() if line.strip().startswith("- id:")] == [
        "- id: find-then-read.guided", "- id: find-then-read.terse"]


def test_run_refuses_a_file_naming_no_offered_tool_or_showing_two_parameters_under_one_name(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text(CASE, encoding="utf-8")
    (tmp_path / "t.yml").write_text("tools:\n  write_file:\n    parameters:\n      path: {name: content}\n  bassh: {}\n",
                                    encoding="utf-8")
    code, out, err = cli_output(["run", str(tmp_path / "case.yml"), "-T", str(tmp_path / "t.yml"),
                                 "--results", str(tmp_path / "results")])
    t = tmp_path / "t.yml"
    assert (code, out) == (4, "")
    assert err.splitlines() == [
        (f"error: {t}:4:7: tools.write_file.parameters.path: tool 'write_file' would show parameters 'path' and "
        "'content' both as 'content' (give each parameter a name of its own)"),
        (f"error: {t}:5:3: tools.bassh: tool 'bassh' is offered by no selected case (the selected cases offer: "
        "read_file, write_file)")]
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("command", [["run", "--results", "RESULTS"], ["list"], ["list", "--shard", "1/2"]])
def test_a_missing_tool_definition_file_is_named_with_the_fix(tmp_path: Path, command: list[str]) -> None:
    argv = [word.replace("RESULTS", str(tmp_path / "results")) for word in command]
    code, out, err = cli_output([*argv, str(ROOT / "cases" / "fs.yml"), "-T", str(tmp_path / "nope.yml")])
    assert (code, out) == (4, "")
    assert err.splitlines() == [
        (f"error: {tmp_path / 'nope.yml'}: cannot read the tool-definition file: [Errno 2] No such file or directory: "
        f"'{tmp_path / 'nope.yml'}' (give -T a YAML file such as examples/tool-descriptions/terse.yml)")]


SCRIPTED_WRITE = """\
- id: write-hi
  turns: [Write hi to out.txt]
  tools: [read_file, write_file]
  expect:
    files: {out.txt: {equals: hi}}
    trace: {must_include: [write_file]}
  script:
    - tool_calls: [{name: write_file, arguments: {KEY: out.txt, content: hi}}]
    - content: Done.
"""


@pytest.mark.parametrize(("key", "status", "failure"), [("path", "fail", "wrong_args"), ("file_path", "pass", None)])
def test_a_script_calls_by_the_names_its_arm_shows_and_a_refused_call_is_wrong_args(
        tmp_path: Path, key: str, status: str, failure: str | None) -> None:
    (tmp_path / "case.yml").write_text(SCRIPTED_WRITE.replace("KEY", key), encoding="utf-8")
    (tmp_path / "renamed.yml").write_text(RENAMED, encoding="utf-8")
    code, out, _ = cli_output(["run", str(tmp_path / "case.yml"), "-p", "scripted", "-T", str(tmp_path / "renamed.yml"),
                               "--results", str(tmp_path / "results"), "--sandbox", "none", "-q"])
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "results").glob("*/runs/*.json")]
    assert (code, record["status"], record["failure"]) == ((1, status, failure) if failure else (0, status, failure))
    if failure:
        assert ("  never called write_file (1 refused call: invalid arguments for write_file: "
                "'file_path' is a required property)") in out.splitlines()
