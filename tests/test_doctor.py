"""``tooltrial doctor``: each provider's key, endpoint and native tool calls, checked against loopback fakes:
one that answers and calls tools, one that refuses connections, one that only writes text (on this machine:
maybe a llama.cpp server that dropped the tools), one that writes its call as text, and an Ollama without the
model; and the sandbox runs will use, with what it checked."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any, ClassVar

import pytest

from runner.providers.probe import FAIL, OK, SKIPPED, Server, _key, _local_openai
from runner.providers.settings import ModelSettings
from tests.fake_servers import OllamaServer, OpenAIServer, Reply, openai_reply
from tests.helpers import run_cli
from tests.sandboxes import BWRAP, BWRAP_HARDENED

pytestmark = pytest.mark.usefixtures("litellm_loaded")

MODELS = Reply({"object": "list", "data": [{"id": "fake", "object": "model"}]})
TAGS = Reply({"models": [{"name": "llama3:latest"}, {"name": "qwen3:latest"}]})
PONG = openai_reply(tool_calls=[("ping", {"word": "pong"})])
LLAMA_CPP_CAUSE = ("a llama.cpp server ignores the tools unless started with --jinja and a chat template that supports "
                   "tools (docs/providers.md)")


class Listing(OpenAIServer):
    """An OpenAI-compatible fake that lists its models at /v1/models."""

    static: ClassVar[dict[str, Reply]] = {"/v1/models": MODELS}


class Refusing(OpenAIServer):
    static: ClassVar[dict[str, Reply]] = {"/v1/models": Reply({"error": {"message": "Incorrect API key provided"}}, status=401)}


class Tags(OllamaServer):
    static: ClassVar[dict[str, Reply]] = {**OllamaServer.static, "/api/tags": TAGS}


def _refused_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _doctor(tmp_path: Path, aliases: dict[str, str], *flags: str, env: dict[str, str | None] | None = None
            ) -> tuple[int, str, list[dict[str, Any]]]:
    """``tooltrial doctor --output json`` with a tooltrial.yml of ``aliases`` (alias -> its YAML mapping);
    the exit code, the text table of the same check, and the JSON findings."""
    config = tmp_path / "tooltrial.yml"
    config.write_text("providers:\n" + "".join(f"  {name}: {entry}\n" for name, entry in aliases.items()), encoding="utf-8")
    done = run_cli("doctor", "--config", str(config), "--output", "json", *flags, env=env)
    text = run_cli("doctor", "--config", str(config), *flags, env=env)
    assert text.returncode == done.returncode, text.stderr
    return done.returncode, text.stdout, json.loads(done.stdout)


def _found(diagnosis: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(f["check"], f["status"], f["detail"]) for f in diagnosis["findings"]]


def test_doctor_tells_a_working_provider_from_a_dead_one_and_one_without_tool_calls(tmp_path: Path) -> None:
    port = _refused_port()
    with Listing() as up, Listing() as text_only, Listing() as as_text:
        up.push(PONG, PONG)  # one for the JSON run, one for the table
        text_only.push(*[openai_reply("I would ping, but I cannot call tools.")] * 2)
        as_text.push(*[openai_reply('<tool_call>{"name": "ping", "arguments": {"word": "pong"}}</tool_call>')] * 2)
        code, table, found = _doctor(tmp_path, {
            "up": f"{{model: openai/fake, api_base: '{up.api_base}'}}",
            "down": f"{{model: openai/fake, api_base: 'http://127.0.0.1:{port}/v1'}}",
            "textonly": f"{{model: openai/fake, api_base: '{text_only.api_base}'}}",
            "astext": f"{{model: openai/fake, api_base: '{as_text.api_base}'}}"}, "--call")
        chats = [(len(s.chats), [t["function"]["name"] for t in s.chats[0].body["tools"]]) for s in (up, text_only, as_text)]
    assert code == 6
    assert [(d["name"], d["ok"]) for d in found] == [
        ("scripted", True), ("up", True), ("down", False), ("textonly", False), ("astext", False)]
    by_name = {d["name"]: _found(d) for d in found}
    (_, status, detail) = by_name["up"][1]
    assert (status, detail.split(" (HTTP")[0]) == (OK, f"{up.api_base}/models answers")
    assert by_name["up"][0] == ("key", OK, "none needed: a server on this machine")
    assert by_name["up"][2] == ("tools", OK, "native tool calls")
    assert by_name["down"][1:] == [
        ("endpoint", FAIL, f"http://127.0.0.1:{port}/v1/models does not answer (connection refused)"),
        ("tools", SKIPPED, "the endpoint check failed")]
    assert by_name["textonly"][2] == ("tools", FAIL, ("replied without calling the tool: "  # on this machine: llama.cpp?
                                                      f"'I would ping, but I cannot call tools.'; {LLAMA_CPP_CAUSE}"))
    assert by_name["astext"][2] == ("tools", FAIL, ("wrote the call as text, not as a tool call: set "
                                                    f"recover_text_calls: true on its alias to run such calls; {LLAMA_CPP_CAUSE}"))
    assert chats == [(2, ["ping"])] * 3  # one request each, for the JSON and the text run: tried once, one tool
    assert "down (openai/fake)" in table and f"FAIL http://127.0.0.1:{port}/v1/models does not answer" in table
    assert table.splitlines()[-1] == "2 of 5 providers ready; not ready: down, textonly, astext"


def test_ollama_not_running_or_without_the_model_is_said_so(tmp_path: Path) -> None:
    port = _refused_port()
    with Tags() as ollama:
        code, _, found = _doctor(tmp_path, {
            "stopped": f"{{model: ollama/qwen3, api_base: 'http://127.0.0.1:{port}'}}",
            "missing": f"{{model: ollama/mistral, api_base: '{ollama.base_url}'}}",
            "pulled": f"{{model: ollama/qwen3, api_base: '{ollama.base_url}'}}"})
    assert code == 6
    found_by = {d["name"]: _found(d) for d in found}
    assert found_by["stopped"][1] == ("endpoint", FAIL, (f"Ollama is not running at http://127.0.0.1:{port} "
                                                         "(connection refused): start it with 'ollama serve'"))
    assert found_by["missing"][1] == ("endpoint", FAIL, (f"Ollama answers at {ollama.base_url} but has no model mistral: "
                                                         "'ollama pull mistral'"))
    check, status, detail = found_by["pulled"][1]
    assert (check, status, detail.split(" (")[0]) == ("endpoint", OK, f"Ollama answers at {ollama.base_url} and has qwen3")
    assert found_by["pulled"][2] == ("tools", SKIPPED, "--call sends one tiny request to find out")


def test_a_key_is_checked_by_its_variable_and_never_shown(tmp_path: Path) -> None:
    secret = "sk-doctor-secret-4242"
    with Listing() as server, Refusing() as refusing:
        code, table, found = _doctor(tmp_path, {
            "keyed": f"{{model: openai/fake, api_base: '{server.api_base}', api_key_env: DOCTOR_TEST_KEY}}",
            "refused": f"{{model: openai/fake, api_base: '{refusing.api_base}', api_key_env: DOCTOR_TEST_KEY}}"},
            env={"DOCTOR_TEST_KEY": secret})
        sent = [r.headers.get("authorization") for r in server.requests]
    assert code == 6 and table.splitlines()[-1] == "2 of 3 providers ready; not ready: refused"
    assert _found(found[1])[0] == ("key", OK, "DOCTOR_TEST_KEY is set")
    assert _found(found[2])[1] == ("endpoint", FAIL, f"{refusing.api_base}/models refused the key (HTTP 401)")
    assert sent == [f"Bearer {secret}"] * 2  # to the alias's own server, as runs send it
    assert secret not in table and secret not in json.dumps(found)


@pytest.mark.parametrize(("settings", "server", "environ", "expected"), [
    (ModelSettings("openai/gpt-4o"), Server("OPENAI_API_KEY", "https://api.openai.com/v1"), {},
     (FAIL, "OPENAI_API_KEY is not set: export it in the shell that runs tooltrial")),
    (ModelSettings("openai/gpt-4o"), Server("OPENAI_API_KEY", "https://api.openai.com/v1"), {"OPENAI_API_KEY": "  "},
     (FAIL, "OPENAI_API_KEY is not set: export it in the shell that runs tooltrial")),  # a blank key is no key
    (ModelSettings("openai/gpt-4o"), Server("OPENAI_API_KEY", "https://api.openai.com/v1"), {"OPENAI_API_KEY": "k"},
     (OK, "OPENAI_API_KEY is set")),
    (ModelSettings("openai/x", api_base="https://llm.example.com/v1"), Server("OPENAI_API_KEY", None), {},
     (SKIPPED, "OPENAI_API_KEY is not set (a server of your own may take none)")),
    (ModelSettings("openai/x", api_base="https://llm.example.com/v1", api_key_env="MY_KEY"), None, {},
     (FAIL, "MY_KEY is not set: export it in the shell that runs tooltrial")),
    (ModelSettings("ollama/qwen3"), Server(None, "http://localhost:11434", "ollama"), {},
     (OK, "none needed: a server on this machine")),
    (ModelSettings("foo/bar"), None, {},
     (SKIPPED, "tooltrial does not know the key variable of 'foo/bar': set api_key_env on its alias")),
])
def test_the_key_check(settings: ModelSettings, server: Server | None, environ: dict[str, str],
                       expected: tuple[str, str]) -> None:
    finding = _key(settings, server, environ)
    assert (finding.status, finding.detail) == expected


def test_scripted_alone_is_ready() -> None:
    done = run_cli("doctor", "-p", "scripted")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "1 of 1 provider ready"


def test_a_local_server_that_answers_in_plain_text_is_told_the_llama_cpp_cause(tmp_path: Path) -> None:
    with Listing() as local:
        local.push(*[openai_reply("Pong! How can I help you today?")] * 2)  # the JSON run's, the table's
        code, table, found = _doctor(tmp_path, {"llama": f"{{model: openai/smollm2, api_base: '{local.api_base}'}}"},
                                     "-p", "llama", "--call")
        sent = local.chats[0].body
    assert code == 6 and "a llama.cpp server ignores the tools unless started with --jinja" in table
    assert _found(found[0])[2] == (
        "tools", FAIL, ("replied without calling the tool: 'Pong! How can I help you today?'; a llama.cpp server "
                        "ignores the tools unless started with --jinja and a chat template that supports tools "
                        "(docs/providers.md)"))
    assert [t["function"]["name"] for t in sent["tools"]] == ["ping"]  # the tools were sent: the server dropped them


@pytest.mark.parametrize(("settings", "local"), [
    (ModelSettings("openai/smollm2", api_base="http://127.0.0.1:8080/v1"), True),
    (ModelSettings("openai/smollm2", api_base="http://localhost:8080/v1"), True),
    (ModelSettings("openai/smollm2", api_base="http://[::1]:8080/v1"), True),
    (ModelSettings("openai/gpt-4o"), False),  # OpenAI itself
    (ModelSettings("openai/x", api_base="https://llm.example.com/v1"), False),
    (ModelSettings("ollama/qwen3", api_base="http://127.0.0.1:11434"), False),  # Ollama's own API carries the tools
    (ModelSettings("hosted_vllm/x", api_base="http://127.0.0.1:8000/v1"), False),
])
def test_the_llama_cpp_cause_is_named_only_for_a_local_openai_compatible_server(settings: ModelSettings,
                                                                                 local: bool) -> None:
    assert _local_openai(settings) is local


@pytest.mark.skipif(BWRAP is None or not BWRAP_HARDENED, reason="bubblewrap with user namespaces does not work here")
def test_doctor_says_the_sandbox_runs_use_and_what_it_checked() -> None:
    done = run_cli("doctor", "-p", "scripted", env={"PATH": f"{os.path.dirname(BWRAP or '')}:/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:6] == [
        "sandbox: runs use bwrap (bubblewrap works here)",
        f"  bwrap            ok {BWRAP} runs `true` confined",
        "  user namespaces  ok allowed; commands cannot make their own (bwrap --disable-userns)",
        "  seccomp filter   ok loads: commands cannot open Unix sockets",
        "  PATH             ok every folder on it can be searched",
        ""]


def test_doctor_says_what_the_sandbox_lacks_and_that_runs_go_on_unconfined(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    unshare = tmp_path / "unshare"  # as where user namespaces are turned off
    unshare.write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    unshare.chmod(0o755)
    monkeypatch.setattr("runner.sandbox.diagnose.bubblewrap", lambda: (None, False, "bwrap not found on PATH"))
    monkeypatch.setattr("runner.sandbox.diagnose.socket_filter", lambda: (None, "libseccomp unavailable (not found)"))
    monkeypatch.setattr("runner.sandbox.diagnose.closed_entries", lambda path: ["/root/.cargo/bin"])
    monkeypatch.setattr("runner.sandbox.diagnose.shutil.which", {"unshare": str(unshare)}.get)
    done = run_cli("doctor", "-p", "scripted")
    needed = "; bubblewrap needs them to run as a user other than root" if os.geteuid() != 0 else ""
    assert done.returncode == 0, done.stderr  # runs go on: the sandbox is no provider's readiness
    assert done.stdout.splitlines()[:6] == [
        "sandbox: runs use none (bubblewrap unavailable: bwrap not found on PATH; commands run unconfined)",
        "  bwrap            no not found on PATH: install bubblewrap (apt-get install bubblewrap)",
        f"  user namespaces  no not allowed (unshare: unshare failed: Operation not permitted){needed}",
        "  seccomp filter   no libseccomp unavailable (not found): commands can reach the host's Unix sockets",
        "  PATH             no /root/.cargo/bin cannot be read by this user: commands run without it",
        ""]
    assert done.stdout.splitlines()[-1] == "1 of 1 provider ready"
