"""Run metrics and the failure taxonomy: hand-built traces, and one deliberately wrong case per cause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.checks.base import OUTCOME, PROCESS, CheckResult
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import FAIL, PASS, RunRecord
from runner.run.trajectory import Step
from runner.sandbox.command import Sandbox
from runner.scoring.metrics import (
    FAILURE_CAUSES,
    accuracy,
    efficiency,
    error_count,
    failure_cause,
    outcome_score,
    process_score,
    redundant,
)
from runner.spec.casefile import load_file
from tests.helpers import ROOT, make_case, run_cli


def _step(name: str, arguments: dict[str, Any] | None = None, is_error: bool = False, turn: int = 0) -> Step:
    return Step(turn, "c", name, arguments, "Error: x" if is_error else "ok", is_error, 0.0)


# --- metrics on hand-built traces ---------------------------------------------------------------


def test_redundant_counts_repeats_of_an_earlier_identical_call() -> None:
    steps = [
        _step("read_file", {"path": "a", "limit": 5}),
        _step("read_file", {"limit": 5, "path": "a"}),  # same arguments, other key order
        _step("read_file", {"path": "a", "limit": 6}),
        _step("grep", {"path": "a", "limit": 5}),
        _step("read_file", {"path": "a", "limit": 5.0}),  # 5.0 is not 5 in canonical JSON
        _step("read_file", {"limit": 5, "path": "a"}),
        _step("list_dir", None),  # arguments that did not parse are not compared
        _step("list_dir", None),
    ]
    assert redundant(steps) == 2
    assert redundant([]) == 0


def _ran(name: str, arguments: dict[str, Any], status: str = "executed") -> Step:
    return Step(0, "c", name, arguments, "ok", False, 0.0, status=status)


TEST, FIX = {"command": "python3 -m unittest -q"}, {"path": "calc.py", "old_string": "-", "new_string": "+"}


@pytest.mark.parametrize(("steps", "expected"), [
    ([_ran("bash", TEST), _ran("edit_file", FIX), _ran("bash", TEST)], 0),  # test, fix, test again
    ([_ran("bash", TEST), _ran("bash", TEST)], 1),  # nothing between: the same answer
    ([_ran("read_file", {"path": "a"}), _ran("write_file", {"path": "a", "content": "x"}),
      _ran("read_file", {"path": "a"})], 0),
    ([_ran("read_file", {"path": "a"}), _ran("grep", {"pattern": "x"}), _ran("glob", {"pattern": "*"}),
      _ran("list_dir", {"path": "."}), _ran("read_file", {"path": "a"})], 1),  # only reads between
    ([_ran("get_order", {"id": 1}), _ran("cancel_order", {"id": 1}), _ran("get_order", {"id": 1})], 0),  # a mock
    ([_ran("read_file", {"path": "a"}), _ran("bash", {"command": "rm a"}, "truncated"),
      _ran("read_file", {"path": "a"})], 1),  # a call cut off never ran: it changed nothing
    ([_ran("read_file", {"path": "a"}), _ran("bash", {"command": "rm a"}, "recovered"),
      _ran("read_file", {"path": "a"})], 0),  # a call recovered from text did run
    ([_ran("read_file", {"path": "a"}), _ran("bash", {"command": "rm a"}, "refused"),
      _ran("read_file", {"path": "a"})], 1),  # nor did a refused one
])
def test_a_repeat_counts_only_when_nothing_between_could_change_its_answer(steps: list[Step], expected: int) -> None:
    assert redundant(steps) == expected


def test_the_bundled_fix_group_runs_its_tests_before_and_after_the_edit_without_a_redundant_call(
        tmp_path: Path) -> None:
    code = run_cli("run", str(ROOT / "cases" / "fix.yml"), "--results", str(tmp_path / "r")).returncode
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "r").glob("*/runs/*.json"))]
    orders = {r["case"]: [s["name"] for s in r["steps"]] for r in records}
    assert code == 0 and orders["fix/fix-failing-test"][:4] == ["bash", "read_file", "edit_file", "bash"]
    assert [(r["case"], r["redundant"]) for r in records] == [(r["case"], 0) for r in records]
    report = json.loads(next((tmp_path / "r").glob("*/report.json")).read_text())
    assert report["arms"][0]["redundant_total"] == 0


def test_accuracy_is_exact_sequence_equality_or_none() -> None:
    assert accuracy(["glob", "read_file"], ["glob", "read_file"]) == 1
    assert accuracy(["read_file", "glob"], ["glob", "read_file"]) == 0
    assert accuracy(["glob", "read_file", "read_file"], ["glob", "read_file"]) == 0
    assert accuracy([], []) == 1
    assert accuracy(["glob"], None) is None


def test_errors_count_error_results_plus_a_run_error() -> None:
    steps = [_step("a", is_error=True), _step("b"), _step("c", is_error=True)]
    assert error_count(steps, PASS) == 2
    assert error_count(steps, "error") == 3


def test_outcome_is_the_fraction_of_outcome_checks_passed() -> None:
    checks = [
        CheckResult("verify", True, ""),
        CheckResult("files", False, ""),
        CheckResult("response_contains", True, ""),
        CheckResult("trace.avoid", False, "", PROCESS),
    ]
    assert outcome_score(checks) == pytest.approx(2 / 3)
    assert outcome_score(checks[3:]) is None


def _checks(*results: tuple[str, bool]) -> list[CheckResult]:
    """Process check results by name and verdict, as the registry stamps them."""
    return [CheckResult(name, passed, "", PROCESS) for name, passed in results]


def _calls(*names: str, turn: int = 0, status: str = "executed") -> list[Step]:
    return [Step(turn, "c", name, {}, "ok", False, 0.0, status=status) for name in names]


def test_process_is_the_mean_of_each_trace_checks_pass_fraction_and_efficiency() -> None:
    case = make_case(expect={"trace": {"must_include": ["glob", "read_file"], "avoid": ["bash", "web"],
                                       "minimal_calls": 2}})
    offered = frozenset({"glob", "read_file", "bash"})
    checks = _checks(("trace.must_include", True), ("trace.must_include", False),
                     ("trace.avoid", False), ("trace.avoid", True))
    # required 1/2; forbidden: only bash was offered and it was called -> 0 (web, not offered, is no part);
    # efficiency min(4, 2) / max(4, 2)
    assert process_score(case, checks, _calls("glob", "glob", "bash", "glob"), offered) == pytest.approx((0.5 + 0 + 0.5) / 3)
    # an avoided tool that was not offered is no component at all; max_calls is one
    only_web = make_case(expect={"trace": {"avoid": ["web"]}})
    assert process_score(only_web, _checks(("trace.avoid", True)), _calls("glob"), offered) is None
    capped = make_case(expect={"trace": {"max_calls": 3}})
    assert process_score(capped, _checks(("trace.max_calls", False)), _calls(*["glob"] * 4), offered) == 0.0


def test_a_failed_exact_order_args_or_any_other_trace_check_costs_process() -> None:
    # builtin/parallel-writes: two writes where three were needed scored 1.00 before (exact was no part)
    case = make_case(expect={"trace": {"exact": ["write_file"] * 3, "avoid": ["bash"], "minimal_calls": 3}})
    offered = frozenset({"write_file", "bash"})
    checks = _checks(("trace.exact", False), ("trace.avoid", True))
    assert process_score(case, checks, _calls("write_file", "write_file"), offered) == pytest.approx((0 + 1 + 2 / 3) / 3)
    # a kind tooltrial does not know yet counts the same way: the fraction of its results that passed
    checks = _checks(("trace.order", True), ("trace.args", True), ("trace.args", False), ("trace.calls", False))
    case = make_case(expect={"trace": {"order": ["a"], "args": {"a": {}, "b": {}}}})
    assert process_score(case, checks, _calls("a"), frozenset({"a", "b"})) == pytest.approx((1 + 0.5 + 0) / 3)


@pytest.mark.parametrize(("calls", "minimal", "expected"), [
    (9, 4, 4 / 9), (4, 4, 1.0), (2, 4, 0.5), (8, 4, 0.5), (0, 1, 0.0), (1, 3, 1 / 3), (0, 0, 1.0)])
def test_efficiency_penalises_too_few_calls_as_much_as_too_many(calls: int, minimal: int, expected: float) -> None:
    assert efficiency(calls, minimal) == pytest.approx(expected)


@pytest.mark.parametrize(("calls", "attempts", "minimal", "expected"), [
    (1, 2, 1, 0.5), (0, 1, 1, 0.0), (2, 2, 2, 1.0), (2, 3, 4, 0.5), (0, 3, 0, 0.0)])
def test_a_refused_attempt_earns_no_credit_and_costs_like_an_extra_call(calls: int, attempts: int, minimal: int,
                                                                        expected: float) -> None:
    assert efficiency(calls, minimal, attempts) == pytest.approx(expected)


@given(st.integers(0, 60), st.integers(1, 60))
def test_efficiency_is_whole_only_at_the_minimal_count_and_falls_on_either_side(calls: int, minimal: int) -> None:
    score = efficiency(calls, minimal)
    assert 0.0 <= score <= 1.0 and (score == 1.0) == (calls == minimal)
    if calls < minimal:  # one more call, nearer the need: better
        assert efficiency(calls + 1, minimal) > score
    if calls > minimal:  # one fewer call, nearer the need: better
        assert efficiency(calls - 1, minimal) > score


def test_doing_nothing_where_the_trace_wants_calls_scores_process_zero() -> None:
    # before: avoid passed and efficiency was the only part that saw the empty trace, 0.33
    case = make_case(expect={"trace": {"must_include": ["calculate"], "avoid": ["bash"], "minimal_calls": 1}})
    offered = frozenset({"calculate", "bash"})
    checks = _checks(("trace.must_include", False), ("trace.avoid", True))
    assert process_score(case, checks, [], offered) == 0.0
    # calls that were refused, invalid or cut off are attempts: trace checks and efficiency do not count them
    attempts = _calls("calculate", status="invalid") + _calls("calculate", status="truncated")
    assert process_score(case, checks, attempts, offered) == 0.0
    done = _calls("calculate") + _calls("calculate", status="recovered")
    assert process_score(case, _checks(("trace.must_include", True), ("trace.avoid", True)), done, offered) == \
        pytest.approx((1 + 1 + 0.5) / 3)
    # a trace that wants no call is satisfied by none
    quiet = make_case(expect={"trace": {"avoid": ["bash"]}})
    assert process_score(quiet, _checks(("trace.avoid", True)), [], offered) == 1.0


def test_process_pools_each_turns_components_with_the_cases() -> None:
    offered = frozenset({"grep", "read_file", "bash"})
    case = make_case(turns=["search", "read"], expect={"trace": {"must_include": ["grep"], "minimal_calls": 4}},
                     turn_expect=({}, {"trace": {"must_include": ["read_file"]}}))
    steps = _calls(*["grep"] * 4) + _calls(*["grep"] * 5, turn=1)
    # turn 2 had to read a file and did not: its required part is 0, pooled with the case's 1 and 4/9
    checks = _checks(("turns[1].trace.must_include", False), ("trace.must_include", True))
    assert process_score(case, checks, steps, offered) == pytest.approx((1 + 4 / 9 + 0) / 3)
    # each turn's parts see only its own calls: efficiency 1/2 on turn 1, a forbidden bash on turn 2
    case = make_case(turns=["a", "b"], turn_expect=({"trace": {"minimal_calls": 1}},
                                                   {"trace": {"avoid": ["bash", "web"], "must_include": ["read_file"]}}))
    steps = _calls("grep", "grep") + _calls("bash", "read_file", turn=1)
    checks = _checks(("turns[1].trace.must_include", True), ("turns[1].trace.avoid", False),
                     ("turns[1].trace.avoid", True))
    assert process_score(case, checks, steps, offered) == pytest.approx((0.5 + 1 + 0) / 3)
    # a turn that never finished: its checks never ran, its trace is one part, 0
    unfinished = [CheckResult("turns[1]", False, "turn 2: never finished")]
    assert process_score(case, unfinished, steps[:2], offered) == pytest.approx((0.5 + 0) / 2)


def test_a_failed_check_of_an_unknown_kind_is_unknown() -> None:
    # no bundled check kind reaches "unknown": every process check maps to an earlier cause
    record = RunRecord("t/case", "scripted", "default", status=FAIL, steps=[_step("grep")],
                       checks=[CheckResult("budget.max_tokens", False, "too many tokens", "budget")])
    assert failure_cause(make_case(), record) == "unknown"
    record.checks.append(CheckResult("files", False, "", OUTCOME))
    assert failure_cause(make_case(), record) == "unknown"


# --- one deliberately wrong case per failure cause, run end to end -----------------------------

CAUSES = """\
defaults:
  files: {a.txt: "alpha\\n", b.txt: "beta\\n"}
  mocks:
    - name: lookup
      description: Look up an order by id.
      parameters:
        type: object
        properties: {id: {type: integer}}
        required: [id]
      responses:
        - {when: {id: 7}, result: {status: shipped}}
        - {result: unknown order}
cases:
  - id: run-error
    setup: [exit 3]
    turns: [Read a.txt.]
    expect: {trace: {must_include: [read_file]}}
    script: [{content: never asked}]
  - id: turn-limit
    turns: [Read a.txt.]
    expect: {max_turns: 1, trace: {must_include: [read_file]}}
    script:
      - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      - content: never asked
  - id: no-tools
    turns: [What is the status of order 7?]
    expect:
      response_contains: [shipped]
      trace: {must_include: [lookup], minimal_calls: 1}
    script: [{content: Order 7 has shipped.}]
  - id: called-forbidden
    turns: [What does a.txt say?]
    tools: [read_file, bash, grep]
    expect:
      response_contains: [alpha]
      trace: {must_include: [read_file], avoid: [bash, write_file], minimal_calls: 1}
    script:
      - tool_calls: [{name: bash, arguments: {command: cat a.txt}}]
      - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      - content: It says alpha.
  - id: wrong-tool
    turns: [What is the status of order 7?]
    expect:
      response_contains: [shipped]
      trace: {must_include: [lookup], minimal_calls: 1}
    script:
      - tool_calls: [{name: grep, arguments: {pattern: "7"}}]
      - content: Order 7 has shipped.
  - id: missing-output
    turns: [Write hello to out.txt.]
    expect:
      files: {out.txt: {contains: hello}}
      trace: {minimal_calls: 1}
    script:
      - tool_calls: [{name: write_file, arguments: {path: hello.txt, content: out}}]
      - content: Done.
  - id: empty-reply
    turns: [What does a.txt say?]
    expect:
      response_contains: [alpha]
    script:
      - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      - {content: "", finish_reason: content_filter}  # an empty reply that is final: the provider filtered it
  - id: wrong-args
    turns: [What is the status of order 7?]
    expect:
      response_contains: [order]
      trace: {must_include: [lookup], args: {lookup: {id: 7}}, minimal_calls: 1}
    script:
      - tool_calls: [{name: lookup, arguments: {id: 8}}]
      - content: I could not find that order.
  - id: excessive-calls
    turns: [What does a.txt say?]
    expect:
      response_contains: [alpha]
      trace: {must_include: [read_file], max_calls: 2, minimal_calls: 1}
    script:
      - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
      - content: It says alpha.
  - id: good-process-bad-outcome
    turns: [What is the status of order 7?]
    expect:
      response_contains: [shipped]
      trace: {expected: [lookup], must_include: [lookup], args: {lookup: {id: 7}}, minimal_calls: 1}
    script:
      - tool_calls: [{name: lookup, arguments: {id: 7}}]
      - content: Order 7 is still being packed.
  - id: calls-arguments-refused
    turns: [What is the status of order 7?]
    expect:
      response_contains: [shipped]
      trace: {expected: [lookup], calls: [{name: lookup, args: {id: 7}}]}
    script:
      - tool_calls: [{name: lookup, arguments: {id: "7"}}]
      - content: Order 7 has shipped.
  - id: check-failed
    turns: [What is the status of order 7?]
    expect:
      response_contains: [shipped]
      trace: {must_include: [lookup]}
      check: [{run: 'echo "{\\"pass\\": false, \\"score\\": 0.25}"', process: true}]
    script:
      - tool_calls: [{name: lookup, arguments: {id: 7}}]
      - content: Order 7 has shipped.
  - id: passes
    turns: [What is the status of order 7?]
    expect:
      response_contains: [shipped]
      trace: {expected: [lookup], must_include: [lookup], args: {lookup: {id: 7}}, minimal_calls: 1}
    script:
      - tool_calls: [{name: lookup, arguments: {id: "7"}}]
      - tool_calls: [{name: lookup, arguments: {id: 7}}]
      - content: Order 7 has shipped.
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, RunRecord]:
    path = tmp_path_factory.mktemp("cases") / "causes.yml"
    path.write_text(CAUSES)
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    options = RunOptions(sandbox=Sandbox(), command_timeout=10.0)
    return {case.id: execute(case, arm, options) for case in load_file(path)}


# case id -> (failure, status, calls, accuracy, redundant, errors, outcome, process)
EXPECTED: dict[str, tuple[Any, ...]] = {
    "run-error": ("run_error", "error", 0, None, 0, 1, None, None),
    "turn-limit": ("turn_limit", "error", 1, None, 0, 1, None, 1.0),
    "no-tools": ("no_tools", "fail", 0, None, 0, 0, 1.0, 0.0),
    "called-forbidden": ("called_forbidden", "fail", 2, None, 0, 0, 1.0, (1 + 0 + 0.5) / 3),
    "wrong-tool": ("wrong_tool", "fail", 1, None, 0, 0, 1.0, 0.5),
    "missing-output": ("missing_output", "fail", 1, None, 0, 0, 0.0, 1.0),
    "empty-reply": ("missing_output", "fail", 1, None, 0, 0, 0.0, None),
    "wrong-args": ("wrong_args", "fail", 1, None, 0, 0, 1.0, (1 + 0 + 1) / 3),  # the failed args check is a part
    "excessive-calls": ("excessive_calls", "fail", 3, None, 2, 0, 1.0, (1 + 0 + 1 / 3) / 3),
    "good-process-bad-outcome": ("good_process_bad_outcome", "fail", 1, 1, 0, 0, 0.0, 1.0),
    # the one call was refused (the schema wants an integer): never ran, so no accuracy and the tool is the fault
    "calls-arguments-refused": ("wrong_args", "fail", 1, 0, 0, 1, 1.0, 0.0),
    "check-failed": ("check_failed", "fail", 1, None, 0, 0, 1.0, (1 + 0.25) / 2),  # its partial credit a process part
    "passes": (None, "pass", 2, 1, 0, 1, 1.0, (1 + 1 + 1 / 2) / 3),  # accuracy: the refused first call never ran
}


@pytest.mark.parametrize("case_id", list(EXPECTED))
def test_each_wrong_script_gets_exactly_its_failure_cause_and_metrics(case_id: str, runs: dict[str, RunRecord]) -> None:
    record = runs[case_id]
    got = (record.failure, record.status, record.calls, record.accuracy, record.redundant,
           record.errors, record.outcome, record.process)
    assert got == pytest.approx(EXPECTED[case_id]), record.cause or record.failed_checks


def test_every_cause_is_covered() -> None:
    # over_budget needs reported usage, so tests/test_budget.py covers it over a loopback provider; truncated and
    # malformed_call need a provider's finish reasons, so tests/test_truncation.py covers them over loopback fakes;
    # tests/test_request_record.py covers calls_as_text; tests/test_agent_cli.py agent_failed (an external agent program);
    # tests/test_faults.py fault_not_handled (a case with faults); wrong_answer the test below on runs with no call
    covered = {expected[0] for expected in EXPECTED.values()} | {"unknown", "over_budget", "truncated", "malformed_call",
                                                                "calls_as_text", "agent_failed", "fault_not_handled",
                                                                "wrong_answer"}
    assert covered == set(FAILURE_CAUSES) | {None}


def test_mock_results_reach_the_trace(runs: dict[str, RunRecord]) -> None:
    steps = runs["passes"].steps
    assert steps[0].is_error and "invalid arguments for lookup: id: '7' is not of type 'integer'" in steps[0].result
    assert steps[1].result == '{"status": "shipped"}' and not steps[1].is_error
    assert runs["wrong-args"].steps[0].result == "unknown order"



def test_a_failed_per_turn_trace_check_gets_the_cause_of_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "turns.yml"
    path.write_text(
        "- id: edit-in-turn-two\n"
        "  files: {notes.txt: old}\n"
        "  turns:\n"
        "    - Read notes.txt.\n"
        "    - content: Now change old to new in notes.txt.\n"
        "      expect: {trace: {must_include: [edit_file]}}\n"
        "  script:\n"
        "    - tool_calls: [{name: read_file, arguments: {path: notes.txt}}]\n"
        "    - content: It says old.\n"
        "    - tool_calls: [{name: bash, arguments: {command: echo new > notes.txt}}]\n"
        "    - content: Changed.\n"
    )
    (case,) = load_file(path)
    record = execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(sandbox=Sandbox()))
    assert [c.check for c in record.failed_checks] == ["turns[1].trace.must_include"]
    assert (record.status, record.failure) == ("fail", "wrong_tool")


SKIPPED_READ_IN_TURN_TWO = """\
- id: skipped-read-in-turn-two
  files: {notes.txt: old}
  turns:
    - content: List the files.
      expect: {trace: {must_include: [list_dir], minimal_calls: 1}}
    - content: Now read notes.txt with read_file.
      expect: {trace: {must_include: [read_file], avoid: [bash]}}
  expect:
    trace: {minimal_calls: 2}
  script:
    - tool_calls: [{name: list_dir, arguments: {path: .}}]
    - content: notes.txt
    - tool_calls: [{name: bash, arguments: {command: cat notes.txt}}]
    - content: It says old.
"""


def test_the_cli_reports_a_process_score_counting_a_turns_skipped_tool(tmp_path: Path) -> None:
    path = tmp_path / "turns.yml"
    path.write_text(SKIPPED_READ_IN_TURN_TWO)
    done = run_cli("run", str(path), "-p", "scripted", "--output", "json", "--results", str(tmp_path / "results"))
    assert done.returncode == 1, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    failed = [check["check"] for check in run["checks"] if not check["passed"]]
    assert failed == ["turns[1].trace.must_include", "turns[1].trace.avoid"]
    # case efficiency 2/2 = 1; turn 1: list_dir called 1, efficiency 1/1 = 1; turn 2: read_file skipped 0, bash called 0
    assert (run["status"], run["failure"]) == ("fail", "called_forbidden")
    assert run["process"] == pytest.approx((1 + 1 + 1 + 0 + 0) / 5)


# --- the bundled calc/divide-by-zero case, its script replaced -------------------------------------------

DIVIDE_SCRIPT = ("      - tool_calls: [{name: calculate, arguments: {expression: 10 / 0}}]\n"
                 "      - content: 10 divided by 0 is undefined; the calculator reports a division by zero.\n")
DIVIDE_ARGS = "        args: {calculate: {expression: {matches: '\\A\\s*10\\s*/\\s*0\\s*\\z'}}}\n"
GARBAGE = ", "  # a call a model once made: the mock has no response for it


def _divide_by_zero(tmp_path: Path, expression: str, reply: str, args: bool = True) -> dict[str, Any]:
    """The run record of the bundled calc/divide-by-zero case (without its ``args`` check unless ``args``),
    scripted to call ``calculate`` once with ``expression`` and then reply ``reply``."""
    text = (ROOT / "cases" / "calc.yml").read_text(encoding="utf-8")
    assert DIVIDE_SCRIPT in text and DIVIDE_ARGS in text
    script = (f"      - tool_calls: [{{name: calculate, arguments: {{expression: {json.dumps(expression)}}}}}]\n"
              f"      - content: {reply}\n")
    text = text.replace(DIVIDE_SCRIPT, script).replace(DIVIDE_ARGS, DIVIDE_ARGS if args else "")
    (tmp_path / "calc.yml").write_text(text, encoding="utf-8")
    done = run_cli("run", str(tmp_path / "calc.yml"), "-c", "calc/divide-by-zero", "--output", "json",
                   "--results", str(tmp_path / "results"))
    (run,) = json.loads(done.stdout)["runs"]
    return run


def test_the_bundled_divide_by_zero_case_fails_a_garbage_call_on_its_arguments(tmp_path: Path) -> None:
    run = _divide_by_zero(tmp_path, GARBAGE, "The calculator gave no answer for that.")
    assert [s["result"] for s in run["trace"]] == ["Error: no mock response for these arguments"]
    assert [c["message"] for c in run["checks"] if not c["passed"]] == [
        "response does not match /(?i)undefined|cannot|can.t|not possible|division by zero/",
        ('no calculate call has arguments matching {"expression": {"matches": "\\\\A\\\\s*10\\\\s*/\\\\s*0\\\\s*\\\\z"}}: '
         '#1 {"expression": ", "} (expression: ", " does not match /\\A\\s*10\\s*/\\s*0\\s*\\z/)')]
    # must_include, avoid, max_calls and efficiency pass; args fails
    assert (run["status"], run["failure"], run["process"]) == ("fail", "wrong_args", 0.8)


def test_a_run_whose_every_call_got_an_error_is_never_good_process_bad_outcome(tmp_path: Path) -> None:
    run = _divide_by_zero(tmp_path, GARBAGE, "The calculator gave no answer for that.", args=False)
    assert all(c["passed"] for c in run["checks"] if c["category"] == "process")
    assert (run["status"], run["failure"], run["process"]) == ("fail", "wrong_args", 1.0)


def test_an_error_a_mock_declares_for_the_arguments_is_an_answer(tmp_path: Path) -> None:
    run = _divide_by_zero(tmp_path, "10 / 0", "It is infinity.")
    assert [s["result"] for s in run["trace"]] == ["Error: division by zero"]
    assert (run["status"], run["failure"], run["process"]) == ("fail", "good_process_bad_outcome", 1.0)


NO_CALLS = """\
- id: no-tools
  tools: []
  turns: [What is 2 + 2?]
  expect: {response_contains: ["4"]}
  script: [{content: "It is five."}]
- id: json-no-calls
  turns: [Name the capital of France as JSON.]
  expect: {response_json: {paths: {city: Paris}}}
  script: [{content: '{"city": "Rome"}'}]
"""


def test_a_wrong_answer_without_any_tool_call_is_wrong_answer_not_good_process_bad_outcome(tmp_path: Path) -> None:
    (tmp_path / "answers.yml").write_text(NO_CALLS)
    done = run_cli("run", str(tmp_path / "answers.yml"), "-p", "scripted", "--output", "json",
                   "--results", str(tmp_path / "results"))
    assert done.returncode == 1, done.stderr
    got = {run["case"]: (run["status"], run["failure"], run["process"], run["outcome"], run["calls"])
           for run in json.loads(done.stdout)["runs"]}
    assert got == {"answers/no-tools": ("fail", "wrong_answer", None, 0.0, 0),
                   "answers/json-no-calls": ("fail", "wrong_answer", None, 0.5, 0)}  # JSON, the wrong city
