"""LLM-as-judge checks through the real provider path: litellm to a loopback OpenAI server.

The agent is the scripted provider; the judge is an alias in a tooltrial.yml,
resolved with ``resolve_provider`` or by the CLI, both in this process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.checks.judge import parse_verdict, resolve_judges
from runner.errors import UserError
from runner.output.load import read_results
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import ERROR, FAIL, PASS, RunRecord
from runner.run.requests import Tokens
from runner.sandbox.command import Sandbox
from runner.spec.casefile import load_file
from runner.spec.config import load_config
from tests.fake_servers import OpenAIServer, Reply, openai_reply
from tests.helpers import ROOT, config, run_cli, run_output

pytestmark = pytest.mark.usefixtures("litellm_loaded")

UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing listens on the discard port

CASE = """\
- id: polite
  turns: [Greet the user]
  expect:
    response_contains: Hello
    judge: {rubric: The reply greets the user politely., threshold: 0.7}
  script:
    - tool_calls: [{name: list_dir, arguments: {}}]
    - content: Hello there, nice to meet you.
"""


def judge_config(tmp_path: Path, base: str, extra: str = "") -> Path:
    """A tooltrial.yml with the judge aliases ``local-judge`` (a model in litellm's cost table) and
    ``strict-judge`` at ``base``, retries fast."""
    aliases = "".join(f"""\
  {alias}:
    model: {model}
    api_base: {base}
    timeout: 10
    retries: {{attempts: 2, backoff: 0.05, max_backoff: 0.1}}
""" for alias, model in (("local-judge", "openai/gpt-4o-mini"), ("strict-judge", "openai/strict")))
    return config(tmp_path, extra=aliases + extra)


def verdict(score: float, reasoning: str, usage: tuple[int, int] = (10, 5)) -> Reply:
    return openai_reply(json.dumps({"score": score, "reasoning": reasoning}), usage=usage)


def _case_file(tmp_path: Path, text: str = CASE) -> Path:
    path = tmp_path / "judged.yml"
    path.write_text(text, encoding="utf-8")
    return path


def _run(tmp_path: Path, base: str) -> RunRecord:
    """The case in-process, judged by ``local-judge`` resolved from a config file."""
    (case,) = load_file(_case_file(tmp_path), fixtures_dir=tmp_path)
    judge = resolve_provider("local-judge", load_config(judge_config(tmp_path, base)))
    options = RunOptions(sandbox=Sandbox(), judges={None: judge})
    return execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), options)


def _cli(tmp_path: Path, base: str, *argv: str, case: str = CASE, extra: str = "",
         agent: str = "scripted") -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    """``tooltrial run judged.yml -p AGENT --config ... --output json ARGV``: (process, its one run as JSON)."""
    done = run_cli("run", str(_case_file(tmp_path, case)), "-p", agent, "--config",
                   str(judge_config(tmp_path, base, extra)), "--output", "json", "--results", str(tmp_path / "r"), *argv)
    runs = json.loads(done.stdout)["runs"] if done.stdout else []
    return done, runs[0] if runs else None


def test_judge_passes_and_its_grade_is_recorded(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply('```json\n{"score": 0.9, "reasoning": "Warm greeting."}\n```'))
        record = _run(tmp_path, server.api_base)
    assert record.status == PASS
    judged = record.checks[-1]
    assert (judged.check, judged.passed, judged.score, judged.reasoning) == ("judge", True, 0.9, "Warm greeting.")
    assert judged.message == "judge score 0.90 reached 0.70: Warm greeting."
    assert (judged.usage.prompt_tokens, judged.usage.completion_tokens, judged.usage.total_tokens) == (10, 5, 15)
    assert judged.usage.cost == pytest.approx(10 * 0.15e-6 + 5 * 0.6e-6)  # gpt-4o-mini's price per token
    assert (record.tokens, record.cost) == (Tokens(unreported=2), None)  # grading is not the agent's usage
    assert (record.judge_tokens, record.judge_cost) == (Tokens(10, 5, 15), judged.usage.cost)
    (request,) = server.chats
    assert request.body["model"] == "gpt-4o-mini" and "tools" not in request.body
    system, user = request.body["messages"]
    assert system["role"] == "system" and '{"score": <number from 0 to 1>' in system["content"]
    prompt = user["content"]
    assert "The reply greets the user politely." in prompt
    assert "1. Greet the user" in prompt
    assert '1. list_dir {} -> ok:' in prompt
    assert prompt.endswith("Final reply:\nHello there, nice to meet you.")


def test_score_below_threshold_fails_with_the_reasoning(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(verdict(0.4, "Curt."))
        record = _run(tmp_path, server.api_base)
    assert record.status == FAIL
    assert [c.message for c in record.failed_checks] == ["judge score 0.40 is below 0.70: Curt."]


def test_unusable_verdict_is_an_infrastructure_error(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply("I think it is fine."))
        record = _run(tmp_path, server.api_base)
    assert (record.status, record.error_kind) == (ERROR, "judge_error")
    assert record.cause == "judge local-judge gave no usable verdict: no JSON object in 'I think it is fine.'"
    assert record.checks[-1].usage is not None and record.checks[-1].usage.total_tokens == 15  # spent all the same
    assert record.judge_tokens == Tokens(10, 5, 15)


def test_unreachable_judge_is_an_infrastructure_error(tmp_path: Path) -> None:
    record = _run(tmp_path, UNREACHABLE)
    assert (record.status, record.error_kind) == (ERROR, "judge_error")
    assert record.cause is not None
    assert record.cause.startswith("judge local-judge unreachable: local-judge: connection after 2 attempts:")
    assert [c.check for c in record.checks] == ["response_contains", "judge"]  # the other checks still ran
    assert record.checks[-1].usage is None


@pytest.mark.parametrize("reply", ['{"score": 1.5}', '{"score": "high"}', '{"score": true}', "{oops}", "none"])
def test_parse_verdict_rejects_bad_replies(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_verdict(reply)


def test_judge_model_is_required_for_judged_cases(tmp_path: Path) -> None:
    cases = load_file(_case_file(tmp_path), fixtures_dir=tmp_path)
    loaded = load_config(judge_config(tmp_path, UNREACHABLE))
    with pytest.raises(UserError, match="has expect.judge but no judge model"):
        resolve_judges(cases, None, lambda name: resolve_provider(name, loaded))
    judges = resolve_judges(cases, "local-judge", lambda name: resolve_provider(name, loaded))
    assert {key: spec.name for key, spec in judges.items()} == {None: "local-judge"}


def test_cli_pass_records_the_grade_and_the_judge_usage_in_the_json(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(verdict(0.8, "Friendly.", usage=(200, 20)))
        done, run = _cli(tmp_path, server.api_base, "--judge", "local-judge")
    assert done.returncode == 0, done.stderr
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(json.loads(done.stdout))
    assert run["status"] == "pass"
    judged = run["checks"][-1]
    assert (judged["check"], judged["passed"], judged["score"], judged["reasoning"]) == ("judge", True, 0.8, "Friendly.")
    usage = judged["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (200, 20, 220)
    assert usage["cost"] == pytest.approx(200 * 0.15e-6 + 20 * 0.6e-6)
    assert run["tokens"] == {"prompt": None, "completion": None, "total": None, "reasoning": None, "cached": None, "cache_write": None, "unreported": 2}
    assert run["cost"] is None
    assert run_output(done).startswith("PASS judged/polite\n1/1 passed\ntokens: none reported; judges: 220 tokens, $0.0000\n")


def test_cli_counts_the_judge_usage_apart_from_the_agent_and_outside_its_budgets(tmp_path: Path) -> None:
    budgeted = CASE.replace("threshold: 0.7}\n", "threshold: 0.7}\n    max_tokens: 1000\n    max_cost: 0.001\n")
    with OpenAIServer() as server:  # the agent and the judge are both gpt-4o-mini behind the fake server
        server.push(openai_reply("Hello there, nice to meet you.", usage=(300, 30)),
                    verdict(0.8, "Friendly.", usage=(20_000, 2_000)))
        done, run = _cli(tmp_path, server.api_base, "--judge", "local-judge", case=budgeted, agent="local-judge")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(report)
    agent_cost, judge_cost = 300 * 0.15e-6 + 30 * 0.6e-6, 20_000 * 0.15e-6 + 2_000 * 0.6e-6
    assert run["tokens"] == {"prompt": 300, "completion": 30, "total": 330, "reasoning": None, "cached": None, "cache_write": None, "unreported": 0}
    assert run["cost"] == pytest.approx(agent_cost)
    assert run["judge_tokens"] == {"prompt": 20_000, "completion": 2_000, "total": 22_000, "reasoning": None, "cached": None, "cache_write": None, "unreported": 0}
    assert run["judge_cost"] == pytest.approx(judge_cost)
    budgets = {c["check"]: c["passed"] for c in run["checks"] if c["category"] == "budget"}
    assert budgets == {"max_tokens": True, "max_cost": True}  # 330 tokens and $0.00006 are the agent's; the judge's are not
    overall, (arm,) = report["overall"], report["arms"]
    tokens = (overall["tokens_total"], overall["judge_tokens_total"], arm["judge_tokens_total"],
              arm["groups"]["judged"]["judge_tokens_total"])
    assert tokens == (330, 22_000, 22_000, 22_000)
    assert overall["judge_cost_total"] == arm["judge_cost_total"] == pytest.approx(judge_cost)
    assert "tokens: 300 prompt + 30 completion = 330 total, cost $0.0001; judges: 22,000 tokens, $0.0042\n" in done.stderr
    (run_file,) = (tmp_path / "r").glob("*/runs/*.json")
    written = json.loads(run_file.read_text())
    Draft202012Validator(json.loads((ROOT / "schemas" / "run.schema.json").read_text())).validate(written)
    assert (written["judge_tokens"], written["judge_cost"]) == (run["judge_tokens"], run["judge_cost"])
    assert read_results(tmp_path / "r").records[0].judge_tokens == Tokens(20_000, 2_000, 22_000)


def test_cli_fail_prints_the_judge_message(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(verdict(0.4, "Curt."))
        done, run = _cli(tmp_path, server.api_base, "--judge", "local-judge")
    assert done.returncode == 1, done.stderr
    assert run["status"] == "fail" and run["failure"] is not None
    assert run_output(done).startswith("FAIL judged/polite\n  judge score 0.40 is below 0.70: Curt.\n0/1 passed\n")


def test_cli_exit_6_when_only_the_judge_was_down(tmp_path: Path) -> None:
    done, run = _cli(tmp_path, UNREACHABLE, "--judge", "local-judge")
    assert done.returncode == 6, done.stderr
    assert (run["status"], run["error_kind"]) == ("error", "judge_error")
    assert run_output(done).startswith("ERROR judged/polite: judge local-judge unreachable: local-judge: connection after 2 attempts")


def test_cli_judge_from_the_config_and_one_a_case_names(tmp_path: Path) -> None:
    named = CASE.replace("polite", "named").replace("threshold: 0.7}", "threshold: 0.7, model: strict-judge}")
    with OpenAIServer() as server:
        server.push(verdict(1, "Polite."), verdict(1, "Polite."))
        done, _ = _cli(tmp_path, server.api_base, case=CASE + named, extra="judge: local-judge\n")  # no --judge
    assert done.returncode == 0, done.stderr
    runs = {run["case"]: run for run in json.loads(done.stdout)["runs"]}
    assert runs["judged/polite"]["checks"][-1]["score"] == runs["judged/named"]["checks"][-1]["score"] == 1
    assert sorted(r.body["model"] for r in server.chats) == ["gpt-4o-mini", "strict"]  # config's judge, the case's own


def test_validate_baseline_takes_the_judge_from_the_config(tmp_path: Path) -> None:
    with OpenAIServer(fallback=verdict(0.1, "Nothing was done.")) as server:
        done = run_cli("validate", str(_case_file(tmp_path)), "--baseline",
                       "--config", str(judge_config(tmp_path, server.api_base, "judge: local-judge\n")))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["1 case in 1 file is valid", "baseline: 0 of 1 cases pass without doing the task"]
    assert [r.body["model"] for r in server.chats] == ["gpt-4o-mini"] * 2  # do-nothing and random-tools, each graded
