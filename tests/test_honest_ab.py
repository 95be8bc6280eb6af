"""Honest A/B and scores, through the CLI in this process: a prompt arm is what it says, process credit
is earned, an empty reply earns no outcome, the workspace path the prompt gives works, a reply cut off at
the output limit is marked, a local single-slot server is not flooded, and report.json's rates are
plain fractions.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from runner.suite.slots import Slots
from tests.fake_servers import OpenAIServer, Received, Reply, openai_reply
from tests.helpers import BUNDLED_FILES, config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")


def _run(tmp_path: Path, cases: str, *argv: str) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """Run the case file text ``cases`` (group ``ab``) with ``argv``; (the finished process, report.json,
    the run files in plan order)."""
    path = tmp_path / "ab.yml"
    path.write_text(cases)
    results = tmp_path / "results"
    done = run_cli("run", str(path), "--results", str(results), *argv, cwd=tmp_path)
    (folder,) = results.iterdir()
    runs = [json.loads(p.read_text()) for p in sorted((folder / "runs").glob("*.json"))]
    return done, json.loads((folder / "report.json").read_text()), runs


# --- 1. a case's own system prompt in a prompt A/B --------------------------------------------------

OWN_SYSTEM = """\
- id: own-system
  system: You are the case's own prompt.
  turns: [Say hi]
  expect: {response_contains: hi}
  script: [{content: hi}]
- id: arm-prompt
  turns: [Say hi]
  expect: {response_contains: hi}
  script: [{content: hi}]
"""


def test_a_case_whose_own_system_prompt_overrides_the_arms_is_recorded_said_and_left_out_of_the_pairs(
        tmp_path: Path) -> None:
    (tmp_path / "long.j2").write_text("You are careful. Work in {{ workspace }}.")
    (tmp_path / "terse.j2").write_text("Be brief.")
    done, report, runs = _run(tmp_path, OWN_SYSTEM, "-P", "long.j2", "-P", "terse.j2")
    assert done.returncode == 0, done.stdout + done.stderr
    used = sorted((r["prompt"], r["case"], r["prompt_used"], r["prompt_overridden"]) for r in runs)
    assert used == [("long", "ab/arm-prompt", "long", False), ("long", "ab/own-system", "ab/own-system.system", True),
                    ("terse", "ab/arm-prompt", "terse", False),
                    ("terse", "ab/own-system", "ab/own-system.system", True)]
    # each arm's table says how many of its runs did not use its prompt
    assert "note: 1 of 2 runs used their case's own system prompt, not long" in done.stdout
    assert "note: 1 of 2 runs used their case's own system prompt, not terse" in done.stdout
    assert [arm["prompt_overridden"] for arm in report["arms"]] == [1, 1]
    # the pair that ran the same prompt twice compares nothing: left out, and counted
    paired = report["paired"]
    assert (paired["pairs"], paired["overridden"], paired["a_passes"], paired["b_passes"]) == (1, 1, 1, 1)
    assert paired["verdict"] == ("scripted · terse vs scripted · long: same result on the 1 paired run: no difference; "
                                 "1 pair left out: the case's own system prompt replaced both prompts")


def test_the_bundled_cases_leave_the_system_prompt_to_the_arm() -> None:
    texts = {path.name: path.read_text() for path in BUNDLED_FILES}
    assert [name for name, text in sorted(texts.items()) if re.search(r"^\s*system:", text, re.MULTILINE)] == []


# --- 2. process credit ---------------------------------------------------------------------------

TWO_WRITES = """\
- id: parallel-writes
  tools: [write_file, bash]
  turns: [Create config/dev.env, config/staging.env and config/prod.env at once.]
  expect:
    trace:
      exact: [write_file, write_file, write_file]
      avoid: [bash]
      minimal_calls: 3
  script:
    - tool_calls:
        - {name: write_file, arguments: {path: config/dev.env, content: "LOG_LEVEL=debug\\n"}}
        - {name: write_file, arguments: {path: config/dev.env, content: "LOG_LEVEL=info\\n"}}
    - content: Created the files.
- id: no-calls
  tools: [write_file, bash]
  turns: [Create config/dev.env.]
  expect:
    trace: {must_include: [write_file], avoid: [bash], minimal_calls: 1}
  script: [{content: Created the file.}]
"""


def test_process_counts_every_trace_check_and_penalises_too_few_calls(tmp_path: Path) -> None:
    done, report, runs = _run(tmp_path, TWO_WRITES)
    assert done.returncode == 1, done.stderr
    writes, idle = runs
    assert [(c["check"], c["passed"]) for c in writes["checks"]] == [("trace.exact", False), ("trace.avoid", True)]
    # exact 0, avoid 1, efficiency min(2, 3) / max(2, 3); before: 1.00 (exact no part, 2 of 3 calls "efficient")
    assert writes["process"] == pytest.approx((0 + 1 + 2 / 3) / 3)
    # no call at all where the trace wants one: 0 (before: 0.33, for the bash it never called)
    assert (idle["process"], idle["failure"]) == (0.0, "no_tools")
    assert report["overall"]["process_mean"] == pytest.approx(round((0 + 1 + 2 / 3) / 6, 6))


# --- 3. an empty reply and the negative reply checks -----------------------------------------------

EMPTY_REPLIES = """\
- id: filtered
  turns: [What does the policy say about refunds?]
  expect:
    verify: "true"
    response_not_contains: [sorry]
  script: [{content: "", finish_reason: content_filter}]
- id: out-of-turns
  turns: [Find the refund policy.]
  expect:
    response_contains: [refund]
    response_not_contains: [sorry, unknown]
    max_turns: 1
  script:
    - tool_calls: [{name: list_dir, arguments: {}}]
    - content: The refund policy is 30 days.
- id: per-turn
  turns:
    - content: First, say nothing.
      expect: {response_not_contains: [sorry]}
    - Now say done.
  expect: {response_contains: [done]}
  script:
    - {content: "", finish_reason: content_filter}
    - content: done
"""


def test_a_negative_reply_check_fails_on_an_empty_reply_so_no_answer_earns_no_outcome(tmp_path: Path) -> None:
    done, _report, runs = _run(tmp_path, EMPTY_REPLIES)
    assert done.returncode == 1, done.stderr
    filtered, out_of_turns, per_turn = runs
    assert [(c["check"], c["passed"], c["message"]) for c in filtered["checks"]] == [
        ("verify", True, "verify passed: true"), ("response_not_contains", False, 'no reply to check for "sorry"')]
    assert (filtered["status"], filtered["outcome"], filtered["failure"]) == ("fail", 0.5, "missing_output")
    # the turn limit left no reply: nothing earned (before: 2 of 3, for the words it never wrote)
    assert (out_of_turns["status"], out_of_turns["error_kind"], out_of_turns["outcome"]) == ("error", "turn_limit", 0.0)
    # a turn's own check judges that turn's reply the same way
    assert [(c["check"], c["passed"], c["message"]) for c in per_turn["checks"]] == [
        ("turns[0].response_not_contains", False, 'turn 1: no reply to check for "sorry"'),
        ("response_contains", True, 'response contains "done"')]
    assert per_turn["outcome"] == 0.5
    assert '  no reply to check for "sorry"' in done.stdout


# --- 4. the absolute workspace path the prompt gives --------------------------------------------------


def _writer(outside: Path) -> Any:
    """A model that reads its workspace from the bundled prompt and writes there by absolute path, then
    tries two paths outside it, then answers."""

    def reply(request: Received) -> Reply:
        messages = request.body["messages"]
        workspace = re.search(r"project folder at (\S+)\.\n", messages[0]["content"]).group(1)
        if messages[-1]["role"] == "user":
            return openai_reply(tool_calls=[
                ("write_file", {"path": f"{workspace}/notes/out.txt", "content": "inside\n"}),
                ("read_file", {"path": f"{workspace}/notes/../notes/out.txt"}),
                ("write_file", {"path": str(outside), "content": "escaped\n"}),
                ("write_file", {"path": f"{workspace}/../escaped.txt", "content": "escaped\n"}),
                ("list_dir", {"path": workspace})])
        return openai_reply("Wrote notes/out.txt.")

    return reply


def test_a_file_tool_takes_the_absolute_workspace_path_the_prompt_gives_and_nothing_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    cases = """\
- id: absolute
  turns: [Write inside to notes/out.txt]
  expect:
    files: {notes/out.txt: {equals: "inside\\n"}}
"""
    with OpenAIServer(responder=_writer(outside)) as server:
        config(tmp_path, openai_base=server.api_base)
        done, _, (run,) = _run(tmp_path, cases, "-p", "local-openai")
    assert done.returncode == 0, done.stdout + done.stderr
    results = [(s["name"], s["is_error"], s["result"].split(" (")[0]) for s in run["steps"]]
    workspace = run["steps"][4]["arguments"]["path"]
    assert results[:2] == [("write_file", False, f"wrote 7 bytes to {workspace}/notes/out.txt"),
                           ("read_file", False, "     1\tinside")]
    assert results[2] == ("write_file", True, f"Error: path escapes the workspace: {outside}")
    assert results[3][:2] == ("write_file", True) and results[3][2].startswith("Error: path escapes the workspace: ")
    assert results[4] == ("list_dir", False, "notes/")
    assert not outside.exists() and not list(tmp_path.glob("**/escaped.txt"))


# --- 5. a final reply cut off at the output limit -----------------------------------------------------

CUT_OFF = """\
- id: cut
  turns: [What is 6 times 7? Explain.]
  expect: {response_contains: ["42"]}
  script: [{content: "Six times seven is", finish_reason: length}]
- id: whole
  turns: [What is 6 times 7?]
  expect: {response_contains: ["42"]}
  script: [{content: "42"}]
"""


def test_a_final_reply_cut_off_at_the_output_limit_is_marked_in_the_record_the_lines_and_the_tables(
        tmp_path: Path) -> None:
    done, report, (cut, whole) = _run(tmp_path, CUT_OFF)
    assert done.returncode == 1, done.stderr
    assert (cut["truncated_reply"], cut["final_reply"], whole["truncated_reply"]) == (True, "Six times seven is", False)
    assert ("FAIL ab/cut\n  response missing \"42\"\n"
            "  final reply cut off at the output limit (finish reason length): judged as it stood\nPASS ab/whole\n"
            ) in done.stdout
    assert "note: 1 of 2 runs ended with a final reply cut off at the output limit" in done.stdout
    assert (report["overall"]["truncated_replies"], report["arms"][0]["truncated_replies"]) == (1, 1)


# --- 6. a local server that serves one request at a time ------------------------------------------------


class _Counting:
    """A responder that answers after 0.3 s and counts how many requests it held at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, request: Received) -> Reply:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(0.3)
        with self.lock:
            self.now -= 1
        return openai_reply("done")


ONE_REQUEST = """\
- id: hello
  turns: [Say done]
  expect: {response_contains: [done]}
"""


@pytest.mark.parametrize(("extra", "cap"), [("", 1), ("    max_concurrency: 2\n", 2)])
def test_runs_of_a_loopback_provider_wait_for_its_slots_and_the_wait_is_not_their_duration(
        tmp_path: Path, extra: str, cap: int) -> None:
    counting = _Counting()
    with OpenAIServer(responder=counting) as server:
        path = config(tmp_path, openai_base=server.api_base)
        if extra:  # the alias local-openai's last key is its retries: add the setting after it
            text = path.read_text().replace("max_backoff: 0.1}\n", "max_backoff: 0.1}\n" + extra)
            path.write_text(text)
        done, report, runs = _run(tmp_path, ONE_REQUEST, "-p", "local-openai", "-j", "4", "--runs", "4")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(server.chats) == 4 and 1 <= counting.peak <= cap
    queued = sorted(r["queued"] for r in runs)
    if cap == 1:  # each run after the first waited for at least one whole run, 0.3 s of which at the server
        assert queued[0] >= 0.0 and all(q >= 0.25 for q in queued[1:]), queued
        assert all(r["duration"] >= 0.3 for r in runs)
        assert "note: runs waited" in done.stdout and "for a free slot of local-openai (not counted in time)" in done.stdout
    assert report["overall"]["queued_total"] == pytest.approx(sum(queued))
    assert report["overall"]["duration_total"] == pytest.approx(sum(r["duration"] for r in runs))


def test_max_concurrency_below_one_is_a_config_error(tmp_path: Path) -> None:
    path = config(tmp_path)
    path.write_text(path.read_text().replace("    timeout: 10\n", "    timeout: 10\n    max_concurrency: 0\n", 1))
    (tmp_path / "ab.yml").write_text(ONE_REQUEST)
    done = run_cli("run", "ab.yml", "-p", "local-openai", cwd=tmp_path)
    assert done.returncode == 4
    assert "tooltrial.yml:8:22: providers.local-openai.max_concurrency: must be at least 1, got 0" in done.stderr


# --- 7. report.json's rates ------------------------------------------------------------------------------

NEVER = """\
- id: never
  turns: [Say yes]
  expect: {response_contains: [yes]}
  script: [{content: "no"}]
"""


def test_report_rates_are_fractions_rounded_to_six_digits(tmp_path: Path) -> None:
    _, report, _ = _run(tmp_path, NEVER, "--runs", "3")
    # 0 of 3: the Wilson low bound is 0 exactly (it was 5.551115123125783e-17)
    assert report["overall"]["interval"] == [0.0, 0.561497]
    assert report["cells"][0]["interval"] == [0.0, 0.561497]
    assert (report["overall"]["pass_rate"], report["cells"][0]["pass_at_k"]) == (0.0, {"1": 0.0, "2": 0.0, "3": 0.0})


def test_a_run_waiting_for_a_slot_stops_waiting_when_the_suite_is_interrupted() -> None:
    slots, cancel = Slots({"local": 1, "remote": None}), threading.Event()
    with slots.held("local", cancel) as first:
        assert first == 0.0  # free at once
        threading.Timer(0.2, cancel.set).start()
        with slots.held("local", cancel) as second:
            assert second is None  # never got the slot: the run is not started
        with slots.held("remote", cancel) as unlimited:
            assert unlimited == 0.0
