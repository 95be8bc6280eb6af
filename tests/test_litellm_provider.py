"""The litellm provider over real HTTP to loopback fake servers (OpenAI and Ollama shapes).

Every test drives litellm for real: no litellm function is mocked. What is
asserted is what tooltrial recorded (steps, tokens, status, cause) and what
the server received.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runner.cli import main
from runner.errors import UserError
from runner.providers.base import ProviderError
from runner.providers.errors import classify, retry_hint
from runner.providers.kind import ProviderSpec
from runner.providers.litellm import (
    LOCAL_DUMMY_KEY,
    LiteLLMProvider,
    ModelSettings,
    api_key,
    load_litellm,
)
from runner.providers.registry import resolve_provider
from runner.providers.retry import RetryPolicy, is_retryable
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import ERROR, PASS
from runner.sandbox.command import Sandbox
from runner.spec.casefile import load_file
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions
from tests.fake_servers import (
    OllamaServer,
    OpenAIServer,
    Reply,
    error_reply,
    ollama_reply,
    openai_reply,
    script_replies,
)
from tests.helpers import BUNDLED_ARGS, BUNDLED_FILES, config, make_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

ROOT = Path(__file__).resolve().parent.parent
FAST = RetryPolicy(attempts=3, backoff=0.05, max_backoff=0.1)
FIX = next(c for c in load_file(ROOT / "cases" / "fix.yml") if c.id == "fix-failing-test")


@pytest.fixture
def openai_server():
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def ollama_server():
    with OllamaServer() as server:
        yield server


def arm(model: str, server, **settings) -> Arm:
    chosen = ModelSettings(model=model, api_base=server.api_base, retry=settings.pop("retry", FAST),
                           timeout=settings.pop("timeout", 10.0), **settings)
    return Arm(ProviderSpec(model, lambda case: LiteLLMProvider(chosen, model)), load_prompt(None))


def run(case, the_arm: Arm):
    return execute(case, the_arm, RunOptions(sandbox=Sandbox()))


def write_case(**fields):
    """A one-turn case whose checks pass when out.txt holds 'hi'."""
    expect = {"files": {"out.txt": {"equals": "hi"}}}
    return make_case(turns=("Write hi to out.txt",), expect=expect, **fields)


WRITE = ("write_file", {"path": "out.txt", "content": "hi"})


def test_bundled_case_solved_over_openai_http(openai_server) -> None:
    openai_server.push(*script_replies(FIX.script, usage=(100, 20)))
    record = run(FIX, arm("openai/fake", openai_server))
    assert record.status == PASS, record.cause or [c.message for c in record.failed_checks]
    assert [s.name for s in record.steps] == ["bash", "read_file", "edit_file", "bash"]
    assert record.requests == 5
    assert (record.tokens.prompt_tokens, record.tokens.completion_tokens, record.tokens.total_tokens) == (500, 100, 600)
    assert record.cost is None  # "openai/fake" is not in litellm's cost table
    assert [r.finish_reason for r in record.model_requests] == ["tool_calls"] * 4 + ["stop"]
    assert all(r.prompt_tokens == 100 and r.latency > 0 for r in record.model_requests)
    assert record.latency == pytest.approx(sum(r.latency for r in record.model_requests))
    chats = openai_server.chats
    assert chats[0].body["model"] == "fake"
    assert {t["function"]["name"] for t in chats[0].body["tools"]} >= {"bash", "read_file", "edit_file"}
    tool_message = chats[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_0"


def test_bundled_case_solved_over_ollama_api_chat(ollama_server) -> None:
    ollama_server.push(*script_replies(FIX.script, ollama=True, usage=(50, 7)))
    record = run(FIX, arm("ollama/fake", ollama_server))
    assert record.status == PASS, record.cause or [c.message for c in record.failed_checks]
    assert [s.name for s in record.steps] == ["bash", "read_file", "edit_file", "bash"]
    assert record.steps[2].arguments["new_string"] == "return sum(values) / len(values)"
    assert (record.tokens.prompt_tokens, record.tokens.completion_tokens, record.tokens.total_tokens) == (250, 35, 285)
    assert len(ollama_server.chats) == 5  # ollama/ goes to /api/chat (not /api/generate)
    assert {r.path for r in ollama_server.requests} <= {"/api/chat", "/api/show"}
    assert ollama_server.chats[0].body["stream"] is False


@pytest.mark.parametrize("flavour", ["openai", "ollama"])
def test_parallel_tool_calls_run_in_order_and_are_answered_by_id(flavour, openai_server, ollama_server) -> None:
    server, model, reply = {
        "openai": (openai_server, "openai/fake", openai_reply),
        "ollama": (ollama_server, "ollama_chat/fake", ollama_reply),
    }[flavour]
    calls = [("write_file", {"path": "a.txt", "content": "1"}), ("write_file", {"path": "b.txt", "content": "2"}),
             ("read_file", {"path": "a.txt"})]
    server.push(reply("", tool_calls=calls), reply("wrote both"))
    record = run(make_case(turns=("write two files",)), arm(model, server))
    assert record.status == PASS
    assert [(s.name, s.arguments.get("path"), s.is_error) for s in record.steps] == [
        ("write_file", "a.txt", False), ("write_file", "b.txt", False), ("read_file", "a.txt", False)]
    sent = server.chats[1].body["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    answers = [m for m in sent if m["role"] == "tool"]
    if flavour == "openai":
        assert [m["tool_call_id"] for m in answers] == [c["id"] for c in assistant["tool_calls"]]
        assert len({m["tool_call_id"] for m in answers}) == 3
    else:  # the calls go back as Ollama sent them, with no id: its results answer them in order
        assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["write_file", "write_file", "read_file"]
        assert all("id" not in c for c in assistant["tool_calls"]) and len(answers) == 3
    assert sorted(record.changes["added"]) == ["a.txt", "b.txt"]


def test_arguments_as_a_json_string_and_missing_duplicate_ids(openai_server) -> None:
    openai_server.push(
        openai_reply(None, tool_calls=[("write_file", '{"path": "out.txt", "content": "hi"}'), ("read_file", '{"path": "out.txt"}')],
                     ids=["same", "same"]),
        openai_reply("done"))
    record = run(write_case(), arm("openai/fake", openai_server))
    assert record.status == PASS
    assert record.steps[0].call_id != record.steps[1].call_id
    assert record.steps[1].result.strip().endswith("hi")


def test_invalid_json_arguments_then_a_corrected_call(openai_server) -> None:
    openai_server.push(
        openai_reply(tool_calls=[("write_file", '{"path": "out.txt", "content": ')]),
        openai_reply(tool_calls=[WRITE]),
        openai_reply("fixed my call"))
    record = run(write_case(), arm("openai/fake", openai_server))
    assert record.status == PASS
    first, second = record.steps
    assert first.is_error and first.arguments is None
    assert first.result.startswith("Error: invalid JSON arguments: ")
    assert not second.is_error and second.arguments == WRITE[1]
    echoed = openai_server.chats[1].body["messages"]
    # arguments that are no JSON object go back as {} (Anthropic and Gemini routes refuse them); the trace keeps them
    assert echoed[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert record.script[0]["tool_calls"][0]["arguments"] == '{"path": "out.txt", "content": '
    assert echoed[-1]["content"].startswith("Error: invalid JSON arguments")


def test_a_tool_that_was_not_offered_is_an_error_result_and_length_is_recorded(ollama_server) -> None:
    ollama_server.push(ollama_reply(tool_calls=[("delete_everything", {"path": "."}), WRITE]),
                       ollama_reply("stopped early", done_reason="length"))
    record = run(write_case(tools=["write_file", "read_file"]), arm("ollama_chat/fake", ollama_server))
    assert record.status == PASS
    assert [(s.name, s.is_error) for s in record.steps] == [("delete_everything", True), ("write_file", False)]
    assert record.steps[0].result.startswith("Error: ")
    assert [r.finish_reason for r in record.model_requests] == ["tool_calls", "length"]


def test_429_with_retry_after_is_honoured_then_succeeds(openai_server) -> None:
    openai_server.push(error_reply(429, "rate limited", {"Retry-After": "1"}), openai_reply(tool_calls=[WRITE]),
                       openai_reply("ok"))
    started = time.monotonic()
    record = run(write_case(), arm("openai/fake", openai_server))
    assert record.status == PASS
    assert time.monotonic() - started >= 1.0  # backoff alone would have waited ~0.05 s
    assert len(openai_server.chats) == 3
    assert record.requests == 3  # every POST counts, the retry too
    assert [len(r.attempts) for r in record.model_requests] == [2, 1]  # the retry is inside one model request


def test_500_forever_is_an_error_after_retries_and_the_next_case_runs(openai_server) -> None:
    openai_server.push(*[error_reply(500, "upstream exploded")] * 3, openai_reply(tool_calls=[WRITE]), openai_reply("ok"))
    the_arm = arm("openai/fake", openai_server)
    first, second = run_matrix([write_case(id="a"), write_case(id="b")], [the_arm], SuiteOptions(RunOptions(sandbox=Sandbox())))
    assert first.status == ERROR and first.error_kind == "server_error"
    assert "after 3 attempts" in first.cause and "upstream exploded" in first.cause
    assert first.requests == 3 and first.steps == []
    assert second.status == PASS
    assert len(openai_server.chats) == 5


def test_a_reply_slower_than_the_timeout_is_an_error(ollama_server) -> None:
    ollama_server.fallback = Reply(ollama_reply("late").body, delay=1.0)
    started = time.monotonic()
    record = run(write_case(), arm("ollama_chat/fake", ollama_server, timeout=0.2, retry=RetryPolicy(attempts=2, backoff=0.01)))
    assert record.status == ERROR and record.error_kind == "provider_timeout"
    assert "after 2 attempts" in record.cause and "Timeout" in record.cause
    assert len(ollama_server.chats) == 2
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("flavour", ["openai", "ollama"])
def test_no_usage_block_records_null_tokens(flavour, openai_server, ollama_server) -> None:
    server, model, reply = {
        "openai": (openai_server, "openai/fake", openai_reply),
        "ollama": (ollama_server, "ollama_chat/fake", ollama_reply),
    }[flavour]
    server.push(reply(tool_calls=[WRITE], usage=None), reply("ok", usage=None))
    record = run(write_case(), arm(model, server))
    assert record.status == PASS
    assert (record.tokens.prompt_tokens, record.tokens.completion_tokens, record.tokens.total_tokens) == (None, None, None)
    assert record.cost is None


def test_unknown_model_on_the_server_fails_at_once_with_its_message(openai_server) -> None:
    openai_server.fallback = error_reply(404, "The model `nope` does not exist")
    record = run(write_case(), arm("openai/nope", openai_server))
    assert record.status == ERROR and record.error_kind == "bad_request"
    assert "The model `nope` does not exist" in record.cause
    assert "attempts" not in record.cause and len(openai_server.chats) == 1  # 404 is not retried


def test_cost_comes_from_litellm_table_for_a_known_model(openai_server) -> None:
    import litellm

    openai_server.push(openai_reply("hello", usage=(1000, 100), model="gpt-4o-mini"))
    provider = LiteLLMProvider(ModelSettings("openai/gpt-4o-mini", api_base=openai_server.api_base, retry=FAST))
    completion = provider.complete([{"role": "user", "content": "hi"}], [])
    prompt_cost, completion_cost = litellm.cost_per_token(model="openai/gpt-4o-mini", prompt_tokens=1000, completion_tokens=100)
    assert completion.usage.cost == pytest.approx(prompt_cost + completion_cost)
    assert completion.usage.cost > 0
    assert completion.latency > 0


def test_a_request_makes_no_event_loop_for_service_callbacks_nobody_registered(
        openai_server, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import litellm

    loops: list[object] = []
    real_run = asyncio.run
    monkeypatch.setattr(asyncio, "run", lambda main, **kw: (loops.append(main), real_run(main, **kw))[1])
    provider = LiteLLMProvider(ModelSettings("openai/fake", api_base=openai_server.api_base, retry=FAST))

    def ask(text: str) -> str:  # on a thread of its own, as a run's requests are (no event loop of its own)
        openai_server.push(openai_reply(text))
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(provider.complete, [{"role": "user", "content": "hi"}], []).result().content

    assert ask("one") == "one"
    assert loops == []  # litellm 1.110.2 ran asyncio.run once a request to call its service callbacks

    heard: list[str] = []

    class Listener:  # what a service callback that is no known name gets: the OpenTelemetry hook's shape
        async def async_service_success_hook(self, payload: object, **kwargs: object) -> None:
            heard.append(type(payload).__name__)

    from litellm._service_logger import ServiceLogging

    monkeypatch.setattr(ServiceLogging, "_resolve_otel_service_logger", staticmethod(lambda callback: callback))
    monkeypatch.setattr(litellm, "service_callback", [Listener()])
    assert ask("two") == "two"
    assert heard == ["ServiceLoggerPayload"]  # with a listener, the event still goes out


def test_finish_reason_length_and_empty_content_are_recorded(openai_server) -> None:
    openai_server.push(openai_reply("", finish_reason="length"))
    provider = LiteLLMProvider(ModelSettings("openai/fake", api_base=openai_server.api_base, retry=FAST))
    completion = provider.complete([{"role": "user", "content": "hi"}], [])
    assert completion.finish_reason == "length"
    assert completion.content == ""


def test_api_key_from_the_named_variable_and_dummy_for_local(openai_server, monkeypatch) -> None:
    monkeypatch.setenv("TOOLTRIAL_TEST_KEY", "sk-test-123")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-must-not-leak")
    openai_server.push(openai_reply("a"), openai_reply("b"))
    messages = [{"role": "user", "content": "hi"}]
    keyed = ModelSettings("openai/fake", api_base=openai_server.api_base, api_key_env="TOOLTRIAL_TEST_KEY", retry=FAST)
    LiteLLMProvider(keyed).complete(messages, [])
    LiteLLMProvider(ModelSettings("openai/fake", api_base=openai_server.api_base, retry=FAST)).complete(messages, [])
    sent = [r.headers["authorization"] for r in openai_server.chats]
    assert sent == ["Bearer sk-test-123", "Bearer tooltrial-local"]


@pytest.mark.parametrize("value", ["", " \t"], ids=["empty", "blank"])
def test_an_empty_key_variable_counts_as_unset(value: str) -> None:
    environ = {"TOOLTRIAL_TEST_KEY": value}
    remote = ModelSettings("openai/gpt-4o", api_key_env="TOOLTRIAL_TEST_KEY")
    local = ModelSettings("openai/fake", api_base="http://127.0.0.1:8080/v1", api_key_env="TOOLTRIAL_TEST_KEY")
    assert (api_key(remote, environ), api_key(local, environ)) == (None, LOCAL_DUMMY_KEY)


def test_the_key_never_reaches_agent_commands(openai_server, monkeypatch) -> None:
    monkeypatch.setenv("TOOLTRIAL_TEST_KEY", "sk-secret-456")
    openai_server.push(openai_reply(tool_calls=[("bash", {"command": "env"})]), openai_reply("ok"))
    record = run(make_case(turns=("show env",)), arm("openai/fake", openai_server, api_key_env="TOOLTRIAL_TEST_KEY"))
    assert record.status == PASS
    assert openai_server.chats[0].headers["authorization"] == "Bearer sk-secret-456"
    assert "sk-secret-456" not in record.steps[0].result


def test_params_and_settings_reach_the_server(openai_server) -> None:
    openai_server.push(openai_reply("ok"))
    settings = ModelSettings("openai/fake", api_base=openai_server.api_base, temperature=0, max_tokens=64,
                             params={"top_p": 0.5, "seed": 7}, retry=FAST)
    LiteLLMProvider(settings).complete([{"role": "user", "content": "hi"}], [])
    body = openai_server.chats[0].body
    assert (body["temperature"], body["max_tokens"], body["top_p"], body["seed"]) == (0, 64, 0.5, 7)


def test_connection_refused_is_retried_then_a_provider_error() -> None:
    settings = ModelSettings("openai/fake", api_base="http://127.0.0.1:9/v1", retry=FAST)
    with pytest.raises(ProviderError, match="after 3 attempts"):
        LiteLLMProvider(settings).complete([{"role": "user", "content": "hi"}], [])


class _Status(Exception):
    def __init__(self, status: int, headers: dict | None = None) -> None:
        super().__init__(f"status {status}")
        self.status_code = status
        self.litellm_response_headers = headers


@pytest.mark.parametrize("status, retry", [(429, True), (500, True), (503, True), (408, True),
                                           (400, False), (401, False), (404, False), (422, False)])
def test_which_statuses_are_retried(status, retry) -> None:
    assert is_retryable(_Status(status)) is retry


@pytest.mark.parametrize("headers, hint", [({"Retry-After": "3"}, (3.0, "retry-after")),
                                           ({"retry-after-ms": "250"}, (0.25, "retry-after-ms")),
                                           ({"retry-after": "soon"}, None), ({}, None), (None, None)])
def test_retry_after_headers(headers, hint) -> None:
    error = _Status(429, headers)
    assert retry_hint(error, classify(error)) == hint


def test_requests_disable_litellm_and_openai_retries() -> None:
    provider = LiteLLMProvider(ModelSettings("ollama/qwen3", api_base="http://127.0.0.1:11434"))
    kwargs = provider.request([{"role": "user", "content": "x"}], [])
    assert kwargs["model"] == "ollama_chat/qwen3"
    assert (kwargs["num_retries"], kwargs["max_retries"], kwargs["stream"]) == (0, 0, False)
    assert "tools" not in kwargs
    assert json.dumps({k: v for k, v in kwargs.items() if k != "messages"})  # plain data only


_PROBE = """\
import sys
from runner.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if any(w in m for w in ("litellm", "openai", "tenacity")))
print("HEAVY:" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("argv", [
    ["list", *map(str, BUNDLED_FILES)],
    ["validate", *map(str, BUNDLED_FILES)],
    ["run", str(ROOT / "cases" / "fs.yml"), "-p", "scripted"],
    ["run", str(ROOT / "cases" / "fs.yml"), "-l", "-p", "openai/gpt-4o"],
])
def test_list_validate_and_scripted_runs_never_import_litellm(argv, tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "HEAVY:\n" in done.stderr


def test_importtime_of_list_shows_no_litellm() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "runner", "list", *BUNDLED_ARGS], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "runner.cli.app" in imported
    assert not [name for name in imported if any(word in name for word in ("litellm", "openai", "tenacity"))]


def test_loading_litellm_is_offline_quiet_and_ignores_dotenv(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / ".env").write_text("TOOLTRIAL_DOTENV_PROBE=loaded\n", encoding="utf-8")
    probe = ("import os; from runner.providers.litellm import load_litellm; load_litellm(); "
             "print(os.environ['LITELLM_LOCAL_MODEL_COST_MAP'], os.environ.get('TOOLTRIAL_DOTENV_PROBE'))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM")} | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "None"]
    assert done.stderr == ""  # no cost-map fetch warnings, no banners


# --- the run's time bounds model requests ---------------------------------------------------------


def _only_run(results: Path) -> dict:
    (folder,) = results.iterdir()
    (path,) = (folder / "runs").iterdir()
    return json.loads(path.read_text())


def test_a_model_slower_than_the_run_timeout_ends_the_run_as_a_timeout(tmp_path: Path) -> None:
    from runner.cli import main

    (tmp_path / "slow.yml").write_text("- {id: slow, turns: [Say hi], expect: {response_contains: late}}\n")
    with OpenAIServer(fallback=Reply(openai_reply("late").body, delay=9.0)) as server:
        code = main(["run", str(tmp_path / "slow.yml"), "-p", "local-openai", "--config", str(config(tmp_path, server.api_base)),
                     "--timeout", "3", "--sandbox", "none", "--results", str(tmp_path / "results")])
        requests = len(server.chats)
    record = _only_run(tmp_path / "results")
    assert (record["status"], record["error_kind"], record["cause"]) == (
        "error", "timeout", "run timed out after 3s, waiting for the model local-openai (1 attempt)")
    assert record["duration"] < 9.0  # the reply came after 9 s; the run did not wait for it
    assert requests == 1 and record["requests"] == 1  # the request the deadline cut short was sent
    (cut,) = record["model_requests"]
    (attempt,) = cut["attempts"]
    assert ({k: cut[k] for k in ("index", "finish_reason", "outcome")},
            {k: attempt[k] for k in ("number", "error_kind", "status", "message", "wait", "error_code")}) == (
        {"index": 0, "finish_reason": None, "outcome": None},
        {"number": 1, "error_kind": "timeout", "status": None, "message": "cut short by the run's deadline",
         "wait": None, "error_code": None})
    assert 2.5 < attempt["duration"] < 9.0 and cut["latency"] == attempt["duration"]
    assert code == 1  # a timeout is the agent's: not an infrastructure error


def test_a_judge_slower_than_the_run_timeout_ends_the_run_as_a_timeout(tmp_path: Path) -> None:
    from runner.cli import main

    (tmp_path / "judged.yml").write_text(
        "- {id: judged, turns: [Say hi], expect: {judge: {rubric: Says hi.}}, script: [{content: hi}]}\n")
    with OpenAIServer(fallback=Reply(openai_reply('{"score": 1, "reasoning": "ok"}').body, delay=9.0)) as server:
        main(["run", str(tmp_path / "judged.yml"), "--judge", "local-openai", "--config",
              str(config(tmp_path, server.api_base)), "--timeout", "2", "--results", str(tmp_path / "results")])
        requests = len(server.chats)
    record = _only_run(tmp_path / "results")
    assert (record["status"], record["error_kind"], record["cause"]) == (
        "error", "timeout", "run timed out after 2s, waiting for the judge local-openai")
    assert record["duration"] < 9.0 and requests == 1


def test_no_retry_is_made_when_its_wait_would_pass_the_deadline(openai_server) -> None:
    openai_server.fallback = error_reply(500, "upstream exploded")
    settings = ModelSettings("openai/fake", api_base=openai_server.api_base, retry=RetryPolicy(attempts=4, backoff=5.0))
    with pytest.raises(ProviderError) as caught:
        LiteLLMProvider(settings).complete([{"role": "user", "content": "hi"}], [], deadline=time.monotonic() + 2.0)
    assert (caught.value.kind, str(caught.value)) == ("timeout", "waiting for the model openai/fake (1 attempt)")
    assert len(openai_server.chats) == 1  # the next attempt would have waited past the deadline


class WatchedEnviron(MutableMapping[str, str]):
    """A stand-in for ``os.environ`` that records every write (set or delete), from any thread."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)
        self._lock = threading.Lock()
        self.writes: list[tuple[str, str, str]] = []

    def __getitem__(self, name: str) -> str:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def __setitem__(self, name: str, value: str) -> None:
        with self._lock:
            self.writes.append(("set", name, threading.current_thread().name))
            self._values[name] = value

    def __delitem__(self, name: str) -> None:
        with self._lock:
            self.writes.append(("delete", name, threading.current_thread().name))
            del self._values[name]

    def copy(self) -> dict[str, str]:
        return dict(self._values)


def test_resolving_creating_and_using_providers_from_threads_never_writes_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", " ")  # blank: litellm counts it as set, tooltrial as missing
    load_litellm()  # the one load that sets litellm's switches (resolve_provider's, in the CLI)
    watched = WatchedEnviron(os.environ)
    monkeypatch.setattr(os, "environ", watched)
    case = tmp_path / "hello.yml"
    case.write_text("- id: hi\n  turns: [Say done.]\n  expect: {response_contains: [done]}\n", encoding="utf-8")
    with OpenAIServer(fallback=openai_reply("done")) as server, ThreadPoolExecutor(4) as pool:
        checks = [pool.submit(resolve_provider, "gpt-4o") for _ in range(4)]
        argv = ["run", str(case), "-p", "local-openai", "--config", str(config(tmp_path, server.api_base)),
                "--runs", "4", "-j", "4", "--output", "json", "--results", str(tmp_path / "results")]
        assert main(argv) == 0
        for check in checks:
            with pytest.raises(UserError) as refused:
                check.result()
            assert refused.value.message == "cannot use provider 'gpt-4o': OPENAI_API_KEY is not set"
    assert len(server.chats) == 4
    assert watched.writes == []
    assert watched["OPENAI_API_KEY"] == " "
