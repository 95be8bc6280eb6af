"""Tokens as the provider reported them: completion includes reasoning, prompt includes cached, the parts apart.

Each provider's own usage shape goes through litellm for real (loopback fakes); what is
asserted is the run file and report.json tooltrial wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from tests.fake_servers import OllamaServer, OpenAIServer, ollama_reply, openai_reply
from tests.fake_wire import (
    ANTHROPIC_MODEL,
    GEMINI_MODEL,
    AnthropicServer,
    GeminiServer,
    anthropic_reply,
    gemini_reply,
    ollama_stream,
    text,
    thinking,
    tool_use,
)
from tests.helpers import ROOT, cli_output
from tests.wire_runs import run_case

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

HI = {"path": "out.txt", "content": "hi"}
PARTS = ("prompt", "completion", "total", "reasoning_tokens", "cached_tokens", "cache_write_tokens")


def _request(run: dict, index: int) -> tuple:
    return tuple(run["model_requests"][index][k] for k in PARTS)


def _totals(run: dict) -> tuple:
    tokens = run["tokens"]
    return tuple(tokens[k] for k in ("prompt", "completion", "total", "reasoning", "cached", "cache_write", "unreported"))


def test_gemini_thought_tokens_count_in_completion_and_on_their_own(tmp_path: Path) -> None:
    metadata = {"promptTokenCount": 132, "candidatesTokenCount": 15, "thoughtsTokenCount": 49, "totalTokenCount": 196,
                "cachedContentTokenCount": 100}
    with GeminiServer() as server:
        server.push(gemini_reply([{"text": "I will write it.", "thought": True},
                                  {"functionCall": {"name": "write_file", "args": HI}}], metadata),
                    gemini_reply([{"text": "Done."}], {"promptTokenCount": 150, "candidatesTokenCount": 2,
                                                       "totalTokenCount": 152}))
        code, err, (run,) = run_case(tmp_path, server, f"gemini/{GEMINI_MODEL}")
    assert code == 0, err
    assert run["model_requests"][0]["completion"] == 64  # 15 candidates + 49 thoughts, as litellm counts them
    assert _request(run, 0) == (132, 64, 196, 49, 100, None)
    assert _request(run, 1) == (150, 2, 152, None, None, None)
    assert _totals(run) == (282, 66, 348, 49, 100, None, 0)


def test_anthropic_cache_reads_and_writes_are_prompt_tokens_and_its_reasoning_estimate_is_left_out(tmp_path: Path) -> None:
    usage = {"input_tokens": 20, "output_tokens": 42, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}
    with AnthropicServer() as server:
        # thinking text: litellm would count "reasoning tokens" from it; Anthropic reports no such count
        server.push(anthropic_reply([thinking("Let me write the file now.", "S=="), tool_use("toolu_1", "write_file", HI)],
                                    usage),
                    anthropic_reply([text("Done.")], {"input_tokens": 30, "output_tokens": 3}))
        code, err, (run,) = run_case(tmp_path, server, f"anthropic/{ANTHROPIC_MODEL}")
    assert code == 0, err
    assert run["model_requests"][0]["prompt"] == 125  # 20 input + 100 cache read + 5 cache write
    assert _request(run, 0) == (125, 42, 167, None, 100, 5)
    assert _request(run, 1)[:3] == (30, 3, 33)
    assert _totals(run)[:6] == (155, 45, 200, None, 100, 5)


def test_openai_details_and_a_request_that_reported_none(tmp_path: Path) -> None:
    detailed = openai_reply(tool_calls=[("write_file", HI)], usage=(40, 30))
    detailed.body["usage"].update(completion_tokens_details={"reasoning_tokens": 24},
                                  prompt_tokens_details={"cached_tokens": 32})
    with OpenAIServer() as server:
        server.push(detailed, openai_reply("Done.", usage=None))
        code, err, (run,) = run_case(tmp_path, server, "openai/fake")
    assert code == 0, err
    assert run["tokens"]["unreported"] == 1  # the totals say one request reported nothing
    assert _request(run, 0) == (40, 30, 70, 24, 32, None)
    assert _request(run, 1) == (None,) * 6  # not litellm's zeros
    assert [r["usage_reported"] for r in run["model_requests"]] == [True, False]
    assert _totals(run) == (40, 30, 70, 24, 32, None, 1)  # the totals say one request reported nothing
    (results,) = (tmp_path / "try0" / "results").iterdir()
    report = json.loads((results / "report.json").read_text(encoding="utf-8"))
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(report)
    assert report["runs"][0]["tokens"]["unreported"] == 1
    overall = report["overall"]
    assert (overall["prompt_tokens_total"], overall["completion_tokens_total"], overall["tokens_total"],
            overall["reasoning_tokens_total"], overall["cached_tokens_total"], overall["unreported_requests"]) == (
        40, 30, 70, 24, 32, 1)
    code, out, _ = cli_output(["report", str(results)])
    assert "tokens: 40 prompt (32 cached) + 30 completion (24 reasoning) = 70 total; 1 request reported no usage\n" in out


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_count_the_provider_left_out_is_null_not_an_estimate(tmp_path: Path, stream: bool) -> None:
    """Ollama sending ``eval_count`` without ``prompt_eval_count``: the prompt count is null (litellm
    would put its own tokenizer's estimate there), the completion count is the provider's."""
    first = ollama_reply(tool_calls=[("write_file", HI)], usage=None)
    first.body["eval_count"] = 12
    last = ollama_reply("Done.", usage=(50, 3))
    with OllamaServer() as server:
        server.push(*((ollama_stream(first), ollama_stream(last)) if stream else (first, last)))
        code, err, (run,) = run_case(tmp_path, server, "ollama_chat/fake", stream="stream: true" if stream else "")
    assert code == 0, err
    # streamed, litellm's Ollama chunk parser keeps no count unless both came: nothing is recorded, not a guess
    first_counts = (None, None, None, False) if stream else (None, 12, None, True)
    assert [(r["prompt"], r["completion"], r["total"], r["usage_reported"]) for r in run["model_requests"]] == [
        first_counts, (50, 3, 53, True)]
