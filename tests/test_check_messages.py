"""Every check's message says what was found, in the polarity of its result: a passing check states what
satisfied it and carries no failure wording (``response contains "split"``, never ``response missing
"split"``); a failing one says what was found instead.

Table-driven over every check kind of runner.checks.table.KINDS through the CLI in this process: one case
whose every check passes, one whose every check fails, the agent and the judge loopback OpenAI servers
(usage reported, a model with a price, so the budgets are checked); then a property over the reply checks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.checks.base import CheckContext
from runner.checks.outcome import check_response_contains, check_response_matches, check_response_not_contains
from runner.checks.table import KINDS
from runner.run.trajectory import Trajectory
from runner.spec.casefile import load_file
from tests.fake_servers import OpenAIServer, Received, Reply, openai_reply, script_replies
from tests.helpers import make_case, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

# Failure wording: none of it may appear in a passing check's message.
FAILURE_WORDS = re.compile(r"\b(not|no|none|never|missing|failed|fails|differs|over|below|forbids|without|"
                           r"unreachable|exceeded)\b|n't", re.IGNORECASE)
USAGE = (100_000, 50_000)  # tokens per agent request: the cost shows at 4 decimals

CASES = """\
- id: all-pass
  turns: [Write the greeting]
  files: {notes.txt: "hello world\\n"}
  expect:
    verify: test -f out.txt
    files:
      out.txt: {exists: true}
      gone.txt: {exists: false}
      notes.txt: {contains: hello, not_contains: goodbye, matches: "hel+o", equals: "hello world\\n"}
    response_contains: finished
    response_not_contains: sorry
    response_matches: "fin.sh"
    response_json: {schema: {type: object}, paths: {done: true}}
    trace: {exact: [write_file], exact_unordered: [write_file], must_include: [write_file], avoid: [bash],
            max_calls: 3, min_calls: 1, min_attempts: 1, order: [write_file], args: {write_file: {path: out.txt}},
            calls: [{name: write_file, args: {path: out.txt}}]}
    judge: {rubric: The greeting was written., threshold: 0.7}
    check: test -f out.txt
    max_tokens: 1000000
    max_cost: 1.0
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
    - content: "finished the greeting\\n```json\\n{\\"done\\": true}\\n```"
- id: all-fail
  turns: [Give up]
  files: {notes.txt: "bye now\\n", gone.txt: "still here"}
  expect:
    verify: test -f out.txt
    files:
      out.txt: {exists: true}
      gone.txt: {exists: false}
      notes.txt: {contains: hello, not_contains: bye, matches: "hel+o", equals: "hello world\\n"}
    response_contains: finished
    response_not_contains: sorry
    response_matches: "fin.sh"
    response_json: {schema: {type: object}, paths: {done: true}}
    trace: {exact: [write_file], exact_unordered: [bash], must_include: [write_file], avoid: [bash], max_calls: 1,
            min_calls: 3, min_attempts: 3, order: [write_file, bash], args: {bash: {command: ls}},
            calls: [{name: bash, args: {command: ls}}]}
    judge: {rubric: The greeting was written., threshold: 0.7}
    check: test -f out.txt
    max_tokens: 1000
    max_cost: 0.01
  script:
    - tool_calls: [{name: bash, arguments: {command: echo hi}}]
    - tool_calls: [{name: bash, arguments: {command: echo hi}}]
    - content: sorry, I gave up
"""

# (check, passed, message) of each case, in the order the checks run (the check table's).
PASSING = [
    ("verify", True, "verify passed: test -f out.txt"),
    ("files.exists", True, "out.txt exists"),
    ("files.absent", True, "gone.txt is absent"),
    ("files", True, 'notes.txt contains "hello"'),
    ("files", True, 'notes.txt is free of "goodbye"'),
    ("files", True, "notes.txt matches /hel+o/"),
    ("files", True, "notes.txt equals the expected content"),
    ("response_contains", True, 'response contains "finished"'),
    ("response_not_contains", True, 'response is free of "sorry"'),
    ("response_matches", True, "response matches /fin.sh/"),
    ("response_json", True, "response is JSON (a fenced code block)"),
    ("response_json.schema", True, "response JSON matches the schema"),
    ("response_json.paths", True, "response JSON done: true"),
    ("trace.exact", True, "tool calls were exactly [write_file]"),
    ("trace.exact_unordered", True, "tool calls [write_file] are [write_file] in some order"),
    ("trace.must_include", True, "called write_file 1 time(s)"),
    ("trace.avoid", True, "avoided bash (0 of 1 calls)"),
    ("trace.max_calls", True, "1 tool call, within the limit of 3"),
    ("trace.min_calls", True, "1 tool call, meeting the minimum of 1"),
    ("trace.min_attempts", True, "1 tool call attempted, meeting the minimum of 1"),
    ("trace.order", True, "calls [write_file] contain [write_file] in that order"),
    ("trace.args", True, 'call #1 of write_file matches {"path": "out.txt"}'),
    ("trace.calls", True, "1 expected call(s) paired one to one: #1 write_file = call #1"),
    ("judge", True, "judge score 0.90 reached 0.70: The greeting is there."),
    ("check", True, "check test -f out.txt: passed"),
    ("max_tokens", True, "used 300,000 tokens, within the budget of 1,000,000"),
    ("max_cost", True, "cost $0.0900, within the budget of $1.0000"),
]
FAILING = [
    ("verify", False, "verify failed (exit 1): test -f out.txt"),
    ("files.exists", False, "out.txt does not exist"),
    ("files.absent", False, "gone.txt exists"),
    ("files", False, 'notes.txt missing "hello"'),
    ("files", False, 'notes.txt contains "bye"'),
    ("files", False, "notes.txt does not match /hel+o/"),
    ("files", False, "notes.txt differs from the expected content: -hello world | +bye now"),
    ("response_contains", False, 'response missing "finished"'),
    ("response_not_contains", False, 'response contains "sorry"'),
    ("response_matches", False, "response does not match /fin.sh/"),
    ("response_json", False, "response is not JSON: Expecting value (line 1, column 1)"),
    ("trace.exact", False, "tool calls were [bash, bash], expected exactly [write_file]"),
    ("trace.exact_unordered", False, "tool calls were [bash, bash], expected [bash] in any order (1 extra bash)"),
    ("trace.must_include", False, "never called write_file (calls: bash, bash)"),
    ("trace.avoid", False, "called bash 2 time(s), which the case forbids"),
    ("trace.max_calls", False, "2 tool calls, at most 1 allowed"),
    ("trace.min_calls", False, "2 tool calls, at least 3 required"),
    ("trace.min_attempts", False, "2 tool calls attempted, at least 3 required"),
    ("trace.order", False, "calls [bash, bash] do not contain [write_file, bash] in that order"),
    ("trace.args", False, ('no bash call has arguments matching {"command": "ls"}: '
                           '#1 {"command": "echo hi"} (command: expected "ls", got "echo hi"); '
                           '#2 {"command": "echo hi"} (command: expected "ls", got "echo hi")')),
    ("trace.calls", False, ('expected call #1 bash {"command": "ls"} found no partner: '
                            'nearest call #1 {"command": "echo hi"} (command: expected "ls", got "echo hi")')),
    ("judge", False, "judge score 0.20 is below 0.70: The reply gave up."),
    ("check", False, "check test -f out.txt: failed (exit 1)"),
    ("max_tokens", False, "used 450,000 tokens, over the budget of 1,000"),
    ("max_cost", False, "cost $0.1350, over the budget of $0.0100"),
]


class _Agent:
    """Answers each conversation from its case's script (chosen by the first user message), with USAGE."""

    def __init__(self, cases: list[Any]) -> None:
        self.by_turn = {case.turns[0]: script_replies(case.script, usage=USAGE) for case in cases}

    def __call__(self, received: Received) -> Reply:
        messages = received.body["messages"]
        first = next(m["content"] for m in messages if m["role"] == "user")
        return self.by_turn[first][sum(m["role"] == "assistant" for m in messages)]


def _judge(received: Received) -> Reply:
    """A passing verdict for the reply that finished, a failing one for the other."""
    prompt = received.body["messages"][-1]["content"]
    score, reasoning = (0.9, "The greeting is there.") if "finished the greeting" in prompt else (0.2, "The reply gave up.")
    return openai_reply(json.dumps({"score": score, "reasoning": reasoning}))


def _messages(tmp_path: Path) -> dict[str, list[tuple[str, bool, str]]]:
    """Run both cases through the CLI: case id -> (check, passed, message) of each result in its run file."""
    path = tmp_path / "kinds.yml"
    path.write_text(CASES, encoding="utf-8")
    with OpenAIServer(responder=_Agent(load_file(path, fixtures_dir=tmp_path))) as agent, \
            OpenAIServer(responder=_judge) as judge:
        aliases = "".join(f"""\
  {alias}:
    model: openai/gpt-4o-mini
    api_base: {base}
    timeout: 10
    retries: {{attempts: 1}}
""" for alias, base in (("agent", agent.api_base), ("local-judge", judge.api_base)))
        (tmp_path / "tooltrial.yml").write_text("providers:\n" + aliases, encoding="utf-8")
        done = run_cli("run", str(path), "-p", "agent", "--judge", "local-judge", "--results", str(tmp_path / "r"),
                       "--config", str(tmp_path / "tooltrial.yml"), env={"OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 1, done.stderr
    runs = [json.loads(p.read_text()) for p in sorted((tmp_path / "r").glob("*/runs/*.json"))]
    return {run["case"]: [(c["check"], c["passed"], c["message"]) for c in run["checks"]] for run in runs}


def test_every_check_kind_says_what_it_found_for_a_pass_and_a_fail(tmp_path: Path) -> None:
    found = _messages(tmp_path)
    kinds = {name for name, kind in KINDS.items() if kind.category is not None}  # max_turns is a limit, not a check
    for results in (PASSING, FAILING):
        assert {check.split(".")[0] for check, _, _ in results} == kinds  # every kind, both ways
    assert found["kinds/all-pass"] == PASSING
    assert found["kinds/all-fail"] == FAILING
    for check, _, message in PASSING:
        assert FAILURE_WORDS.search(message) is None, (check, message)
    passed_as = {(check, message) for check, _, message in PASSING}
    assert not [r for r in FAILING if (r[0], r[2]) in passed_as]  # a failure never reads like a pass


_TEXT = st.text(st.sampled_from("abc xyz"), max_size=12)


@settings(max_examples=100, deadline=None)
@given(reply=_TEXT, needle=_TEXT.filter(bool))
def test_reply_checks_word_a_pass_as_found_and_a_fail_as_not(reply: str, needle: str) -> None:
    ctx = CheckContext(case=make_case(), workspace=Path("."), trajectory=Trajectory(replies=[reply]),
                       run_command=lambda command: pytest.fail("no command runs"))
    pattern = re.escape(needle)
    (contains,), (free,), (matches,) = (check([arg], ctx) for check, arg in (
        (check_response_contains, needle), (check_response_not_contains, needle), (check_response_matches, pattern)))
    blank = not reply.strip()  # no reply to be free of anything: the negative check fails
    assert contains.passed == (needle in reply) == matches.passed
    assert free.passed == (not blank and needle not in reply)
    assert contains.message == (f'response contains "{needle}"' if contains.passed else f'response missing "{needle}"')
    assert free.message == (f'no reply to check for "{needle}"' if blank else
                            f'response is free of "{needle}"' if free.passed else f'response contains "{needle}"')
    assert matches.message == (f"response matches /{pattern}/" if matches.passed else f"response does not match /{pattern}/")
    for result in (contains, free, matches):  # what the case wrote aside, a passing message has no failure wording
        wording = result.message.replace(f'"{needle}"', "").replace(f"/{pattern}/", "")
        assert not result.passed or FAILURE_WORDS.search(wording) is None, result
