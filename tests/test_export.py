"""``tooltrial export RESULTS --format messages``: one JSON line per run, the conversation in OpenAI's chat
format with the run's verdict and scores, chosen by status, case and provider; over the loopback OpenAI
server the exported messages are those the server got on the last request, then the final reply."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from runner.run.transcript import TEXT_LIMIT
from tests.fake_servers import OpenAIServer, openai_reply
from tests.fake_wire import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    AnthropicServer,
    GeminiServer,
    anthropic_reply,
    gemini_reply,
    text,
    thinking,
    tool_use,
)
from tests.helpers import ROOT, cli_output, run_cli
from tests.wire_runs import run_case

SCRIPTED = """\
- id: greet
  system: "Be brief."
  turns: [Write hi to out.txt]
  expect:
    files: {out.txt: {equals: hi}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
    - content: Done.
- id: miss
  turns: [Write hi to out.txt]
  expect:
    files: {out.txt: {equals: hi}}
  script:
    - content: No.
"""


def _scripted_results(tmp_path: Path, cases: str = SCRIPTED, *flags: str) -> Path:
    (tmp_path / "cases.yml").write_text(cases, encoding="utf-8")
    done = run_cli("run", str(tmp_path / "cases.yml"), "-p", "scripted", "--sandbox", "none",
                   "--results", str(tmp_path / "results"), *flags)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    return folder


_SCHEMAS = {name: json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text()) for name in ("export", "run")}
_LINE = Draft202012Validator(_SCHEMAS["export"], registry=Registry().with_resources(
    (schema["$id"], Resource.from_contents(schema)) for schema in _SCHEMAS.values()))


def _lines(text: str) -> list[dict[str, Any]]:
    """The JSON lines of ``text``, each held to schemas/export.schema.json."""
    assert text.endswith("\n")
    lines = [json.loads(line) for line in text.splitlines()]
    for line in lines:
        _LINE.validate(line)
    return lines


def test_each_run_is_one_line_with_its_conversation_verdict_and_scores(tmp_path: Path) -> None:
    folder = _scripted_results(tmp_path)
    code, out, err = cli_output(["export", str(folder), "--format", "messages"])
    assert code == 0, err
    assert err == "exported 2 runs of 2\n"
    greet, miss = _lines(out)
    call = greet["messages"][2]["tool_calls"][0]
    assert greet["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Write hi to out.txt"},
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "name": "write_file", "content": "wrote 2 bytes to out.txt"},
        {"role": "assistant", "content": "Done."}]
    assert call["function"] == {"name": "write_file", "arguments": '{"path": "out.txt", "content": "hi"}'}
    assert [t["function"]["name"] for t in greet["tools"]] == ["read_file", "write_file", "edit_file", "list_dir",
                                                                "glob", "grep", "bash"]
    assert {k: v for k, v in greet.items() if k not in ("messages", "tools")} == {
        "case": "cases/greet", "provider": "scripted", "prompt": "default", "arm": "scripted · default", "run": 1,
        "attempt": 1, "agent": None, "status": "pass", "outcome": 1.0, "process": None, "accuracy": None,
        "failure": None, "error_kind": None, "cause": None, "final_reply": "Done.", "cut": []}
    assert (miss["case"], miss["status"], miss["outcome"], miss["failure"]) == ("cases/miss", "fail", 0.0, "missing_output")


def test_status_case_and_provider_filters_choose_the_runs_and_o_writes_a_file(tmp_path: Path) -> None:
    folder = _scripted_results(tmp_path)
    target = tmp_path / "out" / "pass.jsonl"
    code, out, err = cli_output(["export", str(folder), "--status", "pass", "-o", str(target)])
    assert (code, out, err) == (0, "", f"exported 1 run of 2 to {target}\n")
    assert [line["case"] for line in _lines(target.read_text())] == ["cases/greet"]
    code, out, _ = cli_output(["export", str(folder), "--status", "pass", "--status", "fail", "-c", "*/mi*",
                               "-p", "script*"])
    assert [line["case"] for line in _lines(out)] == ["cases/miss"]
    code, out, err = cli_output(["export", str(folder), "--status", "error"])
    assert (code, out) == (4, "")
    assert "no run matched the filters" in err
    code, _, err = cli_output(["export", str(folder), "--status", "passed"])
    assert code == 4 and "invalid choice: 'passed'" in err
    code, _, err = cli_output(["export", str(tmp_path / "nowhere")])
    assert code == 4 and "Traceback" not in err
    code, _, err = cli_output(["export", str(folder), "-o", str(tmp_path)])
    assert (code, err) == (4, f"error: -o {tmp_path} is a folder (give a file path, e.g. {tmp_path / 'runs.jsonl'})\n")


def test_filters_that_match_no_run_are_refused_before_any_output_so_o_is_neither_made_nor_changed(
        tmp_path: Path) -> None:
    folder = _scripted_results(tmp_path)
    refused = ("error: no run matched the filters (check --status, -c, -p and --no-cut against "
               "'tooltrial report')\n")
    fresh = tmp_path / "out" / "none.jsonl"
    assert cli_output(["export", str(folder), "--status", "error", "-o", str(fresh)]) == (4, "", refused)
    assert not (tmp_path / "out").exists()
    kept = tmp_path / "kept.jsonl"
    kept.write_text('{"earlier": 1}\n', encoding="utf-8")
    before = kept.stat()
    assert cli_output(["export", str(folder), "-c", "nomatch/*", "-o", str(kept)]) == (4, "", refused)
    assert kept.read_text(encoding="utf-8") == '{"earlier": 1}\n'
    assert (kept.stat().st_ino, kept.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.yml", "kept.jsonl", "results"]

def test_a_cut_text_is_listed_on_the_line_and_no_cut_leaves_the_run_out(tmp_path: Path) -> None:
    long = "x" * (TEXT_LIMIT + 5)
    folder = _scripted_results(tmp_path, f"""\
- id: long
  turns: ["{long}"]
  script:
    - content: Read it.
- id: short
  turns: [hello]
  script:
    - content: Hi.
""")
    code, out, _ = cli_output(["export", str(folder)])
    assert code == 0
    lines = {line["case"]: line for line in _lines(out)}
    assert lines["cases/long"]["cut"] == [1]
    assert "[... 5 characters left out ...]" in lines["cases/long"]["messages"][1]["content"]
    assert lines["cases/short"]["cut"] == []
    code, out, err = cli_output(["export", str(folder), "--no-cut"])
    assert code == 0
    assert [line["case"] for line in _lines(out)] == ["cases/short"]
    assert err == "exported 1 run of 2\n"


@pytest.mark.usefixtures("litellm_loaded")
def test_exported_messages_are_what_the_server_got_on_the_last_request_then_the_final_reply(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text("- id: notes\n  turns: [Write hi to a.txt]\n", encoding="utf-8")
    (tmp_path / "tooltrial.yml").write_text(
        "providers:\n  fake:\n    model: openai/gpt-4o-mini\n    api_base: {base}\n    timeout: 10\n", encoding="utf-8")
    with OpenAIServer() as server:
        server.push(openai_reply("Writing.", tool_calls=[("write_file", {"path": "a.txt", "content": "hi"})]),
                    openai_reply("Wrote <b>a.txt</b>."))
        config = (tmp_path / "tooltrial.yml").read_text().replace("{base}", server.api_base)
        (tmp_path / "tooltrial.yml").write_text(config, encoding="utf-8")
        code, _, err = cli_output(["run", str(tmp_path / "case.yml"), "-p", "fake", "--config",
                                   str(tmp_path / "tooltrial.yml"), "--results", str(tmp_path / "r"), "--sandbox", "none"])
        last = server.chats[-1].body
    assert code == 0, err
    code, out, err = cli_output(["export", str(tmp_path / "r")])
    (line,) = _lines(out)
    assert line["messages"][:-1] == last["messages"]
    assert line["messages"][-1] == {"role": "assistant", "content": "Wrote <b>a.txt</b>."}
    assert line["tools"] == last["tools"]
    assert (line["provider"], line["status"], line["outcome"]) == ("fake", "pass", None)


def test_an_external_agents_anthropic_messages_export_in_openai_chat_format(tmp_path: Path) -> None:
    agent = ROOT / "tests" / "agents" / "messages_agent.py"
    (tmp_path / "tooltrial.yml").write_text(json.dumps({"agents": {"msg": {
        "command": f"{sys.executable} {agent}", "input": "stdin"}}}), encoding="utf-8")
    folder = _scripted_results(tmp_path, """\
- id: greet
  agent: msg
  files: {name.txt: Ada}
  turns: [Greet the person named in name.txt.]
  script:
    - tool_calls: [{name: read_file, arguments: {path: name.txt}}]
    - content: Hello, Ada!
""", "--config", str(tmp_path / "tooltrial.yml"))
    code, out, err = cli_output(["export", str(folder)])
    assert code == 0, err
    (line,) = _lines(out)
    call = line["messages"][2]["tool_calls"][0]
    assert line["messages"] == [
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Greet the person named in name.txt."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": "read_file", "arguments": '{"path": "name.txt"}'}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": "Ada"},
        {"role": "assistant", "content": "Hello, Ada!"}]
    assert line["tools"][0] == {"type": "function", "function": {
        "name": "read_file", "description": "Read a text file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}
    assert (line["agent"], line["status"]) == ("msg", "pass")


@pytest.mark.usefixtures("litellm_loaded")
@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
def test_runs_of_other_providers_export_the_openai_chat_form_they_were_recorded_in(tmp_path: Path, kind: str) -> None:
    """litellm takes the OpenAI chat form for every provider and the record keeps what it was given: the
    assistant's calls as ``tool_calls``, its results as ``tool`` messages, the provider's own fields beside."""
    hi = {"path": "out.txt", "content": "hi"}
    if kind == "anthropic":
        server, model = AnthropicServer(), f"anthropic/{ANTHROPIC_MODEL}"
        server.push(anthropic_reply([thinking("Write it.", "SIG=="), tool_use("toolu_1", "write_file", hi)]),
                    anthropic_reply([text("Done.")]))
    else:
        server, model = GeminiServer(), f"gemini/{GEMINI_MODEL}"
        server.push(gemini_reply([{"functionCall": {"name": "write_file", "args": hi}}]), gemini_reply([{"text": "Done."}]))
    with server:
        code, err, _ = run_case(tmp_path, server, model)
    assert code == 0, err
    code, out, err = cli_output(["export", str(next((tmp_path / "try0" / "results").iterdir()))])
    assert code == 0, err
    (line,) = _lines(out)
    system, user, assistant, result, final = line["messages"]
    assert [m["role"] for m in (system, user, assistant, result, final)] == ["system", "user", "assistant", "tool",
                                                                            "assistant"]
    (call,) = assistant["tool_calls"]
    assert (call["type"], call["function"]["name"], json.loads(call["function"]["arguments"])) == ("function",
                                                                                                  "write_file", hi)
    assert result["tool_call_id"] == call["id"] and final == {"role": "assistant", "content": "Done."}
    if kind == "anthropic":
        assert call["id"] == "toolu_1"
        assert assistant["thinking_blocks"] == [thinking("Write it.", "SIG==")]
