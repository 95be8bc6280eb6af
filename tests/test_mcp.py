"""MCP tool servers end to end through the CLI: a stdio server started per run under the sandbox, a
streamable HTTP server on 127.0.0.1, tools listed and offered as SERVER__TOOL, calls routed and
recorded, trace checks and matchers on them, deny, tool errors, servers that fail to start, and no
server process left behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.sandbox.bwrap import PRIVATE
from tests.helpers import run_cli
from tests.mcp_http import SERVER, HttpServer, http_server  # noqa: F401 (the fixture)
from tests.sandboxes import MODES, make_sandbox, needs_visible_checkout, processes_with

COMMAND = json.dumps([sys.executable, str(SERVER)])
# bubblewrap gives commands a private /tmp: an interpreter that lives there (a checkout cloned into /tmp, as CI
# may do) is not seen inside, so the stdio server then runs unconfined, which this file's other tests cover apart
SANDBOX = ["--sandbox", "none"] if any(Path(sys.prefix).resolve().is_relative_to(p) for p in PRIVATE) else []


def _records(results: Path) -> dict[str, dict[str, Any]]:
    """Each run record of the one results folder under ``results``, by case id."""
    (folder,) = results.iterdir()
    records = [json.loads(p.read_text(encoding="utf-8")) for p in (folder / "runs").glob("*.json")]
    return {record["case"]: record for record in records}


def _steps(record: dict[str, Any]) -> list[tuple[str, str, bool, str]]:
    return [(s["name"], s["result"], s["is_error"], s["status"]) for s in record["steps"]]


STDIO = f"""\
- id: work
  turns: [Add 2 and 3 and note the sum.]
  mcp: [{{name: files, command: {COMMAND}, env: {{LEVEL: 3}}}}]
  env: {{GREETING: hi}}
  deny: [files__echo]
  command_timeout: 1
  expect:
    files:
      note.txt: {{equals: "5"}}
    response_contains: ["5"]
    trace:
      must_include: [files__add, files__note]
      args: {{files__add: {{a: 2, b: {{type: integer}}}}}}
      calls:
        - {{name: files__note, args: {{path: note.txt, text: {{matches: '^5$'}}}}}}
        - {{name: files__add, args: {{a: 2, b: 3}}, exact_args: true}}
  script:
    - tool_calls: [{{name: files__add, arguments: {{a: 2, b: 3}}}}]
    - tool_calls: [{{name: files__echo, arguments: {{text: hi}}}}]
    - tool_calls: [{{name: files__fail, arguments: {{message: boom}}}}]
    - tool_calls: [{{name: files__add, arguments: {{a: two, b: 3}}}}]
    - tool_calls: [{{name: files__sleep, arguments: {{seconds: 30}}}}]
    - tool_calls: [{{name: files__note, arguments: {{path: note.txt, text: "5"}}}}]
    - tool_calls: [{{name: files__environment}}]
    - content: The sum is 5.
"""


@pytest.mark.slow  # a server process of its own, which imports the SDK
@needs_visible_checkout  # the server is this interpreter
def test_a_stdio_server_runs_in_the_workspace_and_its_calls_are_checked_and_recorded(tmp_path: Path) -> None:
    server = f"server-{uuid.uuid4().hex}.py"  # written into the workspace; a name to look for in the process table
    source = f"  files: {{{server}: {json.dumps(SERVER.read_text(encoding='utf-8'))}}}\n"
    cases = tmp_path / "mcp.yml"
    cases.write_text(STDIO.replace(json.dumps(str(SERVER)), server).replace("  deny:", source + "  deny:", 1),
                     encoding="utf-8")
    result = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"), *SANDBOX)
    assert result.returncode == 0, result.stdout + result.stderr
    work = _records(tmp_path / "results")["mcp/work"]
    assert work["status"] == "pass", work["checks"]
    assert _steps(work) == [
        ("files__add", "5", False, "executed"),
        ("files__echo", "Error: tool 'files__echo' is denied in this case", True, "refused"),
        ("files__fail", "Error: Error executing tool fail: boom", True, "executed"),
        ("files__add", "Error: invalid arguments for files__add: a: 'two' is not of type 'integer'", True, "refused"),
        ("files__sleep", "Error: the MCP server did not answer within 1s", True, "executed"),
        ("files__note", "wrote note.txt", False, "executed"),
        ("files__environment", "GREETING,HOME,LANG,LC_ALL,LEVEL,PATH," + ("" if SANDBOX else "PWD,") + "PYTHONDONTWRITEBYTECODE,TERM", False,
         "executed"),  # the scrubbed environment, the case's and the server's env; PWD as a shell sets it
    ]
    assert [c["check"] for c in work["checks"] if not c["passed"]] == []
    assert processes_with(server) == []


def test_an_http_server_alone_replaces_the_builtins(tmp_path: Path, http_server: HttpServer) -> None:  # noqa: F811
    cases = tmp_path / "remote.yml"
    case = f"""\
- id: sum
  turns: [Add 40 and 2.]
  mcp: [{{name: remote, url: "{http_server}"}}]
  tools: ["remote__*"]
  expect:
    response_contains: ["42"]
    trace: {{exact: [remote__add], calls: [{{name: remote__add, args: {{a: 40, b: 2}}}}]}}
  script:
    - tool_calls: [{{name: read_file, arguments: {{path: x}}}}, {{name: remote__add, arguments: {{a: 40, b: 2}}}}]
    - content: "42"
"""
    wrong = case.replace("id: sum", "id: wrong").replace("args: {a: 40, b: 2}}]", "args: {a: 41, b: 1}}]")
    missing = case.replace("id: sum", "id: missing").replace('tools: ["remote__*"]', "tools: [remote__add, remote__nope]")
    cases.write_text(case + wrong + missing, encoding="utf-8")
    result = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert result.returncode == 1, result.stdout + result.stderr  # a failed case outranks the setup error
    records = _records(tmp_path / "results")
    available = "remote__add, remote__echo, remote__fail, remote__note, remote__environment, remote__sleep"
    assert _steps(records["remote/sum"]) == [
        ("read_file", f"Error: unknown tool 'read_file'; available: {available}", True, "refused"),
        ("remote__add", "42", False, "executed"),
    ]
    assert records["remote/sum"]["status"] == "pass"
    wrong = records["remote/wrong"]
    assert (wrong["status"], wrong["failure"]) == ("fail", "wrong_args")
    assert [c["check"] for c in wrong["checks"] if not c["passed"]] == ["trace.calls"]
    missing = records["remote/missing"]
    assert (missing["status"], missing["error_kind"], missing["steps"]) == ("error", "setup", [])
    assert missing["cause"] == ("MCP server 'remote' has no tool 'nope' (named 'remote__nope' by the case);"
                                " it lists: add, echo, fail, note, environment, sleep")


def test_an_http_servers_tools_are_offered_with_its_descriptions_and_schemas_and_its_end_is_survived(
        tmp_path: Path, http_server: HttpServer) -> None:  # noqa: F811
    from runner.sandbox.command import Sandbox
    from runner.spec.discover import load_cases
    from runner.tools.base import ToolContext, ToolError
    from runner.tools.mcp import McpServers
    from runner.tools.toolbox import Toolbox, build_toolbox

    cases = tmp_path / "g.yml"
    cases.write_text(f'- {{id: c, turns: [Hi.], mcp: [{{name: r, url: "{http_server}"}}], deny: ["r__*"]}}\n',
                     encoding="utf-8")
    (case,) = load_cases([cases])
    context = ToolContext(tmp_path, Sandbox(), {})
    with McpServers() as servers:
        box = build_toolbox(case, context, servers.start(case, context))
        add = next(spec["function"] for spec in box.specs() if spec["function"]["name"] == "r__add")
        denied = box.call("r__echo", {"text": "x"})
        cancel = threading.Event()
        threading.Timer(0.1, cancel.set).start()
        ctrl_c = box.tools["r__sleep"].run
        with pytest.raises(ToolError, match="^stopped: the suite was interrupted$"):
            ctrl_c({"seconds": 1}, ToolContext(tmp_path, Sandbox(), {}, cancel=cancel))
        http_server.stop()
        gone = Toolbox({"r__add": box.tools["r__add"]}, (), context).call("r__add", {"a": 1, "b": 2})
    assert (gone.content, gone.is_error) == ("Error: MCP error: Connection closed", True)
    assert [w.split(": ")[0] for w in servers.warnings] == ["MCP servers did not stop cleanly"]
    assert box.offered[-6:] == ["r__add", "r__echo", "r__fail", "r__note", "r__environment", "r__sleep"]
    assert add["description"] == "Add two integers."
    assert add["parameters"]["properties"] == {"a": {"title": "A", "type": "integer"},
                                               "b": {"title": "B", "type": "integer"}}
    assert add["parameters"]["required"] == ["a", "b"]
    assert (denied.content, denied.refused) == ("Error: tool 'r__echo' is denied in this case", True)


def test_servers_that_fail_to_start_are_setup_errors_and_the_runs_deadline_a_timeout(tmp_path: Path) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    cases = tmp_path / "broken.yml"
    cases.write_text(f"""\
- id: exits
  turns: [Hi.]
  mcp: [{{name: gone, command: [sh, -c, "printf 'Traceback:\\n  File x\\nModuleNotFoundError: no mcp\\n' >&2; exit 3"]}}]
  script: [{{content: hi}}]
- id: unreachable
  turns: [Hi.]
  mcp: [{{name: far, url: "http://127.0.0.1:{port}/mcp", timeout: 5}}]
  script: [{{content: hi}}]
- id: silent
  turns: [Hi.]
  timeout: 1
  mcp: [{{name: mute, command: [sh, -c, "cat > /dev/null"]}}]
  script: [{{content: hi}}]
""", encoding="utf-8")
    result = run_cli("run", str(cases), "-p", "scripted", "-c", "broken/exits", "-c", "broken/unreachable",
                     "--results", str(tmp_path / "results"))
    assert result.returncode == 6, result.stdout + result.stderr
    records = _records(tmp_path / "results")
    exits, unreachable = records["broken/exits"], records["broken/unreachable"]
    assert (exits["status"], exits["error_kind"]) == ("error", "setup")
    assert exits["cause"].startswith("MCP server 'gone' did not start: ")
    assert exits["cause"].endswith("; stderr ends with: ModuleNotFoundError: no mcp\n"
                                   "Traceback:\n  File x\nModuleNotFoundError: no mcp")
    assert (unreachable["status"], unreachable["error_kind"]) == ("error", "setup")
    assert unreachable["cause"].startswith("MCP server 'far' did not start: ")
    assert "ERROR broken/exits: MCP server 'gone' did not start" in result.stdout
    assert "; stderr ends with: ModuleNotFoundError: no mcp\n" in result.stdout  # the line shows the last one
    late = run_cli("run", str(cases), "-p", "scripted", "-c", "broken/silent", "--results", str(tmp_path / "late"))
    assert late.returncode == 1, late.stdout + late.stderr
    silent = _records(tmp_path / "late")["broken/silent"]  # the run's time ran out while its server said nothing
    assert (silent["status"], silent["error_kind"]) == ("error", "timeout")
    assert silent["cause"].startswith("run timed out after 1s, starting MCP servers: MCP server 'mute' did not start:"
                                      " TimeoutError: no answer to initialize and tools/list within ")


def test_mcp_servers_are_checked_when_loading(tmp_path: Path) -> None:
    cases = tmp_path / "bad.yml"
    cases.write_text("""\
- id: c
  turns: [Hi.]
  mcp:
    - {name: files, command: [python3, s.py]}
    - {name: files, url: "http://127.0.0.1:1/mcp"}
    - {name: both, command: [x], url: "http://127.0.0.1:1/mcp"}
    - {name: Bad_Name, url: "http://127.0.0.1:1/mcp"}
  tools: [files__add, "files__*", read_file]
  expect:
    trace: {must_include: [files__add, filez__add], avoid: ["files__*"]}
""", encoding="utf-8")
    result = run_cli("validate", str(cases))
    assert result.returncode == 4
    assert result.stderr.splitlines() == [
        (f"error: {cases}:5:14: mcp[1].name: duplicate MCP server 'files' (give each server its own name:"
         " it is the prefix of its tools' names (NAME__TOOL))"),
        (f"error: {cases}:6:7: mcp[2]: give exactly one of 'command' or 'url' (a stdio server is started from"
         " `command: [program, args...]`; a running one is reached at `url`)"),
        f"error: {cases}:7:14: mcp[3].name: 'Bad_Name' is not a valid name (must match ^[A-Za-z0-9][A-Za-z0-9-]{{0,31}}$)",
        (f"error: {cases}:10:40: expect.trace.must_include[1]: unknown tool 'filez__add' (no MCP server 'filez':"
         " did you mean 'files'?)"),
        (f"error: {cases}:10:61: expect.trace.avoid[0]: 'files__*' is a pattern (name one tool: SERVER__* selects only"
         " in tools and deny)"),
    ]
    fine = tmp_path / "fine.yml"
    fine.write_text(cases.read_text(encoding="utf-8").replace("filez__add", "files__note").replace('"files__*"]}', "files__rm]}")
                    .replace("    - {name: files, url", "    - {name: other, url")
                    .replace("command: [x], url", "url").replace("Bad_Name", "Bad-Name"), encoding="utf-8")
    assert run_cli("validate", str(fine)).returncode == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_server_command_line_confines_the_server_as_every_command(mode: str, tmp_path: Path) -> None:
    sandbox = make_sandbox(mode)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "ONLY": "this"}
    program = ["sh", "-c", "grep '^Seccomp:' /proc/self/status; env | sort; pwd"]
    argv = sandbox.server_argv(program, tmp_path, env, 30, False, tmp_path.parent / f"{tmp_path.name}.filter")
    # spawned as the SDK spawns a stdio server: the parent's environment, no descriptor passed on
    done = subprocess.run(argv, cwd=tmp_path, env={**os.environ, "SECRET": "x"}, capture_output=True, text=True,
                          timeout=30, start_new_session=True, check=False)
    filtered = "2" if mode == "bwrap" else "0"  # seccomp's filter mode: the socket filter reached bwrap on fd 3
    assert done.stdout.splitlines() == [f"Seccomp:\t{filtered}", f"HOME={tmp_path}", "ONLY=this",
                                        f"PATH={os.environ['PATH']}", f"PWD={tmp_path}", str(tmp_path)], done.stderr


@given(st.lists(st.from_regex(r"[a-z]{1,3}", fullmatch=True), min_size=1, max_size=4, unique=True),
       st.lists(st.from_regex(r"[a-z_]{1,4}", fullmatch=True), max_size=4, unique=True))
def test_a_server_pattern_stands_for_exactly_the_names_under_its_prefix(servers: list[str], tools: list[str]) -> None:
    from runner.spec.offered import expand, mcp_pattern, offers

    known = [f"{server}__{tool}" for server in servers for tool in tools] + ["read_file"]
    first = servers[0]
    assert expand([mcp_pattern(first)], known) == [f"{first}__{tool}" for tool in tools]
    assert [name for name in known if offers([mcp_pattern(first)], name)] == [f"{first}__{tool}" for tool in tools]
    assert not offers([mcp_pattern(first)], f"{first}__")
    assert expand(["read_file", mcp_pattern(first), "read_file"], known)[0] == "read_file"


def test_a_results_text_structured_content_and_error_are_what_the_model_sees() -> None:
    from mcp.types import (
        CallToolResult,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
        TextResourceContents,
    )

    from runner.tools.base import ToolError
    from runner.tools.mcp import result_text

    blocks = [TextContent(text="first"), ImageContent(data="aGk=", mime_type="image/png"),
              EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="inside")),
              ResourceLink(uri="file:///b.txt", name="b")]
    assert result_text(CallToolResult(content=blocks)) == (
        "first\n[image image/png: 4 base64 characters]\ninside\n[resource link file:///b.txt]")
    assert result_text(CallToolResult(content=[], structured_content={"celsius": 21, "sky": "sûnny"})) == (
        '{"celsius": 21, "sky": "sûnny"}')
    assert result_text(CallToolResult(content=[TextContent(text="21")], structured_content={"celsius": 21})) == "21"
    with pytest.raises(ToolError, match="^no such city$"):
        result_text(CallToolResult(content=[TextContent(text="no such city")], is_error=True))
    with pytest.raises(ToolError, match="^the MCP tool reported an error$"):
        result_text(CallToolResult(content=[], is_error=True))
