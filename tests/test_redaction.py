"""Keys in what tooltrial writes (docs/safety.md, "Secrets in what it writes"): an attack through the CLI.

A loopback OpenAI fake echoes the key it is sent: in a 401 body, in a reply's text and tool-call
arguments, in a judge's reasoning, and back to an external agent that sent its endpoint key. A file
the agent reads and the output of setup and verify commands hold another key, the environment's
``OPENAI_API_KEY`` (the case file builds it from two halves, so it is never in the case's own text).
Every byte tooltrial then writes (the results folder, report.json, HTML, JUnit, the Markdown summary,
OpenTelemetry with and without ``--otel-content``, ``--record``, the response cache, stdout, stderr)
must hold neither key, nor the run's endpoint key, and the markers must stand where they were.
Commands run with ``--sandbox none``: the scrubbing is the sandbox's business in no mode, and the agent
program lives under ``/tmp``, which bubblewrap hides.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_servers import OpenAIServer, Received, Reply, openai_reply
from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

TAIL = "Hy4RtE6uJ1oP"
CANARY = "sk-canary-" + "Zq7PLx3vN9wK2mT8"  # the alias's key, TT_CANARY (a name only its api_key_env makes secret)
ENV_CANARY = "sk-envcanary-" + TAIL  # OPENAI_API_KEY: a key by its name
MARK, ENV_MARK, AGENT_MARK = "[redacted: TT_CANARY]", "[redacted: OPENAI_API_KEY]", "[redacted: endpoint key]"
ROW = re.compile(r"ROW-(\w+)")
AGENT = """\
import json, os, sys, urllib.request
key = os.environ["OPENAI_API_KEY"]
print("KEY=" + key)
body = {"model": os.environ["TOOLTRIAL_MODEL"], "messages": [{"role": "user", "content": "ROW-agent " + key}]}
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(body).encode(),
                                 {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
"""
SUITE = f"""\
- id: auth
  turns: [ROW-auth]
- id: reply
  turns: [ROW-reply]
  expect: {{response_contains: [nothing-here], files: {{k.txt: {{equals: x}}}}}}
- id: tool
  setup: ["printf 'sk-envcanary-%s' {TAIL} > notes.txt"]
  turns: [ROW-tool]
- id: command
  setup: ["printf 'sk-envcanary-%s\\\\n' {TAIL}"]
  turns: [ROW-command]
  expect: {{verify: "printf 'sk-envcanary-%s' {TAIL}; exit 1"}}
- id: setup-fails
  setup: ["printf 'sk-envcanary-%s' {TAIL}; exit 3"]
  turns: [ROW-command]
- id: judged
  turns: [ROW-judged]
  expect: {{judge: {{rubric: JUDGE-ME, model: fake}}}}
- id: agent
  agent: {{command: python3 AGENT}}
  turns: [ROW-agent]
"""


def _respond(received: Received) -> Reply:
    """The fake provider: answers each case (``ROW-<id>`` in its prompt) with the key it was sent."""
    key = _key(received)
    text = json.dumps(received.body)
    row = ROW.search(text).group(1)  # type: ignore[union-attr]
    results = sum(message["role"] == "tool" for message in received.body["messages"])
    if "JUDGE-ME" in text:
        return openai_reply(json.dumps({"score": 1, "reasoning": f"the key {key} is fine"}))
    if row == "auth":
        return Reply({"error": {"message": f"Incorrect API key provided: {key}.", "type": "invalid_request_error",
                                "code": "invalid_api_key"}}, status=401)
    if row == "reply" and not results:
        return openai_reply(f"I will write {key}", tool_calls=[("write_file", {"path": "k.txt", "content": key})])
    if row == "reply":
        return openai_reply(f"the key was {key}")
    if row == "tool" and not results:
        return openai_reply(None, tool_calls=[("read_file", {"path": "notes.txt"})])
    if row == "agent":
        return openai_reply("you said: " + received.body["messages"][-1]["content"])
    return openai_reply(f"done {key}" if row == "judged" else "done")


def _suite(tmp_path: Path, server: OpenAIServer) -> list[str]:
    """The case file and tooltrial.yml in ``tmp_path``; the ``run`` arguments writing every output there."""
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "leak.yml").write_text(SUITE.replace("AGENT", str(tmp_path / "agent.py")), encoding="utf-8")
    (tmp_path / "tooltrial.yml").write_text(
        f"providers:\n  fake:\n    model: openai/gpt-x\n    api_base: {server.api_base}\n"
        "    api_key_env: TT_CANARY\n    retries: {attempts: 1}\n", encoding="utf-8")
    out = tmp_path / "out"
    return ["run", str(tmp_path / "leak.yml"), "--config", str(tmp_path / "tooltrial.yml"), "-p", "fake",
            "--sandbox", "none", "--results", str(out / "results"), "--report", str(out / "report.json"),
            "--html", str(out / "report.html"), "--junit", str(out / "junit.xml"), "--summary-md",
            str(out / "summary.md"), "--otel", str(out / "otel.jsonl"), "--record", str(out / "record"),
            "--cache", str(out / "cache"), "--live"]


def _endpoint_keys(server: OpenAIServer) -> set[str]:
    """The external agent's endpoint keys, as its requests carried them to the provider."""
    found = {m.group(1) for r in server.chats for m in re.finditer(r"ROW-agent ([\w-]+)", json.dumps(r.body))}
    assert found and all(len(key) == 32 for key in found), found  # secrets.token_urlsafe(24)
    return found


def _written(out: Path, stdout: str, stderr: str) -> dict[str, bytes]:
    """Every file under ``out`` and both streams, by name; Markdown's and JSON's backslash escapes taken
    out (the summary writes ``sk\\-canary``), so a key escaped for its format is found too."""
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    found = {**files, "stdout": stdout.encode(), "stderr": stderr.encode()}
    return {name: data.replace(b"\\", b"") for name, data in found.items()}


def _assert_clean(written: dict[str, bytes], secrets: set[str]) -> None:
    leaks = {name: [s[:14] for s in secrets if s.encode() in data] for name, data in written.items()}
    leaked = {name: found for name, found in leaks.items() if found}
    assert not leaked, f"a key is in {len(leaked)} outputs: {leaked}"


def _runs(out: Path) -> dict[str, dict[str, Any]]:
    (results,) = (out / "results").iterdir()
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((results / "runs").iterdir())]
    return {run["case"].split("/")[1]: run for run in runs}


def _assert_marked(out: Path, written: dict[str, bytes]) -> None:
    """Each marker stands where its key was: in the record, and in every format that shows that part."""
    runs = _runs(out)
    assert MARK in runs["auth"]["cause"] and MARK in runs["auth"]["model_requests"][0]["attempts"][0]["message"]
    assert runs["reply"]["final_reply"] == f"the key was {MARK}"
    assert runs["reply"]["steps"][0]["arguments"] == {"path": "k.txt", "content": MARK}
    assert ENV_MARK in runs["tool"]["steps"][0]["result"]
    assert [c["stdout"] for c in runs["command"]["commands"]] == [ENV_MARK + "\n", ENV_MARK]
    assert runs["setup-fails"]["commands"][0]["stdout"] == ENV_MARK
    assert MARK in runs["judged"]["checks"][0]["message"] and runs["judged"]["final_reply"] == f"done {MARK}"
    assert runs["agent"]["commands"][0]["stdout"] == f"KEY={AGENT_MARK}\nyou said: ROW-agent {AGENT_MARK}\n"
    assert any("redacted in this run's record: TT_CANARY (" in w for w in runs["reply"]["warnings"])
    assert runs["reply"]["messages"][-1]["content"] == f"the key was {MARK}"  # the conversation as sent, too
    assert ENV_MARK in next(m for m in runs["tool"]["messages"] if m["role"] == "tool")["content"]
    assert {"role": "user", "content": f"ROW-agent {AGENT_MARK}"} in runs["agent"]["messages"]
    for name in ("report.json", "report.html", "junit.xml", "summary.md", "otel.jsonl"):
        assert MARK.encode() in written[name], name
    assert MARK.encode() in written["stdout"] + written["stderr"]  # the terminal: where depends on --output
    for name in ("report.json", "report.html"):
        assert ENV_MARK.encode() in written[name] and AGENT_MARK.encode() in written[name], name
    assert MARK.encode() in written["record/cases/leak.yml"]


def test_no_output_holds_a_key_a_provider_a_tool_or_a_command_echoed(tmp_path: Path) -> None:
    with OpenAIServer(responder=_respond) as server:
        argv = _suite(tmp_path, server)
        done = run_cli(*argv, "--output", "json", env={"TT_CANARY": CANARY, "OPENAI_API_KEY": ENV_CANARY})
        endpoint_keys = _endpoint_keys(server)
    assert done.returncode == 1, done.stderr
    written = _written(tmp_path / "out", done.stdout, done.stderr)
    assert "cache/cache.db" in written and "otel.jsonl" in written
    _assert_clean(written, {CANARY, ENV_CANARY, *endpoint_keys})
    _assert_marked(tmp_path / "out", written)
    assert b"gen_ai.tool.call.result" not in written["otel.jsonl"]  # without --otel-content: no tool result
    assert b"gen_ai.input.messages" not in written["otel.jsonl"] and b"gen_ai.system_instructions" not in written["otel.jsonl"]


def test_worker_processes_redact_too_with_otel_content(tmp_path: Path) -> None:
    """``--workers 2`` (the workers' fork server gets this process's environment), with ``--otel-content``, which
    exports reply texts, tool arguments and results. Ray tasks: tests/test_ray.py, on its two-node cluster."""
    flags = ["--workers", "2"]
    with OpenAIServer(responder=_respond) as server:
        argv = [word for word in _suite(tmp_path, server) if word != "--live"]
        env = {**os.environ, "TT_CANARY": CANARY, "OPENAI_API_KEY": ENV_CANARY}
        done = subprocess.run([sys.executable, "-m", "runner", *argv, "-j", "2", "--otel-content", *flags],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
        endpoint_keys = _endpoint_keys(server)
    assert done.returncode == 1, done.stderr
    written = _written(tmp_path / "out", done.stdout, done.stderr)
    _assert_clean(written, {CANARY, ENV_CANARY, *endpoint_keys})
    _assert_marked(tmp_path / "out", written)
    assert b"gen_ai.tool.call.result" in written["otel.jsonl"]
    assert ENV_MARK.encode() in written["otel.jsonl"] and AGENT_MARK.encode() in written["otel.jsonl"]
    inputs = _otel_inputs(tmp_path / "out" / "otel.jsonl")  # what each request carried, as the record keeps it
    assert inputs["agent"][0] == [{"role": "user", "parts": [{"type": "text", "content": f"ROW-agent {AGENT_MARK}"}]}]
    (_, (_, _, result)) = inputs["tool"]
    assert result["role"] == "tool" and ENV_MARK in result["parts"][0]["response"]


def _otel_inputs(lines: Path) -> dict[str, list[list[dict[str, Any]]]]:
    """Each case's chat spans' ``gen_ai.input.messages``, decoded, in request order, from an ``--otel`` file."""
    found: dict[str, list[list[dict[str, Any]]]] = {}
    for line in lines.read_text(encoding="utf-8").splitlines():
        spans = [s for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        values = [{a["key"]: next(iter(a["value"].values())) for a in s["attributes"]} for s in spans]
        (case,) = [v["tooltrial.case"] for v in values if "tooltrial.case" in v]
        chats = sorted((v for v in values if "gen_ai.input.messages" in v), key=lambda v: int(v["tooltrial.request.index"]))
        found[case.split("/")[1]] = [json.loads(v["gen_ai.input.messages"]) for v in chats]
    return found


def test_doctor_tells_what_the_server_said_without_the_key(tmp_path: Path) -> None:
    """``doctor --call`` shows a failed request's error and a reply without a tool call: both echo the key."""
    with OpenAIServer(responder=_refuse) as refusing, OpenAIServer(responder=_chat) as chatting:
        config = tmp_path / "tooltrial.yml"
        config.write_text("providers:\n" + "".join(
            f"  {name}: {{model: openai/x, api_base: '{server.api_base}', api_key_env: TT_CANARY}}\n"
            for name, server in (("refusing", refusing), ("chatting", chatting))), encoding="utf-8")
        done = [run_cli("doctor", "--config", str(config), "--call", *flags, env={"TT_CANARY": CANARY})
                for flags in ((), ("--output", "json"))]
    for one in done:
        assert CANARY not in one.stdout + one.stderr and one.stdout.count(MARK) == 2, one.stdout


def _key(received: Received) -> str:
    """The key a request was sent with."""
    return received.headers.get("authorization", "").removeprefix("Bearer ")


def _refuse(received: Received) -> Reply:
    return Reply({"error": {"message": f"Incorrect API key provided: {_key(received)}"}}, status=401)


def _chat(received: Received) -> Reply:
    return openai_reply(f"no tools, but your key is {_key(received)}")


@pytest.mark.parametrize(("key", "marked"), [
    ("sk-test-SECRET123", "REDACTED"),  # litellm's own filter knows the pattern, and runs first
    ("tt-local-SECRET123", "[redacted: TT_CANARY]"),  # no pattern of litellm's knows it: tooltrial's filter, by value
])
def test_litellms_verbose_log_holds_no_key_of_an_alias(tmp_path: Path, key: str, marked: str) -> None:
    (tmp_path / "hi.yml").write_text("- id: hi\n  turns: [Say hi]\n  expect: {response_contains: [hi]}\n")
    with OpenAIServer() as server:
        (tmp_path / "tooltrial.yml").write_text(f"providers:\n  canary:\n    model: openai/fake\n    api_base: "
                                                f"{server.api_base}\n    api_key_env: TT_CANARY\n    timeout: 10\n")
        server.push(openai_reply(f"hi, the key you sent is {key}"))  # a server that echoes the key: litellm logs it
        done = run_cli("run", str(tmp_path / "hi.yml"), "-p", "canary", "--config", str(tmp_path / "tooltrial.yml"),
                       "-v", "--sandbox", "none", "--results", str(tmp_path / "r"), env={"TT_CANARY": key})
        assert server.chats[0].headers["authorization"] == f"Bearer {key}"
    assert done.returncode == 0, done.stderr
    assert "LiteLLM DEBUG" in done.stderr and "RAW RESPONSE" in done.stderr
    assert "SECRET123" not in done.stderr + done.stdout
    assert f"the key you sent is {marked}" in done.stderr
