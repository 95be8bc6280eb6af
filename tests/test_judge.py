"""LLM-as-judge checks against a loopback fake OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner import cli
from runner.checks.judge import parse_verdict, resolve_judges
from runner.cases import load_file
from runner.engine import Arm, RunOptions, execute
from runner.errors import UserError
from runner.prompts import load_prompt
from runner.providers import ProviderSpec, resolve_provider
from runner.record import ERROR, FAIL, PASS
from runner.sandbox import Sandbox
from tests.fake_openai import FakeOpenAI, OpenAIClient, closed_port_url

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


def _judge(url: str) -> ProviderSpec:
    return ProviderSpec("fake/judge", lambda case: OpenAIClient(url))


def _run(tmp_path: Path, url: str):
    path = tmp_path / "judged.yml"
    path.write_text(CASE)
    (case,) = load_file(path, fixtures_dir=tmp_path)
    options = RunOptions(sandbox=Sandbox(), judges={None: _judge(url)})
    return execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), options)


def test_judge_passes_and_its_grade_is_recorded(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        server.push('```json\n{"score": 0.9, "reasoning": "Warm greeting."}\n```')
        record = _run(tmp_path, server.url)
    assert record.status == PASS
    judged = record.checks[-1]
    assert (judged.check, judged.passed, judged.score, judged.reasoning) == ("judge", True, 0.9, "Warm greeting.")
    prompt = server.requests[0]["messages"][1]["content"]
    assert "The reply greets the user politely." in prompt
    assert "1. Greet the user" in prompt
    assert '1. list_dir {} -> ok:' in prompt
    assert prompt.endswith("Final reply:\nHello there, nice to meet you.")


def test_score_below_threshold_fails_with_the_reasoning(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        server.push('{"score": 0.4, "reasoning": "Curt."}')
        record = _run(tmp_path, server.url)
    assert record.status == FAIL
    assert [c.message for c in record.failed_checks] == ["judge score 0.40 is below 0.70: Curt."]


def test_unreachable_judge_is_an_infrastructure_error(tmp_path: Path) -> None:
    record = _run(tmp_path, closed_port_url())
    assert record.status == ERROR and record.error_kind == "judge_error"
    assert record.cause is not None and record.cause.startswith("judge fake/judge unreachable: cannot reach")
    assert [c.check for c in record.checks] == ["response_contains", "judge"]  # the other checks still ran


def test_unusable_verdict_is_an_infrastructure_error(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        server.push("I think it is fine.")
        record = _run(tmp_path, server.url)
    assert record.error_kind == "judge_error" and "no usable verdict" in (record.cause or "")


@pytest.mark.parametrize("reply", ['{"score": 1.5}', '{"score": "high"}', '{"score": true}', "{oops}", "none"])
def test_parse_verdict_rejects_bad_replies(reply: str) -> None:
    with pytest.raises(ValueError):
        parse_verdict(reply)


def test_judge_model_is_required_for_judged_cases(tmp_path: Path) -> None:
    path = tmp_path / "judged.yml"
    path.write_text(CASE)
    cases = load_file(path, fixtures_dir=tmp_path)
    with pytest.raises(UserError, match="has expect.judge but no judge model"):
        resolve_judges(cases, None, resolve_provider)
    assert set(resolve_judges(cases, "m", lambda name: _judge(name))) == {None}


def _cli_with_fake_judge(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    real = cli.resolve_provider
    def resolve(name: str, *rest, **options) -> ProviderSpec:
        return _judge(url) if name == "fake/judge" else real(name, *rest, **options)

    monkeypatch.setattr(cli, "resolve_provider", resolve)


def test_cli_exit_3_when_only_the_judge_was_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / "judged.yml").write_text(CASE)
    _cli_with_fake_judge(monkeypatch, closed_port_url())
    code = cli.main(["run", str(tmp_path / "judged.yml"), "--judge", "fake/judge", "--results", str(tmp_path / "r")])
    assert code == 3
    assert capsys.readouterr().out.startswith("ERROR judged/polite: judge fake/judge unreachable")


def test_cli_judge_pass_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    (tmp_path / "judged.yml").write_text(CASE)
    with FakeOpenAI() as server:
        server.push('{"score": 0.8, "reasoning": "ok"}')
        _cli_with_fake_judge(monkeypatch, server.url)
        code = cli.main(["run", str(tmp_path / "judged.yml"), "--judge", "fake/judge", "--results", str(tmp_path / "r")])
    assert code == 0, capsys.readouterr().out
