"""The simulated user (a case's ``user:``): it talks to the agent until its stop marker or its turn
limit, through the same provider machinery as the agent, its messages and tokens recorded apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from runner.kinds import UserStop
from runner.output.load import read_results
from runner.providers.scripted import ScriptedProvider
from runner.run.simuser import UserSide
from runner.spec.case import DEFAULT_STOP, SimulatedUser
from tests.fake_servers import OpenAIServer, error_reply, openai_reply
from tests.helpers import ROOT, config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

RUN_SCHEMA = json.loads((ROOT / "schemas" / "run.schema.json").read_text())

# Three exchanges: the case's first line, then two from the user script, the third of which stops.
CHAT = """\
- id: chat
  vars: {{order: 42}}
  user:
    model: {model}
    persona: "You want a refund for order {{{{ order }}}}. Say ###STOP### when it is refunded."
    first: "Hi, I need help with an order."
    max_turns: {limit}
    script:
      - "It is order 42."
      - "Please hurry."
      - "Thanks! ###STOP###"
  expect:
    response_contains: [refunded]
    max_turns: 4
    max_tokens: 20
  script:
    - {{content: Which order?, usage: {{prompt_tokens: 3, completion_tokens: 1, total_tokens: 4}}}}
    - {{content: Looking at order 42., usage: {{prompt_tokens: 3, completion_tokens: 1, total_tokens: 4}}}}
    - {{content: Order 42 is refunded., usage: {{prompt_tokens: 3, completion_tokens: 1, total_tokens: 4}}}}
"""


def _run(tmp_path: Path, model: str = "scripted", limit: int = 5, *argv: str) -> tuple[int, dict[str, Any]]:
    """Run CHAT (its user played by ``model``) through the CLI: (exit code, the run file's document)."""
    (tmp_path / "chat.yml").write_text(CHAT.format(model=model, limit=limit), encoding="utf-8")
    done = run_cli("run", str(tmp_path / "chat.yml"), "--results", str(tmp_path / "r"), *argv,
                   env={"TOOLTRIAL_TEST_LOCAL_KEY": "sk-test"})
    (path,) = (tmp_path / "r").glob("*/runs/*.json")
    document = json.loads(path.read_text())
    Draft202012Validator(RUN_SCHEMA).validate(document)
    return done.returncode, document


def test_a_scripted_user_talks_three_exchanges_and_its_stop_marker_ends_the_conversation(tmp_path: Path) -> None:
    code, run = _run(tmp_path)
    assert (code, run["status"], run["user_stop"], run["user_model"]) == (0, "pass", "marker", "scripted")
    assert [(t["content"], t["sent"], t["by"]) for t in run["user_turns"]] == [
        ("Hi, I need help with an order.", True, "case"), ("It is order 42.", True, "model"),
        ("Please hurry.", True, "model"), ("Thanks! ###STOP###", False, "model")]
    # one agent request per user message sent: the stop reply never reached the agent
    assert [r["turn"] for r in run["model_requests"]] == [0, 1, 2]
    assert run["final_reply"] == "Order 42 is refunded."
    assert read_results(tmp_path / "r").records[0].user_stop is UserStop.MARKER


def test_the_user_turn_limit_ends_the_conversation(tmp_path: Path) -> None:
    code, run = _run(tmp_path, limit=2)
    assert (run["user_stop"], [t["content"] for t in run["user_turns"]]) == (
        "max_user_turns", ["Hi, I need help with an order.", "It is order 42."])
    assert [r["turn"] for r in run["model_requests"]] == [0, 1]
    assert (code, run["final_reply"], run["status"]) == (1, "Looking at order 42.", "fail")  # checked as it stood
    assert [c["check"] for c in run["checks"] if not c["passed"]] == ["response_contains"]


def test_a_live_user_model_gets_the_persona_and_the_agent_replies_flipped_and_its_tokens_stay_apart(
        tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply("It is order 42.", usage=(30, 6)), openai_reply("Please hurry.", usage=(40, 3)),
                    openai_reply("Great, thanks. ###STOP###", usage=(50, 7)))
        config(tmp_path, server.api_base)
        code, run = _run(tmp_path, "local-openai", 5, "--config", str(tmp_path / "tooltrial.yml"))
        sent = [r.body for r in server.chats]
    assert (code, run["status"], run["user_stop"], run["user_model"]) == (0, "pass", "marker", "local-openai")
    assert len(sent) == 3
    assert sent[2]["messages"] == [
        {"role": "system", "content": "You want a refund for order 42. Say ###STOP### when it is refunded."},
        {"role": "user", "content": "Hi! How can I help you today?"},
        {"role": "assistant", "content": "Hi, I need help with an order."},
        {"role": "user", "content": "Which order?"},
        {"role": "assistant", "content": "It is order 42."},
        {"role": "user", "content": "Looking at order 42."},
        {"role": "assistant", "content": "Please hurry."},
        {"role": "user", "content": "Order 42 is refunded."}]
    assert "tools" not in sent[0]
    assert [(t["usage"] or {}).get("total_tokens") for t in run["user_turns"]] == [None, 36, 43, 57]
    assert run["user_tokens"] == {"prompt": 120, "completion": 16, "total": 136, "reasoning": None, "cached": None,
                                  "cache_write": None, "unreported": 0}
    assert run["tokens"]["total"] == 12  # the agent's own three replies
    budget = next(c for c in run["checks"] if c["check"] == "max_tokens")
    assert budget["passed"] is True  # 12 of 20: the user's 136 are not the agent's


def test_a_user_model_that_fails_makes_the_run_an_infrastructure_error(tmp_path: Path) -> None:
    with OpenAIServer(fallback=error_reply(401, "invalid api key")) as server:
        config(tmp_path, server.api_base)
        code, run = _run(tmp_path, "local-openai", 5, "--config", str(tmp_path / "tooltrial.yml"))
    assert (code, run["status"], run["error_kind"], run["user_stop"]) == (6, "error", "user_error", "user_error")
    assert run["cause"].startswith("simulated user local-openai failed (auth): ")
    assert [t["content"] for t in run["user_turns"]] == ["Hi, I need help with an order."]


def test_a_scripted_user_whose_script_runs_out_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "short.yml").write_text(CHAT.format(model="scripted", limit=5).replace(
        '      - "Thanks! ###STOP###"\n', ""), encoding="utf-8")
    done = run_cli("run", str(tmp_path / "short.yml"), "--results", str(tmp_path / "r"), "--output", "json")
    (run,) = json.loads(done.stdout)["runs"]
    assert (run["error_kind"], run["user_stop"]) == ("user_error", "user_error")
    assert run["cause"] == ("simulated user scripted failed (script_exhausted): script exhausted: "
                            "the model was asked for reply 3 but the case's script has 2")


@pytest.mark.parametrize(("case", "message"), [
    ("- id: both\n  turns: [Hi.]\n  user: {model: scripted, persona: P, script: [x]}\n",
     ("error: both.yml:3:3: user: a case gives turns or user, not both (remove one: turns are fixed prompts, "
      "a simulated user writes its own)")),
    ("defaults: {user: {model: scripted, persona: P, script: [x]}}\ncases: [{id: a, script: [{content: x}]}, {id: b, turns: [hi]}]\n",
     ("error: inherit.yml:2:50: turns: a case gives turns or user, not both (remove one: turns are fixed prompts, "
      "a simulated user writes its own)")),
    ("- id: mute\n  user: {model: scripted, persona: P}\n",
     ("error: mute.yml:2:17: user.model: the scripted user has no script (add user.script: the user's replies, in order; "
      "or give user.model a live model)")),
    ("- id: nobody\n  expect: {response_contains: [x]}\n",
     "error: nobody.yml:1:3: missing required key 'turns' (give turns, the prompts to send, or user, a simulated user)"),
    ("- id: off\n  user: {model: scripted, persona: P, max_turns: 0, script: [x]}\n",
     "error: off.yml:2:50: user.max_turns: must be at least 1, got 0"),
])
def test_case_rules_of_the_simulated_user(tmp_path: Path, case: str, message: str) -> None:
    name = message.split(".yml")[0].removeprefix("error: ") + ".yml"
    (tmp_path / name).write_text(case, encoding="utf-8")
    done = run_cli("validate", name, cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()[0]) == (4, message)


def test_a_persona_template_error_is_told_before_any_run(tmp_path: Path) -> None:
    (tmp_path / "chat.yml").write_text(CHAT.format(model="scripted", limit=5).replace("{{ order }}", "{{ ordr }}"),
                                       encoding="utf-8")
    done = run_cli("run", "chat.yml", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 4
    assert done.stderr == "error: chat.yml:5:14: chat/chat.user.persona: 'ordr' is undefined (did you mean 'order'?)\n"
    assert not (tmp_path / "r").exists()


def test_the_run_schema_lists_every_user_stop() -> None:
    assert RUN_SCHEMA["properties"]["user_stop"]["enum"] == [*(s.value for s in UserStop), None]


def test_the_bundled_example_passes_offline_and_fails_when_the_agent_looks_up_the_wrong_order(tmp_path: Path) -> None:
    example = ROOT / "examples" / "simulated-user" / "support.yml"
    done = run_cli("run", str(example), "--results", str(tmp_path / "r"), "--output", "json")
    (run,) = json.loads(done.stdout)["runs"]
    assert (done.returncode, run["status"], run["user_stop"], len(run["user_turns"])) == (0, "pass", "marker", 3)
    hasty = example.read_text(encoding="utf-8").replace("lookup_order, arguments: {order: 42}", "lookup_order, arguments: {order: 7}")
    (tmp_path / "support.yml").write_text(hasty, encoding="utf-8")
    done = run_cli("run", str(tmp_path / "support.yml"), "--results", str(tmp_path / "r2"), "--output", "json")
    (run,) = json.loads(done.stdout)["runs"]
    assert (done.returncode, run["status"], run["failure"]) == (1, "fail", "wrong_args")


def test_a_recorded_live_user_replays_offline_as_a_scripted_user(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.push(openai_reply("It is order 42.", usage=(30, 6)), openai_reply("Please hurry."),
                    openai_reply("Great, thanks. ###STOP###"))
        config(tmp_path, server.api_base)
        code, live = _run(tmp_path, "local-openai", 5, "--config", str(tmp_path / "tooltrial.yml"),
                          "--record", str(tmp_path / "rec"))
    assert code == 0
    done = run_cli("run", str(tmp_path / "rec" / "cases"), "-p", "scripted", "--results", str(tmp_path / "again"),
                   "--output", "json")
    (replayed,) = json.loads(done.stdout)["runs"]
    assert (done.returncode, replayed["status"], replayed["user_model"], replayed["user_stop"]) == (0, "pass", "scripted", "marker")
    assert [t["content"] for t in replayed["user_turns"]] == [t["content"] for t in live["user_turns"]]
    assert replayed["user_tokens"]["total"] == live["user_tokens"]["total"] == 66


lines = st.lists(st.text(max_size=6) | st.sampled_from([DEFAULT_STOP, f"ok {DEFAULT_STOP}", " ", "fine"]), max_size=8)


@given(lines, st.integers(1, 6))
def test_the_user_speaks_until_its_first_marker_its_limit_or_its_first_empty_line(script: list[str], limit: int) -> None:
    user = UserSide(SimulatedUser("scripted", "p", max_turns=limit), ScriptedProvider([{"content": s} for s in script]),
                    "p", None)
    replies: list[str] = []
    while (line := user(replies)) is not None:
        replies.append(f"reply {len(replies)}")
    sent: list[str] = []
    for line in script:
        if len(sent) >= limit:
            stop = UserStop.MAX_USER_TURNS
            break
        if not line.strip() or DEFAULT_STOP in line:
            stop = UserStop.MARKER if line.strip() else UserStop.USER_ERROR
            break
        sent.append(line)
    else:  # past its script a scripted user is exhausted, unless it had said all it may
        stop = UserStop.MAX_USER_TURNS if len(sent) >= limit else UserStop.USER_ERROR
    assert ([t.content for t in user.turns if t.sent], user.stop, len(replies)) == (sent, stop, len(sent))


def test_a_user_model_that_cannot_be_reached_is_told_at_its_case_before_any_run(tmp_path: Path) -> None:
    (tmp_path / "chat.yml").write_text(CHAT.format(model="nosuchmodel", limit=5), encoding="utf-8")
    done = run_cli("run", "chat.yml", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert done.returncode == 4
    assert done.stderr.startswith("error: chat.yml:1: chat/chat.user.model: cannot use provider 'nosuchmodel': "
                                  "litellm knows no provider for model 'nosuchmodel' (")
    assert not (tmp_path / "r").exists()
