"""External agent programs through the CLI (``agent:``, ``agents:`` in tooltrial.yml, ``--agent``): the
bundled example passes and its wrong-script twin fails for the right cause; what the wire says becomes the
record (steps, results, errors, replies, requests); a turn limit, a wrong key, a non-zero exit, the
agent's own timeout and the run's deadline each end the run as they should; case mistakes name the place."""

from __future__ import annotations

import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from runner.sandbox.bwrap import PRIVATE
from tests.helpers import ROOT, run_cli
from tests.sandboxes import needs_visible_checkout

AGENTS = ROOT / "tests" / "agents"
PYTHON = sys.executable


def _project(tmp_path: Path, agents: dict[str, dict[str, Any]], cases: str) -> tuple[Path, Path]:
    (tmp_path / "tooltrial.yml").write_text(json.dumps({"agents": agents}))
    (tmp_path / "cases.yml").write_text(cases)
    return tmp_path / "tooltrial.yml", tmp_path / "cases.yml"


# bubblewrap where it works, unless the agent programs (the checkout's) or their interpreter live under the
# private /tmp it gives commands (a checkout cloned into /tmp, as CI may): they would not be there to run.
UNSEEN = any(path.resolve().is_relative_to(p) for path in (ROOT, Path(sys.prefix)) for p in PRIVATE)
SANDBOX = "none" if UNSEEN else "auto"


def _run(tmp_path: Path, *argv: str, sandbox: str = "none") -> tuple[int, str, list[dict[str, Any]]]:
    """``tooltrial run ARGV -p scripted`` (``--sandbox none`` unless told): exit code, output, run records."""
    results = tmp_path / "results"
    done = run_cli("run", *argv, "-p", "scripted", "--sandbox", sandbox, "--results", str(results))
    runs = sorted((p for p in results.glob("*/runs/*.json")), key=lambda p: p.name) if results.exists() else []
    return done.returncode, done.stdout + done.stderr, [json.loads(p.read_text()) for p in runs]


def _messages_agent(**env: str) -> dict[str, Any]:
    return {"command": f"{PYTHON} {AGENTS / 'messages_agent.py'}", "input": "stdin", "env": env}


FILES_CASE = """\
- id: fix
  agent: {agent}
  files: {{notes.txt: "draft\\n"}}
  turns: ["Read missing.txt, then put final in notes.txt."]
  expect:
    files: {{notes.txt: {{equals: final}}}}
    response_contains: [final]
    {more}
  script:
    - tool_calls: [{{name: read_file, arguments: {{path: missing.txt}}}}]
    - tool_calls: [{{name: write_file, arguments: {{path: notes.txt, content: final}}}}]
    - content: notes.txt now says final.
"""


def test_the_bundled_example_passes_and_its_wrong_script_fails_for_wrong_tool(tmp_path: Path) -> None:
    examples = ROOT / "examples" / "agents"
    code, output, runs = _run(tmp_path, str(examples / "cases" / "version.yml"), str(examples / "cases" / "wrong.yml"),
                              "--config", str(examples / "tooltrial.yml"), "--agent", "files-agent", sandbox=SANDBOX)
    assert code == 1, output
    right, wrong = runs
    assert (right["case"], right["status"], wrong["case"], wrong["status"]) == (
        "version/bump-patch", "pass", "wrong/bump-blind", "fail")
    assert (right["agent"]["name"], right["agent"]["command"]) == ("files-agent", "python3 {{ here }}/agent.py")
    assert [(w["turn"], w["api"], w["stream"], w["status"], w["error"]) for w in right["agent"]["wire"]] == [
        (0, "chat", False, 200, None)] * 3
    assert [(s["name"], s["arguments"], s["result"], s["status"]) for s in right["steps"]] == [
        ("read_file", {"path": "VERSION"}, "1.4.2\n", "executed"),
        ("write_file", {"path": "VERSION", "content": "1.4.3\n"}, "wrote VERSION", "executed")]
    assert right["final_reply"] == "Bumped VERSION from 1.4.2 to 1.4.3."
    assert [(c["phase"], c["exit_code"], c["stdout"]) for c in right["commands"]] == [
        ("agent", 0, "Bumped VERSION from 1.4.2 to 1.4.3.\n")]
    assert right["commands"][0]["command"] == (f"python3 {examples.resolve()}/agent.py "
                                               "'Bump the patch version in VERSION.'")
    assert (right["requests"], [r["turn"] for r in right["model_requests"]]) == (3, [0, 0, 0])
    assert wrong["failure"] == "wrong_tool"
    report = json.loads(next((tmp_path / "results").glob("*/report.json")).read_text())
    for document, schema in ((right, "run"), (wrong, "run"), (report, "report")):
        Draft202012Validator(json.loads((ROOT / "schemas" / f"{schema}.schema.json").read_text())).validate(document)
    assert [c["message"] for c in wrong["checks"] if not c["passed"]] == [
        "calls [write_file] do not contain [read_file, write_file] in that order"]


def test_the_wire_is_the_record_and_a_stream_records_the_same(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"json": _messages_agent(), "stream": _messages_agent(AGENT_STREAM="1")},
                             FILES_CASE.format(agent="json", more="trace: {order: [read_file, write_file]}"))
    code, output, (plain,) = _run(tmp_path / "a", str(cases), "--config", str(config))
    assert (code, plain["status"]) == (0, "pass"), output
    assert [(s["name"], s["result"], s["is_error"], s["status"], s["request"], s["turn"]) for s in plain["steps"]] == [
        ("read_file", "no file missing.txt", True, "executed", 0, 0),
        ("write_file", "wrote notes.txt", False, "executed", 1, 0)]
    assert [(r["finish_reason"], r["text"], [c["status"] for c in r["tool_calls"]]) for r in plain["model_requests"]] == [
        ("tool_calls", None, ["executed"]), ("tool_calls", None, ["executed"]), ("stop", "notes.txt now says final.", [])]
    assert plain["errors"] == 1  # the failed read, as the agent marked it
    code, output, (streamed,) = _run(tmp_path / "b", str(cases), "--config", str(config), "--agent", "stream")
    assert code == 0, output

    def same(record: dict[str, Any]) -> Any:
        steps = [{k: v for k, v in s.items() if k not in ("duration", "started")} for s in record["steps"]]
        asked = [{k: v for k, v in r.items() if k not in ("started", "latency")} for r in record["model_requests"]]
        return steps, asked, record["final_reply"], record["script"], record["outcome"], record["process"]

    assert same(streamed) == same(plain)
    assert [w["stream"] for w in plain["agent"]["wire"]] == [False] * 3
    assert [w["stream"] for w in streamed["agent"]["wire"]] == [True] * 3


def test_past_max_turns_the_endpoint_refuses_and_the_run_stops_at_the_turn_limit(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"msg": _messages_agent()}, FILES_CASE.format(agent="msg", more="max_turns: 1"))
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, run["status"], run["error_kind"], run["failure"]) == (1, "error", "turn_limit", "turn_limit"), output
    assert run["cause"] == "turn limit 1 exceeded: the agent's requests past it are refused"
    assert run["requests"] == 1
    assert [(w["status"], w["error"]) for w in run["agent"]["wire"]] == [
        (200, None), (400, "turn limit 1 exceeded: the agent's requests past it are refused")]
    assert [(s["name"], s["status"]) for s in run["steps"]] == [("read_file", "executed")]  # its result came, refused
    assert run["commands"][0]["stderr"] == (
        "model error 400: turn limit 1 exceeded: the agent's requests past it are refused\n")


def test_a_wrong_key_is_refused_and_a_failing_agent_is_the_agents_failure(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"msg": _messages_agent(AGENT_KEY="stolen")}, FILES_CASE.format(agent="msg", more=""))
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, run["status"], run["error_kind"], run["failure"]) == (1, "error", "agent_failed", "agent_failed"), output
    assert run["cause"] == ("the agent command exited 2 in turn 1: model error 401: invalid API key: use the key "
                            "tooltrial gives in OPENAI_API_KEY / ANTHROPIC_API_KEY")
    assert (run["requests"], run["steps"]) == (0, [])
    assert run["warnings"] == [("the agent's endpoint refused 1 request(s) without the run's key "
                                "(OPENAI_API_KEY / ANTHROPIC_API_KEY)")]


def test_a_call_whose_result_never_came_back_is_recorded_as_not_run(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"msg": _messages_agent(AGENT_QUIT_ON_CALL="1")},
                             FILES_CASE.format(agent="msg", more="trace: {must_include: [read_file]}"))
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, run["status"]) == (1, "fail"), output
    assert [(s["name"], s["status"], s["result"]) for s in run["steps"]] == [("read_file", "no_result", "")]
    assert run["model_requests"][0]["tool_calls"][0]["status"] == "no_result"
    Draft202012Validator(json.loads((ROOT / "schemas" / "run.schema.json").read_text())).validate(run)
    assert "never called read_file (1 no_result call: no_result)" in [c["message"] for c in run["checks"] if not c["passed"]]


def test_a_non_zero_exit_and_the_agents_own_timeout_are_agent_failed(tmp_path: Path) -> None:
    agents = {"broken": {"command": "echo half done; echo 'Traceback...' >&2; echo 'KeyError: x' >&2; exit 3",
                         "input": "stdin"},
              "slow": {"command": "sleep 30", "input": "stdin", "timeout": 0.5}}
    case = "- id: one\n  agent: {}\n  turns: [go]\n  script: [{{content: ok}}]\n"
    config, cases = _project(tmp_path, agents, case.format("broken"))
    code, output, (run,) = _run(tmp_path / "a", str(cases), "--config", str(config))
    assert (code, run["error_kind"], run["failure"]) == (1, "agent_failed", "agent_failed"), output
    assert run["cause"] == "the agent command exited 3 in turn 1: KeyError: x"
    assert [(c["phase"], c["exit_code"], c["stdout"]) for c in run["commands"]] == [("agent", 3, "half done\n")]
    code, output, (run,) = _run(tmp_path / "b", str(cases), "--config", str(config), "--agent", "slow")
    assert (code, run["error_kind"], run["cause"]) == (1, "agent_failed", "the agent command passed its timeout of 0.5s in turn 1")
    assert run["commands"][0]["timed_out"] is True


@needs_visible_checkout  # the agent is this interpreter
def test_the_runs_deadline_kills_the_agents_whole_process_group(tmp_path: Path) -> None:
    marker = f"agent-{uuid.uuid4().hex}"
    agents = {"hung": {"command": f"{PYTHON} {AGENTS / 'messages_agent.py'} {marker} & wait", "input": "stdin",
                       "env": {"AGENT_SLEEP": "60"}}}
    config, cases = _project(tmp_path, agents, "- id: one\n  agent: hung\n  timeout: 1\n  turns: [go]\n"
                                               "  script: [{content: ok}]\n")
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config), sandbox=SANDBOX)
    assert (code, run["error_kind"], run["failure"]) == (1, "timeout", "run_error"), output
    assert run["cause"] == "run timed out after 1s, running the agent command (turn 1)"
    assert run["commands"][0]["timed_out"] is True
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker in _cmdline(p)]
    assert alive == []


def _cmdline(process: Path) -> str:
    try:
        return (process / "cmdline").read_bytes().decode(errors="replace")
    except OSError:  # gone meanwhile
        return ""


def test_an_unknown_agent_name_is_an_error_at_the_case_with_the_nearest_name(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"files-agent": {"command": "true"}}, "- id: one\n  agent: files-agnet\n"
                                                                            "  turns: [go]\n  script: [{content: ok}]\n")
    code, output, runs = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, runs) == (4, [])
    assert f"error: {cases}:1: cases/one.agent: unknown agent 'files-agnet' in {config} (did you mean 'files-agent'?)" in output
    code, output, _ = _run(tmp_path, str(cases), "--config", str(config), "--agent", "file-agent")
    assert code == 4
    assert f"error: --agent 'file-agent' is neither one of {config}'s agents nor a file (did you mean 'files-agent'?)" in output


def test_agent_mistakes_are_named_where_they_are_written(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yml"
    cases.write_text("- id: one\n  agent:\n    command: run-it --task {{ task }}\n    input: template\n"
                     "  turns: [go]\n  script: [{content: ok}]\n"
                     "- id: two\n  agent: {command: x, input: args}\n  turns: [go]\n  script: [{content: ok}]\n")
    code, output, _ = _run(tmp_path, str(cases))
    assert code == 4
    assert (f"error: {cases}:3:14: agent.command: the command uses 'task', which a command template does not have "
            "(it has turn, model, workspace, here)") in output
    assert (f"error: {cases}:3:14: agent.command: input: template, but the command never places {{{{ turn }}}} "
            "(write {{ turn | shell }} where the turn goes, or use input: argument or stdin)") in output
    assert f"{cases}:8:" in output and "agent.input: 'args' is not one of 'argument', 'stdin', 'template'" in output and "'args'" in output
    agent_file = tmp_path / "mine.yml"
    agent_file.write_text("command: x\ntimeout: -1\n")
    cases.write_text("- id: one\n  turns: [go]\n  script: [{content: ok}]\n")
    code, output, _ = _run(tmp_path, str(cases), "--agent", str(agent_file))
    assert code == 4
    assert f"error: {agent_file}:2:10: timeout: must be greater than 0, got -1\n" in output


def test_the_process_score_counts_an_avoided_tool_only_where_the_agent_offered_it(tmp_path: Path) -> None:
    trace = "trace: {order: [write_file, read_file], avoid: [bash, write_file], max_calls: 5}"
    config, cases = _project(tmp_path, {"msg": _messages_agent()}, FILES_CASE.format(agent="msg", more=trace))
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, run["status"], run["agent"]["tools"]) == (1, "fail", ["read_file", "write_file"]), output
    failed = sorted(c["check"] for c in run["checks"] if not c["passed"])
    assert failed == ["trace.avoid", "trace.order"]
    # avoid: write_file (offered, called) 0, bash (a builtin the agent never offered) not counted; order 0; max_calls 1
    assert run["process"] == 1 / 3
    assert run["failure"] == "called_forbidden"


def test_a_case_with_an_agent_may_name_the_agents_own_tools(tmp_path: Path) -> None:
    case = ("- id: one\n{agent}  turns: [go]\n  expect:\n    trace: {{must_include: [grep_repo], args: {{read_file: {{offset: 3}}}}}}\n"
            "  script: [{{content: ok}}]\n")
    cases = tmp_path / "cases.yml"
    cases.write_text(case.format(agent="  agent: {command: my-agent}\n"))
    done = run_cli("validate", str(cases))
    assert (done.returncode, done.stdout) == (0, "1 case in 1 file is valid\n")
    cases.write_text(case.format(agent=""))
    done = run_cli("validate", str(cases))
    assert done.returncode == 4
    assert f"{cases}:4:28: expect.trace.must_include[0]: unknown tool 'grep_repo' (did you mean 'grep'?)" in done.stderr


def test_a_template_command_places_the_turn_shell_quoted(tmp_path: Path) -> None:
    turn = "it's $(touch pwned) `id` fine"
    agents = {"echo": {"command": "printf '%s' {{ turn | shell }} > said.txt; echo {{ model }}", "input": "template",
                       "model": "m-1"}}
    case = f"- id: one\n  agent: echo\n  turns: [{json.dumps(turn)}]\n  expect:\n    files: {{said.txt: {{equals: {json.dumps(turn)}}}, pwned: {{exists: false}}}}\n  script: [{{content: ok}}]\n"
    config, cases = _project(tmp_path, agents, case)
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, run["status"]) == (0, "pass"), output
    assert run["commands"][0]["stdout"] == "m-1\n"


def test_live_shows_each_request_and_each_call_whose_result_came_back(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"msg": _messages_agent()}, FILES_CASE.format(agent="msg", more=""))
    done = run_cli("run", str(cases), "--config", str(config), "-p", "scripted", "--sandbox", "none", "--live",
                   "--results", str(tmp_path / "results"))
    lines = [re.sub(r"\d+\.\d\ds$", "Ts", line) for line in done.stdout.splitlines()[:7]]
    assert lines == ["▶ cases/fix",
                     "  model request 1 (turn 1): tool_calls, 1 call, tokens not reported, Ts",
                     '  -> read_file {"path":"missing.txt"}: error: no file missing.txt, Ts',
                     "  model request 2 (turn 1): tool_calls, 1 call, tokens not reported, Ts",
                     '  -> write_file {"path":"notes.txt","content":"final"}: ok, Ts',
                     "  model request 3 (turn 1): stop, 0 calls, tokens not reported, Ts",
                     "PASS cases/fix"], done.stdout


def test_an_agent_file_runs_every_selected_case_and_names_the_agent_after_its_stem(tmp_path: Path) -> None:
    (tmp_path / "mine.yml").write_text(json.dumps(_messages_agent()))
    cases = tmp_path / "cases.yml"
    cases.write_text(FILES_CASE.format(agent="not-defined-anywhere", more=""))
    code, output, (run,) = _run(tmp_path, str(cases), "--agent", str(tmp_path / "mine.yml"))
    assert (code, run["status"], run["agent"]["name"]) == (0, "pass", "mine"), output
    assert run["agent"]["command"] == f"{PYTHON} {AGENTS / 'messages_agent.py'}"


def test_each_turn_is_one_invocation_and_its_reply_is_checked_on_its_own(tmp_path: Path) -> None:
    case = """\
- id: two
  agent: msg
  turns:
    - {content: "Say one.", expect: {response_contains: [one]}}
    - {content: "Say two.", expect: {response_contains: [two], response_not_contains: [one]}}
  script: [{content: one}, {content: two}]
"""
    config, cases = _project(tmp_path, {"msg": _messages_agent()}, case)
    code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    assert (code, run["status"], run["final_reply"]) == (0, "pass", "two"), output
    assert [c["check"] for c in run["checks"]] == [
        "turns[0].response_contains", "turns[1].response_contains", "turns[1].response_not_contains"]
    assert [(c["stdout"], c["exit_code"]) for c in run["commands"]] == [("one\n", 0), ("two\n", 0)]
    assert [r["turn"] for r in run["model_requests"]] == [0, 1]


def test_validate_refuses_an_agent_name_its_config_does_not_define_as_run_does(tmp_path: Path) -> None:
    config, cases = _project(tmp_path, {"files-agent": {"command": "true"}}, "- id: one\n  agent: files-agnet\n"
                                                                            "  turns: [go]\n  script: [{content: ok}]\n")
    done = run_cli("validate", str(cases), "--config", str(config))
    assert done.returncode == 4
    assert done.stderr == (f"error: {cases}:1: cases/one.agent: unknown agent 'files-agnet' in {config} "
                           "(did you mean 'files-agent'?)\n")
    (tmp_path / "right.yml").write_text("- id: two\n  agent: files-agent\n  turns: [go]\n  script: [{content: ok}]\n")
    done = run_cli("validate", str(tmp_path / "right.yml"), "--config", str(config))
    assert (done.returncode, done.stdout) == (0, "1 case in 1 file is valid\n")


RESPONSES_AGENT = """\
import json, os, sys, urllib.error, urllib.request
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
for path in ("/responses", "/embeddings?q=%1b[31m"):
    request = urllib.request.Request(base + path, data=b"{}", headers={"Authorization": "Bearer " + key})
    try:
        urllib.request.urlopen(request)
    except urllib.error.HTTPError as e:
        print(e.code, json.loads(e.read())["error"]["message"])
"""


def test_requests_to_a_route_the_endpoint_does_not_serve_are_named_in_a_warning(tmp_path: Path) -> None:
    (tmp_path / "responses_agent.py").write_text(RESPONSES_AGENT)
    agents = {"responses": {"command": f"{PYTHON} {tmp_path / 'responses_agent.py'}"}}
    config, cases = _project(tmp_path, agents, "- id: one\n  agent: responses\n  turns: [go]\n"
                                               "  script: [{content: ok}]\n")
    _code, output, (run,) = _run(tmp_path, str(cases), "--config", str(config))
    served = "POST /v1/chat/completions, POST /v1/messages and GET /v1/models"
    assert run["commands"][0]["stdout"] == f"404 not found: tooltrial serves {served}\n" * 2
    assert run["warnings"] == [("the agent's endpoint does not serve POST /v1/responses, POST /v1/embeddings?q=%1b[31m:"
                                " it serves POST /v1/chat/completions (OpenAI), POST /v1/messages (Anthropic) and GET"
                                " /v1/models")]
    assert run["warnings"][0] in output
