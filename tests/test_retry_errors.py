"""``run --resume RESULTS --retry-errors``: the runs of a folder that ended in an error not of the agent's
making run again in their places, each keeping its earlier attempts; every other run is reused. Driven
through the CLI against the loopback OpenAI fake, counting the requests that reached it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.errors import ExitCode
from tests.fake_servers import OpenAIServer, Received, Reply, error_reply, openai_reply
from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

CASES = """\
- id: hi
  turns: [Say hi.]
  expect: {response_contains: [hi]}
- id: hello
  turns: [Say hello.]
  expect: {response_contains: [hello]}
- id: ok
  turns: [Say ok.]
  expect: {response_contains: [ok]}
- id: wrong
  turns: [Say bye.]
  expect: {response_contains: [bye]}
- id: loops
  files: {a.txt: "a\\n"}
  tools: [read_file]
  turns: [Read a.txt.]
  expect: {max_turns: 1}
"""
CONFIG = """\
providers:
  fake:
    model: openai/fake
    api_base: {base}
    timeout: 10
    retries: {{attempts: 2, backoff: 0.01, max_backoff: 0.02}}
"""
REPLIES = {"Say hi.": "hi", "Say hello.": "hello", "Say ok.": "ok", "Say bye.": "hi"}  # 'wrong' fails its check
OUTAGE = "upstream is down"


def model(failing: frozenset[str] = frozenset()) -> Callable[[Received], Reply]:
    """The fake model: a 500 for the turns in ``failing``, read_file calls for ever to ``Read a.txt.``
    (the agent's turn limit), else the reply REPLIES names."""
    def respond(received: Received) -> Reply:
        turn = received.body["messages"][1]["content"]
        if turn in failing:
            return error_reply(500, OUTAGE)
        if turn == "Read a.txt.":
            return openai_reply(tool_calls=[("read_file", {"path": "a.txt"})])
        return openai_reply(REPLIES[turn])
    return respond


def run(tmp_path: Path, server: OpenAIServer, name: str, *more: str) -> tuple[Any, dict[str, Any], list[str]]:
    """One ``tooltrial run`` into ``tmp_path/name``: (the CLI's result, its JSON report, the user turn of each
    request the server got, sorted)."""
    (tmp_path / "cases.yml").write_text(CASES, encoding="utf-8")
    (tmp_path / "tooltrial.yml").write_text(CONFIG.format(base=server.api_base), encoding="utf-8")
    before = len(server.chats)
    done = run_cli("run", str(tmp_path / "cases.yml"), "-p", "fake", "--config", str(tmp_path / "tooltrial.yml"),
                   "--output", "json", "--results", str(tmp_path / name), "-j", "1", *more)
    sent = sorted(r.body["messages"][1]["content"] for r in server.chats[before:])
    return done, json.loads(done.stdout), sent


def folder(tmp_path: Path, name: str) -> Path:
    (path,) = (tmp_path / name).iterdir()
    return path


def by_case(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["case"].split("/")[-1]: r for r in report["runs"]}


def first_pass(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """The folder ``one``: 'hi' and 'hello' failed by the server (500 beyond the retries), 'ok' passed,
    'wrong' failed its check, 'loops' an error of the agent's (turn limit)."""
    with OpenAIServer(responder=model(frozenset({"Say hi.", "Say hello."}))) as server:
        done, report, sent = run(tmp_path, server, "one")
    assert sent == ["Read a.txt.", "Say bye.", "Say hello.", "Say hello.", "Say hi.", "Say hi.", "Say ok."]
    runs = by_case(report)
    assert {case: (r["status"], r["error_kind"]) for case, r in runs.items()} == {
        "hi": ("error", "server_error"), "hello": ("error", "server_error"), "ok": ("pass", None),
        "wrong": ("fail", None), "loops": ("error", "turn_limit")}, done.stderr
    return runs


def test_retry_errors_runs_again_only_the_runs_the_infrastructure_failed(tmp_path: Path) -> None:
    earlier = first_pass(tmp_path)
    with OpenAIServer(responder=model()) as server:
        done, report, sent = run(tmp_path, server, "two", "--resume", str(folder(tmp_path, "one")), "--retry-errors")
    assert sent == ["Say hello.", "Say hi."]  # the turn-limited and the failed run are the agent's: reused
    assert done.returncode == ExitCode.FAILED, done.stderr
    assert "resuming: 3 of 5 runs are done already; retrying 2 runs that ended in an error not of the agent's making" in done.stderr
    assert "2 runs retried after an error not of the agent's making (--retry-errors; each keeps its earlier attempts)" in done.stderr
    assert report["retried"] == 2
    runs = by_case(report)
    assert {case: (r["status"], r["attempt"]) for case, r in runs.items()} == {
        "hi": ("pass", 2), "hello": ("pass", 2), "ok": ("pass", 1), "wrong": ("fail", 1), "loops": ("error", 1)}
    for case in ("hi", "hello"):
        old = earlier[case]
        assert runs[case]["earlier"] == [{"error_kind": "server_error", "cause": old["cause"], "started": old["started"],
                                          "duration": old["duration"]}]
        assert OUTAGE in old["cause"]
    for case in ("ok", "wrong", "loops"):
        assert runs[case]["earlier"] == []
        assert runs[case]["started"] == earlier[case]["started"]  # the very record, reused
    files = {json.loads(p.read_text())["case"].split("/")[-1]: json.loads(p.read_text())
             for p in sorted((folder(tmp_path, "two") / "runs").iterdir())}
    assert (files["hi"]["attempt"], files["hi"]["earlier"]) == (2, runs["hi"]["earlier"])
    validator = Draft202012Validator(json.loads((ROOT / "schemas" / "run.schema.json").read_text()))
    for data in files.values():
        validator.validate(data)
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(report)


def test_report_counts_the_retried_runs_of_a_folder(tmp_path: Path) -> None:
    first_pass(tmp_path)
    with OpenAIServer(responder=model()) as server:
        run(tmp_path, server, "two", "--resume", str(folder(tmp_path, "one")), "--retry-errors")
    text = run_cli("report", str(folder(tmp_path, "two")))
    as_json = run_cli("report", str(folder(tmp_path, "two")), "--output", "json")
    assert "2 runs retried after an error not of the agent's making" in text.stdout + text.stderr
    assert json.loads(as_json.stdout)["retried"] == 2
    plain = run_cli("report", str(folder(tmp_path, "one")), "--output", "json")
    assert "retried" not in json.loads(plain.stdout)


def test_a_run_failed_twice_keeps_both_earlier_attempts_and_a_later_resume_reruns_nothing(tmp_path: Path) -> None:
    earlier = first_pass(tmp_path)
    with OpenAIServer(responder=model(frozenset({"Say hi."}))) as server:
        _, second, sent2 = run(tmp_path, server, "two", "--resume", str(folder(tmp_path, "one")), "--retry-errors")
    with OpenAIServer(responder=model()) as server:
        _, third, sent3 = run(tmp_path, server, "three", "--resume", str(folder(tmp_path, "two")), "--retry-errors")
        _, fourth, sent4 = run(tmp_path, server, "four", "--resume", str(folder(tmp_path, "three")), "--retry-errors")
    assert (sent2, sent3, sent4) == (["Say hello.", "Say hi.", "Say hi."], ["Say hi."], [])
    hi2, hi3 = by_case(second)["hi"], by_case(third)["hi"]
    assert (hi2["status"], hi2["attempt"], hi3["status"], hi3["attempt"]) == ("error", 2, "pass", 3)
    assert [a["started"] for a in hi3["earlier"]] == [earlier["hi"]["started"], hi2["started"]]
    assert [a["error_kind"] for a in hi3["earlier"]] == ["server_error", "server_error"]
    assert (second["retried"], third["retried"], fourth["retried"]) == (2, 2, 2)
    assert by_case(fourth) == by_case(third)  # every run reused as it was


def test_resume_without_retry_errors_reuses_the_errored_runs(tmp_path: Path) -> None:
    first_pass(tmp_path)
    with OpenAIServer(responder=model()) as server:
        done, report, sent = run(tmp_path, server, "two", "--resume", str(folder(tmp_path, "one")))
    assert sent == []
    assert "resuming: 5 of 5 runs are done already\n" in done.stderr
    assert "retried" not in report
    assert [r["attempt"] for r in report["runs"]] == [1, 1, 1, 1, 1]


def test_retry_errors_without_resume_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "cases.yml").write_text(CASES, encoding="utf-8")
    done = run_cli("run", str(tmp_path / "cases.yml"), "-p", "scripted", "--retry-errors", "--results", str(tmp_path / "r"))
    assert done.returncode == ExitCode.USAGE
    assert done.stderr == (
        "error: --retry-errors is for --resume: it runs again the errored runs of the folder --resume reuses "
        "(add --resume RESULTS, the results/<run-id> folder whose errored runs to run again)\n")
    assert not (tmp_path / "r").exists()
