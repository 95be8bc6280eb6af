"""Token and cost budgets (expect.max_tokens, expect.max_cost), checked on what the provider reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import config, run_cli

CASES = """\
- id: within
  turns: [Write hi to out.txt]
  expect: {max_tokens: 100, files: {out.txt: {equals: hi}}}
- id: over
  turns: [Write hi to out.txt]
  expect: {max_tokens: 20, max_cost: 1.0, files: {out.txt: {equals: hi}}}
"""


def _replies() -> list:
    return [openai_reply(tool_calls=[("write_file", {"path": "out.txt", "content": "hi"})], usage=(12, 3)),
            openai_reply("wrote out.txt", usage=(20, 4))]


@pytest.mark.usefixtures("litellm_loaded")
def test_budget_broken_fails_the_run_with_cause_over_budget(tmp_path: Path) -> None:
    (tmp_path / "budget.yml").write_text(CASES)
    with OpenAIServer() as server:
        server.push(*_replies(), *_replies())
        done = run_cli("run", str(tmp_path / "budget.yml"), "-p", "local-openai",
                       "--config", str(config(tmp_path, server.api_base)), "--output", "json",
                       "--results", str(tmp_path / "results"), "-j", "1")  # both runs share one reply queue
    assert done.returncode == 1, done.stderr
    within, over = json.loads(done.stdout)["runs"]
    assert (within["status"], within["tokens"]["total"]) == ("pass", 39)
    assert (over["status"], over["failure"]) == ("fail", "over_budget")
    failed = [c["message"] for c in over["checks"] if not c["passed"]]
    assert failed == ["used 39 tokens, over the budget of 20"]
    assert "  used 39 tokens, over the budget of 20" in done.stderr.splitlines()


def test_budget_without_usage_is_reported_as_not_checked(tmp_path: Path) -> None:
    (tmp_path / "budget.yml").write_text(
        "- id: scripted\n  turns: [say hi]\n  expect: {max_tokens: 5}\n  script: [{content: hi}]\n")
    done = run_cli("run", str(tmp_path / "budget.yml"), "--output", "json", "--results", str(tmp_path / "r"))
    assert done.returncode == 0
    (run,) = json.loads(done.stdout)["runs"]
    assert [c["message"] for c in run["checks"]] == ["token budget 5 unchecked: usage unknown"]


def _scripted_usage(tmp_path: Path, usage: str) -> tuple[dict, str]:
    """One scripted run under ``max_tokens: 50`` whose one reply reports ``usage``: (its record, stderr)."""
    (tmp_path / "budget.yml").write_text(
        f"- id: u\n  turns: [say hi]\n  expect: {{max_tokens: 50}}\n  script: [{{content: hi, usage: {usage}}}]\n")
    done = run_cli("run", str(tmp_path / "budget.yml"), "--output", "json", "--results", str(tmp_path / "r"))
    (run,) = json.loads(done.stdout)["runs"]
    return run, done.stderr


def test_scripted_usage_without_a_total_counts_its_parts_against_the_budget(tmp_path: Path) -> None:
    run, stderr = _scripted_usage(tmp_path, "{prompt_tokens: 40, completion_tokens: 30}")
    assert (run["status"], run["failure"], run["tokens"]["total"]) == ("fail", "over_budget", 70)
    assert [c["message"] for c in run["checks"]] == ["used 70 tokens, over the budget of 50"]
    assert "tokens: 40 prompt + 30 completion = 70 total" in stderr.splitlines()


def test_scripted_usage_with_one_part_leaves_the_total_unknown(tmp_path: Path) -> None:
    run, stderr = _scripted_usage(tmp_path, "{prompt_tokens: 40}")
    assert (run["status"], run["tokens"]["prompt"], run["tokens"]["total"]) == ("pass", 40, None)
    assert [c["message"] for c in run["checks"]] == ["token budget 50 unchecked: usage unknown"]
    assert "tokens: 40 prompt + ? completion = ? total" in stderr.splitlines()


@pytest.mark.usefixtures("litellm_loaded")
def test_live_usage_without_a_total_counts_its_parts_against_the_budget(tmp_path: Path) -> None:
    (tmp_path / "budget.yml").write_text("- id: u\n  turns: [say hi]\n  expect: {max_tokens: 10}\n")
    reply = openai_reply("hi", usage=(12, 3))
    del reply.body["usage"]["total_tokens"]
    with OpenAIServer() as server:
        server.push(reply)
        done = run_cli("run", str(tmp_path / "budget.yml"), "-p", "local-openai",
                       "--config", str(config(tmp_path, server.api_base)), "--output", "json",
                       "--results", str(tmp_path / "results"))
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["status"], run["tokens"]["total"]) == ("fail", 15)
    assert [c["message"] for c in run["checks"]] == ["used 15 tokens, over the budget of 10"]
