"""Trajectory match: the scores by hand on small trajectories, their laws under hypothesis, and the run
record, report and table the CLI writes for a case with a reference list of calls."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from runner.scoring.trajectorymatch import TrajectoryMatch, trajectory_match
from tests.helpers import run_cli

NAMES = st.lists(st.sampled_from(["a", "b", "c"]), max_size=6)


def test_names_only_scores_by_hand() -> None:
    assert trajectory_match(["a", "b"], ["a", "b"]) == TrajectoryMatch(True, True, True, 1.0, 1.0, None, None)
    assert trajectory_match(["a", "b"], ["a", "c", "b"]) == TrajectoryMatch(False, True, True, 2 / 3, 1.0, None, None)
    assert trajectory_match(["a", "b"], ["b", "a"]) == TrajectoryMatch(False, False, True, 1.0, 1.0, None, None)
    # a repeated reference call needs a call of its own: one "a" pairs once
    assert trajectory_match(["a", "a", "b"], ["a", "b"]) == TrajectoryMatch(False, False, False, 1.0, 2 / 3, None, None)
    assert trajectory_match(["a"], []) == TrajectoryMatch(False, False, False, 0.0, 0.0, None, None)
    assert trajectory_match([], []) == TrajectoryMatch(True, True, True, 1.0, 1.0, None, None)
    assert trajectory_match([], ["a"]) == TrajectoryMatch(False, True, True, 0.0, 1.0, None, None)


def test_call_level_scores_pair_by_arguments_one_to_one() -> None:
    # reference: q(3,4,2), q(5,-7,3); calls: q(3,4,2) twice. Names all pair; by arguments only one does.
    reference, names = ["q", "q"], ["q", "q"]
    wanted = [(3, 4, 2), (5, -7, 3)]
    sent = [(3, 4, 2), (3, 4, 2)]
    got = trajectory_match(reference, names, lambda i, j: wanted[i] == sent[j])
    assert got == TrajectoryMatch(False, False, False, 1.0, 1.0, 0.5, 0.5)
    # the second reference call first in the trace: any order holds, in order and exact do not
    sent = [(5, -7, 3), (3, 4, 2)]
    got = trajectory_match(reference, names, lambda i, j: wanted[i] == sent[j])
    assert got == TrajectoryMatch(False, False, True, 1.0, 1.0, 1.0, 1.0)


def test_the_matching_is_maximum_not_greedy() -> None:
    # reference 0 fits calls 0 and 1, reference 1 only call 0: greedy pairing 0-0 would leave 1 alone
    fits = {(0, 0), (0, 1), (1, 0)}
    got = trajectory_match(["t", "t"], ["t", "t"], lambda i, j: (i, j) in fits)
    assert (got.any_order, got.call_recall, got.call_precision) == (True, 1.0, 1.0)
    assert not got.in_order  # reference 1 only fits call 0, which comes before reference 0's other call


@given(NAMES, NAMES)
def test_laws_of_the_name_level_scores(reference: list[str], names: list[str]) -> None:
    got = trajectory_match(reference, names)
    assert 0.0 <= got.name_precision <= 1.0 and 0.0 <= got.name_recall <= 1.0
    assert got.exact == (reference == names)
    assert not got.exact or got.in_order
    assert not got.in_order or got.any_order
    assert got.any_order == (got.name_recall == 1.0)
    assert got.call_precision is None and got.call_recall is None


CASES = """\
- id: ordered
  turns: ["List, then read a.txt"]
  files: {a.txt: "x"}
  expect:
    trace: {expected: [list_dir, read_file]}
  script:
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - tool_calls: [{name: list_dir, arguments: {}}, {name: read_file, arguments: {path: a.txt}}]
    - content: done
- id: plain
  turns: [list]
  script:
    - tool_calls: [{name: list_dir, arguments: {}}]
    - content: done
"""


def test_run_records_the_match_and_the_report_and_table_hold_its_means(tmp_path: Path) -> None:
    cases = tmp_path / "traj.yml"
    cases.write_text(CASES)
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    folder = next((tmp_path / "results").iterdir())
    runs = {json.loads(p.read_text())["case"]: json.loads(p.read_text()) for p in (folder / "runs").glob("*.json")}
    assert runs["traj/ordered"]["trajectory_match"] == {
        "exact": False, "in_order": True, "any_order": True, "name_precision": 2 / 3, "name_recall": 1.0,
        "call_precision": None, "call_recall": None}
    assert runs["traj/plain"]["trajectory_match"] is None
    report = json.loads((folder / "report.json").read_text())
    means = {"runs": 1, "exact": 0.0, "in_order": 1.0, "any_order": 1.0, "name_precision": 2 / 3, "name_recall": 1.0,
             "call_precision": None, "call_recall": None}
    assert report["overall"]["trajectory_mean"] == means
    assert report["arms"][0]["groups"]["traj"]["trajectory_mean"] == means
    cells = {c["case"]: c["trajectory_mean"] for c in report["cells"]}
    assert cells == {"traj/ordered": means, "traj/plain": None}
    table = done.stdout.split("trajectory match\n", 1)[1]
    assert table.splitlines()[0].split() == ["group", "runs", "exact", "in", "order", "any", "order", "name", "prec",
                                             "name", "rec", "call", "prec", "call", "rec"]
    assert table.splitlines()[2].split() == ["traj", "1", "0.00", "1.00", "1.00", "0.67", "1.00", "-", "-"]
    shown = run_cli("report", str(folder))  # read back from disk: the same table
    assert shown.stdout.split("trajectory match\n", 1)[1].splitlines()[2] == table.splitlines()[2]


def test_no_reference_no_table(tmp_path: Path) -> None:
    cases = tmp_path / "plain.yml"
    cases.write_text("- id: x\n  turns: [hi]\n  script: [{content: done}]\n")
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    assert "trajectory match" not in done.stdout
    report = json.loads(next((tmp_path / "results").glob("*/report.json")).read_text())
    assert report["overall"]["trajectory_mean"] is None


CALLS = """\
- id: calls
  turns: [roots of two equations]
  tools: [roots]
  mocks:
    - name: roots
      parameters: {type: object, properties: {a: {type: integer}}, required: [a]}
      responses: [{result: ok}]
  expect:
    trace:
      calls:
        - {name: roots, args: {a: 1}}
        - {name: roots, args: {a: 2}}
  script:
    - tool_calls:
        - {name: roots, arguments: {a: 2}}
        - {name: roots, arguments: {}}
        - {name: nosuch, arguments: {}}
        - {name: roots, arguments: {a: 1}}
        - {name: roots, arguments: {a: 1}}
    - content: done
"""


def test_call_level_scores_count_only_calls_that_ran(tmp_path: Path) -> None:
    # ran: roots a=2, a=1, a=1; the call without a (schema) and the unknown tool were refused, not counted
    cases = tmp_path / "calls.yml"
    cases.write_text(CALLS)
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(next((tmp_path / "results").glob("*/runs/*.json")).read_text())
    assert [s["status"] for s in record["steps"]] == ["executed", "refused", "refused", "executed", "executed"]
    assert record["trajectory_match"] == {
        "exact": False, "in_order": False, "any_order": True, "name_precision": 2 / 3, "name_recall": 1.0,
        "call_precision": 2 / 3, "call_recall": 1.0}
    assert done.stdout.split("trajectory match\n", 1)[1].splitlines()[2].split() == [
        "calls", "1", "0.00", "0.00", "1.00", "0.67", "1.00", "0.67", "1.00"]
