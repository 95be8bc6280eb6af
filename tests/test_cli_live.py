"""The real CLI in this process, with live providers served by loopback fake servers.

``tooltrial run ... -p ALIAS --config FILE`` (``runner.cli.main``) talks over HTTP,
through litellm, to servers this test process runs; assertions read the JSON record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runner.errors import UserError
from runner.providers.registry import resolve_provider
from runner.spec.config import load_config
from runner.spec.discover import load_cases
from tests.fake_servers import (
    OllamaServer,
    OpenAIServer,
    ScriptResponder,
    error_reply,
    openai_reply,
    script_replies,
)
from tests.helpers import BUNDLED_ARGS, BUNDLED_FILES, config, run_cli, run_output

pytestmark = pytest.mark.usefixtures("litellm_loaded")

BUNDLED = load_cases(BUNDLED_FILES)
FIX = next(c for c in BUNDLED if c.full_id == "fix/fix-failing-test")


def test_a_bundled_case_over_http_recorded_as_json(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(*script_replies(FIX.script, usage=(120, 30)))
        done = run_cli("run", "cases/fix.yml", "-c", "fix/fix-failing-test", "-p", "local-openai",
                       "--config", str(config(tmp_path, server.api_base)), "--output", "json",
                       "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)["runs"]
    assert (record["case"], record["provider"], record["status"]) == ("fix/fix-failing-test", "local-openai", "pass")
    assert [s["name"] for s in record["trace"]] == ["bash", "read_file", "edit_file", "bash"]
    assert record["tokens"] == {"prompt": 600, "completion": 150, "total": 750, "reasoning": None, "cached": None, "cache_write": None, "unreported": 0}
    assert record["requests"] == 5 and record["cost"] is None
    assert [r["total"] for r in record["model_requests"]] == [150] * 5
    assert record["latency"] > 0
    # nothing from litellm (cost-map fetch warnings, debug banners) reaches the terminal
    assert run_output(done).splitlines()[:3] == ["PASS fix/fix-failing-test", "1/1 passed",
                                            "tokens: 600 prompt + 150 completion = 750 total"]
    assert "LiteLLM" not in done.stderr and "litellm" not in done.stderr
    assert server.chats[0].body["temperature"] == 0


def test_server_errors_then_the_next_case_runs_verbose(tmp_path: Path) -> None:
    env = {"TOOLTRIAL_TEST_LOCAL_KEY": "sk-verbose-secret"}
    with OpenAIServer() as server:
        server.push(*[error_reply(503, "model is loading")] * 3, *script_replies(FIX.script, usage=None))
        done = run_cli("run", "cases/fix.yml", "-p", "local-openai", "--config", str(config(tmp_path, server.api_base)),
                       "-c", "fix/fix-failing-test", "--runs", "2", "-j", "1", "--output", "json", "--verbose",
                       "--results", str(tmp_path / "results"), env=env)
    assert done.returncode == 6  # only an infrastructure error broke the gate
    assert "LiteLLM DEBUG" in done.stderr  # litellm's log goes to stderr; stdout stays one JSON document
    assert "sk-verbose-secret" not in done.stderr + done.stdout
    assert server.chats[0].headers["authorization"] == "Bearer sk-verbose-secret"
    first, second = json.loads(done.stdout)["runs"]
    assert (first["status"], first["error_kind"]) == ("error", "server_error")
    assert "after 3 attempts" in first["cause"] and "model is loading" in first["cause"]
    assert second["status"] == "pass"
    assert second["tokens"] == {"prompt": None, "completion": None, "total": None, "reasoning": None, "cached": None, "cache_write": None,
                                "unreported": 5}  # 5 requests, none reported usage
    assert "ERROR fix/fix-failing-test #1: local-openai: server_error (HTTP 503) after 3 attempts" in done.stderr
    assert "tokens:" not in done.stderr  # no run reported any


@pytest.mark.slow  # every bundled case twice, each run's commands for real
def test_whole_bundled_suite_over_both_servers_with_labelled_arms(tmp_path: Path) -> None:
    with OpenAIServer(responder=ScriptResponder(BUNDLED)) as oa, OllamaServer(responder=ScriptResponder(BUNDLED, ollama=True)) as ol:
        done = run_cli("run", *BUNDLED_ARGS, "-p", "local-openai", "-p", "local-ollama", "-P", "prompts/terse.j2",
                       "--config", str(config(tmp_path, oa.api_base, ol.api_base, concurrency=4)),
                       "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    for case in BUNDLED:
        assert f"PASS {case.full_id} [local-openai · terse]" in lines
        assert f"PASS {case.full_id} [local-ollama · terse]" in lines
    total = 2 * len(BUNDLED)
    assert f"{total}/{total} passed" in lines
    assert lines[lines.index(f"{total}/{total} passed") + 1].startswith("tokens: ")


def test_config_in_the_current_folder_and_its_default_provider(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply(tool_calls=[("write_file", {"path": "out.txt", "content": "hi"})]), openai_reply("wrote it"))
        config(tmp_path, server.api_base, extra="default_provider: local-openai\n")
        (tmp_path / "t.yml").write_text(
            "- id: w\n  turns: [write hi]\n  expect: {files: {out.txt: {equals: hi}}}\n", encoding="utf-8")
        done = run_cli("run", "t.yml", cwd=tmp_path, env={"TOOLTRIAL_TEST_LOCAL_KEY": None})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS t/w" in done.stdout
    assert len(server.chats) == 2


def test_a_bare_provider_name_is_exit_4_with_how_to_name_a_model(tmp_path: Path) -> None:
    done = run_cli("run", "cases/fix.yml", "-p", "ollama", "--config", str(config(tmp_path)))
    assert done.returncode == 4
    assert done.stderr.strip() == ("error: provider 'ollama' needs a model "
                                   "(use -p ollama/<model>, or add an alias 'ollama' under providers: in tooltrial.yml)")


_HOW = "(name a model as provider/model, e.g. -p ollama/qwen3 or -p openai/gpt-4o, or an alias from tooltrial.yml)"


@pytest.mark.parametrize("provider, expected", [
    ("anthropic", ("provider 'anthropic' needs a model "
                   "(use -p anthropic/<model>, or add an alias 'anthropic' under providers: in tooltrial.yml)")),
    ("local-opnai", "unknown provider 'local-opnai' (did you mean 'local-openai'?)"),
    ("nosuch/model", f"cannot use provider 'nosuch/model': litellm knows no provider for model 'nosuch/model' {_HOW}"),
    ("qwen3", f"cannot use provider 'qwen3': litellm knows no provider for model 'qwen3' {_HOW}"),
])
def test_names_tooltrial_cannot_use(tmp_path: Path, provider: str, expected: str) -> None:
    with pytest.raises(UserError) as caught:
        resolve_provider(provider, load_config(config(tmp_path)))
    assert caught.value.render() == expected
    assert caught.value.exit_code == 4


def test_names_tooltrial_can_use(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    loaded = load_config(config(tmp_path))
    assert [resolve_provider(n, loaded).name for n in ("scripted", "local-openai", "ollama/qwen3", "openai/gpt-4o", "gpt-4o")] == [
        "scripted", "local-openai", "ollama/qwen3", "openai/gpt-4o", "gpt-4o"]


@pytest.mark.parametrize("value", [None, "", "  "], ids=["unset", "empty", "blank"])
def test_missing_key_for_a_remote_alias_points_at_the_config(tmp_path: Path, monkeypatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("TOOLTRIAL_TEST_UNSET_KEY", raising=False)
    else:
        monkeypatch.setenv("TOOLTRIAL_TEST_UNSET_KEY", value)
    path = config(tmp_path, extra="  hosted:\n    model: openai/gpt-4o\n    api_key_env: TOOLTRIAL_TEST_UNSET_KEY\n")
    with pytest.raises(UserError) as caught:
        resolve_provider("hosted", load_config(path))
    assert caught.value.render() == (
        f"{path}:15:18: providers.hosted.api_key_env: environment variable TOOLTRIAL_TEST_UNSET_KEY is not set "
        "(export the variable in the shell that runs tooltrial; agent commands never see it)")


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
def test_a_missing_or_empty_openai_key_is_exit_4_before_any_request(tmp_path: Path, value: str | None) -> None:
    done = run_cli("run", "cases/fix.yml", "-p", "openai/gpt-4o", "--results", str(tmp_path / "results"),
                   env={"OPENAI_API_KEY": value})
    assert done.returncode == 4
    assert done.stderr.strip() == (
        "error: cannot use provider 'openai/gpt-4o': OPENAI_API_KEY is not set "
        "(export the variable in the shell that runs tooltrial; agent commands never see it)")
    assert not (tmp_path / "results").exists()


def test_an_empty_key_stays_in_the_environment_after_the_check(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "")
    with pytest.raises(UserError, match="OPENAI_API_KEY is not set"):
        resolve_provider("gpt-4o")
    assert os.environ["OPENAI_API_KEY"] == ""


def test_a_bad_config_file_is_exit_4_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("providers:\n  x: {model: openai/y, temprature: 0}\n", encoding="utf-8")
    done = run_cli("run", "cases/fix.yml", "--config", str(path))
    assert done.returncode == 4
    assert done.stderr.strip() == f"error: {path}:2:24: providers.x: unknown key 'temprature' (did you mean 'temperature'?)"


def test_a_live_request_is_priced_from_the_reply_and_not_handed_to_litellms_success_logging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from litellm.litellm_core_utils.thread_pool_executor import executor

    handed: list[str] = []
    submit = executor.submit

    def spy(fn: object, *args: object, **kwargs: object) -> object:
        handed.append(getattr(args[0] if args else fn, "__name__", repr(fn)))
        return submit(fn, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(executor, "submit", spy)
    priced = "  priced:\n    model: openai/gpt-4o-mini\n    api_base: {base}\n    api_key_env: TOOLTRIAL_TEST_LOCAL_KEY\n"
    with OpenAIServer() as server:
        server.push(*script_replies(FIX.script, usage=(120, 30)))
        done = run_cli("run", "cases/fix.yml", "-c", "fix/fix-failing-test", "-p", "priced", "--output", "json",
                       "--config", str(config(tmp_path, server.api_base, extra=priced.format(base=server.api_base))),
                       "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    (record,) = json.loads(done.stdout)["runs"]
    assert handed == []  # litellm's per-call success handler (logging payload, the price again) never queued
    assert record["requests"] == 5
    # gpt-4o-mini in litellm's bundled table: $0.15 a million prompt tokens, $0.60 a million completion tokens
    assert [r["cost"] for r in record["model_requests"]] == [pytest.approx(120 * 0.15e-6 + 30 * 0.6e-6)] * 5
    assert record["cost"] == pytest.approx(5 * (120 * 0.15e-6 + 30 * 0.6e-6))
