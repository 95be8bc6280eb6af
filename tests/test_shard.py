"""``run --shard K/N``, ``list --shard`` and ``tooltrial merge``: every run in exactly one shard, by case id and
run number, the same on every machine; the shards merged into one folder equal to the unsharded run's; the
mistakes of giving shards (a missing one, another suite's, two folders holding a run differently) said."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from runner.errors import ExitCode
from runner.output.store import ascii_json
from runner.providers.registry import resolve_provider
from runner.run.options import Arm
from runner.run.prompts import PromptTemplate, load_prompt
from runner.suite.engine import plan_keys
from runner.suite.shard import Shard, shard_of
from tests.helpers import GOOD, SAMPLE_GROUPS, bundled_suite, make_case, run_cli

# write-hello's one run and count-lines' are in shard 2 of 2; say-hi's runs 1 / 2, 3 in shards 1 / 2.
DEMO = GOOD + """\
- id: say-hi
  runs: 3
  turns: [Say hi]
  expect: {response_contains: [hi]}
  script: [{content: hi}]
"""


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "demo.yml").write_text(DEMO)
    return folder


def _run(cases: Path, results: Path, *more: str) -> Path:
    done = run_cli("run", str(cases), "-p", "scripted", "--sandbox", "none", "--results", str(results), *more)
    assert done.returncode == ExitCode.OK, done.stderr
    return next(results.iterdir())


def _report(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "report.json").read_text())


def _runs(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "runs").iterdir())


def test_the_shard_of_a_run_is_pinned_so_every_machine_and_version_agrees() -> None:
    # SHA-256 of "<case>\n<run>", first 8 bytes big-endian, mod N, plus 1
    assert [shard_of("fix/fix-failing-test", run, 4) for run in (1, 2, 3)] == [2, 2, 3]
    assert [shard_of("demo/say-hi", run, 2) for run in (1, 2, 3)] == [1, 2, 2]
    assert shard_of("a/b", 1, 1000) == 835


_IDS = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True), min_size=1, max_size=8, unique=True)


@settings(max_examples=60, deadline=None)
@given(ids=_IDS, runs=st.lists(st.integers(1, 4), min_size=8, max_size=8), count=st.integers(1, 6),
       added=st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True))
def test_shards_partition_the_plan_and_a_new_case_moves_no_other_run(ids: list[str], runs: list[int], count: int,
                                                                      added: str) -> None:
    cases = [make_case(id=name, runs=n) for name, n in zip(ids, runs)]
    arms = [Arm(resolve_provider("scripted"), load_prompt(None)), Arm(resolve_provider("scripted"), PromptTemplate("b", "b.j2", ""))]
    whole = plan_keys(cases, arms)
    parts = [plan_keys(cases, arms, 1, Shard(k, count)) for k in range(1, count + 1)]
    assert sorted(key for part in parts for key in part) == sorted(whole)  # each run in exactly one shard
    assert all(part == [key for key in whole if key in set(part)] for part in parts)  # in plan order
    for part in parts:  # every arm of a (case, run) in the same shard: comparisons stay paired
        assert {(case, run) for case, _, p, run, _ in part if p == "b"} == {(case, run) for case, _, p, run, _ in part if p != "b"}
    assume(added not in ids)
    grown = [make_case(id=added, runs=2), *cases]
    for k, part in enumerate(parts, start=1):
        assert [key for key in plan_keys(grown, arms, 1, Shard(k, count)) if key[0] != f"t/{added}"] == part


@pytest.mark.parametrize(("value", "env", "message"), [
    ("0/3", None, "0/3: K must be from 1 to 3 (shards are counted from 1)"),
    ("4/3", None, "4/3: K must be from 1 to 3 (shards are counted from 1)"),
    ("1/0", None, "1/0: N, the number of shards, must be at least 1"),
    ("1-3", None, "expected K/N (shard K of N, e.g. 1/4) or auto/N, got '1-3'"),
    ("auto/3", None, ("auto/3 takes K from $JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job), which is not set: "
                      "give K/3 instead")),
    ("auto/3", "3", "auto/3: $JOB_COMPLETION_INDEX is '3', expected a whole number from 0 to 2"),
    ("auto/3", "x", "auto/3: $JOB_COMPLETION_INDEX is 'x', expected a whole number from 0 to 2"),
])
@pytest.mark.parametrize("command", ["run", "list"])
def test_a_bad_shard_is_a_usage_error_that_says_what_k_and_n_may_be(demo: Path, command: str, value: str,
                                                                    env: str | None, message: str) -> None:
    done = run_cli(command, str(demo), "--shard", value, env={"JOB_COMPLETION_INDEX": env})
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == f"error: argument --shard: {message} (see 'tooltrial {command} --help')\n"


def test_list_shows_what_a_shard_holds_and_auto_takes_k_from_the_job_index(demo: Path) -> None:
    one = run_cli("list", str(demo), "--shard", "1/2")
    assert (one.returncode, one.stdout.splitlines()) == (ExitCode.OK, ["demo/say-hi  (run 1 of 3)"])
    assert one.stderr == "shard 1/2 holds 1 of 5 runs (1 of 3 cases)\n"
    two = run_cli("list", str(demo), "--shard", "auto/2", env={"JOB_COMPLETION_INDEX": "1"})
    assert two.stdout.splitlines() == ["demo/write-hello  Write a greeting file.", "demo/count-lines  Count lines.",
                                       "demo/say-hi       (runs 2, 3 of 3)"]
    assert two.stderr == "shard 2/2 holds 4 of 5 runs (3 of 3 cases)\n"


@pytest.mark.parametrize("listing", [("list",), ("run", "-l")])
def test_list_counts_a_shards_runs_in_every_arm_fault_arms_and_their_clean_twin_included(
        demo: Path, tmp_path: Path, listing: tuple[str, ...]) -> None:
    profile = tmp_path / "flaky.yml"
    profile.write_text("faults:\n  - {tool: bash, kind: error}\n")  # a tool no script calls: every run passes
    arms = ("-P", "default", "-P", "terse", "--faults", str(profile))  # 2 prompts x (faults off, flaky): 4 arms
    listed = run_cli(*listing, str(demo), "--shard", "2/2", *arms)
    assert listed.stderr == "shard 2/2 holds 16 of 20 runs of 4 arms (3 of 3 cases)\n"
    assert listed.stdout.splitlines()[-1] == "demo/say-hi       (runs 2, 3 of 3)"
    folder = _run(demo, tmp_path / "r", "--shard", "2/2", *arms)
    assert len(_runs(folder)) == 16
    assert {k: _report(folder)["shard"][k] for k in ("planned", "selected")} == {"planned": 20, "selected": 16}


def test_a_shard_runs_its_runs_only_and_its_report_records_the_shard(demo: Path, tmp_path: Path) -> None:
    folder = _run(demo, tmp_path / "r", "--shard", "2/2")
    assert _runs(folder) == ["0001-demo-write-hello-scripted-default-r1.json", "0002-demo-count-lines-scripted-default-r1.json",
                             "0003-demo-say-hi-scripted-default-r2.json", "0004-demo-say-hi-scripted-default-r3.json"]
    shard = _report(folder)["shard"]
    assert {**shard, "plan": "-"} == {"index": 2, "count": 2, "plan": "-", "planned": 5, "selected": 4,
                                      "cases": ["demo/write-hello", "demo/count-lines", "demo/say-hi"],
                                      "arms": ["scripted · default"]}
    assert re.fullmatch("[0-9a-f]{64}", shard["plan"])
    assert run_cli("report", str(folder), "--output", "json").stdout.count('"selected": 4') == 1  # report keeps it


def test_a_shard_that_holds_no_run_says_so_and_selects_nothing(demo: Path, tmp_path: Path) -> None:
    done = run_cli("run", str(demo), "-p", "scripted", "--results", str(tmp_path / "r"), "--shard", "3/3")
    assert done.returncode == ExitCode.NO_CASES
    assert done.stderr == ("no case selected: shard 3/3 holds none of the 5 runs (give fewer shards than runs, "
                           "or 'tooltrial list --shard K/N' to see what each holds)\n")
    assert not (tmp_path / "r").exists()


_VOLATILE = {"run_id", "results", "started", "finished", "merged", "duration", "duration_total", "duration_mean"}


def _steady(value: Any) -> Any:
    """``value`` without what differs between two runs of the same suite: times, ids, the folders, and in
    commands' output the workspace's temporary path, test runners' timings and git's commit hashes and dates."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if isinstance(value, str):
        value = re.sub(r"/tmp/tooltrial-[^/\s]+", "WORKSPACE", re.sub(r"Date: .*", "Date: D", value))
        return re.sub(r"\b[0-9a-f]{7,40}\b", "HASH", re.sub(r"\b\d+\.\d+s\b", "Ns", value))
    return value


@pytest.mark.slow
def test_four_bundled_groups_sharded_in_two_and_merged_equal_them_unsharded(tmp_path: Path) -> None:
    cases = bundled_suite(tmp_path, SAMPLE_GROUPS)
    whole = _run(cases, tmp_path / "whole", "-j", "4")
    parts = [_run(cases, tmp_path / f"s{k}", "-j", "4", "--shard", f"{k}/2") for k in (2, 1)]
    done = run_cli("merge", str(parts[0]), str(parts[1]), "-o", str(tmp_path / "merged"))
    merged = next((tmp_path / "merged").iterdir())
    assert done.returncode == ExitCode.OK
    assert done.stderr.endswith(f"merged {len(_runs(whole))} runs from 2 folders: {merged}\n")
    assert all(0 < _report(p)["shard"]["selected"] < len(_runs(whole)) for p in parts)
    assert _runs(merged) == _runs(whole)
    for name in _runs(whole):
        assert _steady(json.loads((merged / "runs" / name).read_text())) == _steady(json.loads((whole / "runs" / name).read_text()))
    assert _steady(_report(merged)) == _steady(_report(whole))
    assert _report(merged)["merged"] == {"folders": [str(parts[0]), str(parts[1])], "shards": 2}


def test_merge_says_which_shard_is_missing(demo: Path, tmp_path: Path) -> None:
    one, three = (_run(demo, tmp_path / f"s{k}", "--runs", "3", "--shard", f"{k}/3") for k in (1, 3))
    done = run_cli("merge", str(one), str(three), "-o", str(tmp_path / "m"))
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == (f"error: shard 2/3 is missing: given 1/3 ({one}), 3/3 ({three}) (add the results folder of "
                           "each missing shard ('tooltrial run ... --shard K/N'))\n")
    assert not (tmp_path / "m").exists()


def test_merge_refuses_shards_of_different_suites_and_counts_and_whole_folders_among_shards(demo: Path, tmp_path: Path) -> None:
    one = _run(demo, tmp_path / "a", "--shard", "1/2")
    other = tmp_path / "other"
    other.mkdir()
    (other / "other.yml").write_text(DEMO.replace("id: count-lines", "id: count-words"))
    two = _run(other, tmp_path / "b", "--shard", "2/2")
    done = run_cli("merge", str(one), str(two), "-o", str(tmp_path / "m"))
    assert done.stderr == (f"error: {one} (shard 1/2) and {two} (shard 2/2) are shards of different suites: cases only in "
                           f"{one}: demo/count-lines, demo/say-hi, demo/write-hello; cases only in {two}: other/count-words, "
                           "other/say-hi, other/write-hello (merge the shards of one command (the same cases, -p, -P and "
                           "--runs), each with its --shard K/N)\n")
    more = _run(demo, tmp_path / "c", "--shard", "2/2", "--runs", "2")
    assert run_cli("merge", str(one), str(more), "-o", str(tmp_path / "m")).stderr == (
        f"error: {one} (shard 1/2) and {more} (shard 2/2) are shards of different suites: the same cases and arms, with "
        "a different number of runs of some case (--runs, a case's runs) (merge the shards of one command (the same "
        "cases, -p, -P and --runs), each with its --shard K/N)\n")
    third = _run(demo, tmp_path / "d", "--shard", "1/3")
    assert run_cli("merge", str(one), str(third), "-o", str(tmp_path / "m")).stderr == (
        f"error: {one} (shard 1/2) and {third} (shard 1/3) split the suite into different numbers of shards "
        "(merge shards that were run with the same N in --shard K/N)\n")
    whole = _run(demo, tmp_path / "e")
    assert run_cli("merge", str(one), str(whole), "-o", str(tmp_path / "m")).stderr == (
        f"error: {whole} was not run with --shard, but {one} was (merge the shards of one suite, or whole results "
        "folders, not both)\n")
    assert not (tmp_path / "m").exists()


def test_a_run_two_folders_hold_differently_is_refused_unless_prefer_says_which(demo: Path, tmp_path: Path) -> None:
    first, second = _run(demo, tmp_path / "a", "-c", "demo/say-hi"), _run(demo, tmp_path / "b")
    done = run_cli("merge", str(first), str(second), "-o", str(tmp_path / "m"))
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == (f"error: two folders hold run demo/say-hi (scripted · default, run 1) in {first} and {second} "
                           "with different records (and 2 more) (give each run's folder once, or say which wins: "
                           "--prefer first (the folder given first) or --prefer last)\n")
    done = run_cli("merge", str(first), str(second), "-o", str(tmp_path / "m"), "--prefer", "first", "--output", "json")
    merged = json.loads(done.stdout)
    assert (done.returncode, [(r["case"], r["run"]) for r in merged["runs"]]) == (
        ExitCode.OK, [("demo/say-hi", 1), ("demo/say-hi", 2), ("demo/say-hi", 3), ("demo/write-hello", 1), ("demo/count-lines", 1)])
    assert merged["merged"] == {"folders": [str(first), str(second)], "shards": None}
    ours = json.loads((first / "runs" / "0001-demo-say-hi-scripted-default-r1.json").read_text())
    kept = json.loads((Path(merged["results"]) / "runs" / "0001-demo-say-hi-scripted-default-r1.json").read_text())
    assert ({**kept, "run_id": ""}, kept["run_id"]) == ({**ours, "run_id": ""}, merged["run_id"])
    assert done.stderr.endswith(f"merged 5 runs from 2 folders, 3 runs given twice kept once: {merged['results']}\n")
    again = run_cli("merge", str(first), str(first), "-o", str(tmp_path / "n"))  # the same records twice: kept once
    assert again.returncode == ExitCode.OK and "merged 3 runs from 2 folders, 3 runs given twice kept once" in again.stderr


def test_a_shard_folder_that_never_finished_is_refused_with_what_to_do(demo: Path, tmp_path: Path) -> None:
    one, two = (_run(demo, tmp_path / f"s{k}", "--shard", f"{k}/2") for k in (1, 2))
    (two / "report.json").unlink()
    done = run_cli("merge", str(one), str(two), "-o", str(tmp_path / "m"))
    assert done.stderr == (f"error: {two} has no report.json: its run did not finish (finish it first: the same "
                           f"'tooltrial run' command with --resume {two})\n")


def test_the_report_is_encoded_once_for_report_json_report_and_stdout(demo: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []

    def counting(dumps: Any) -> Any:
        def counted(value: Any, *args: Any, **how: Any) -> Any:  # the report whole, or its pieces (its "kind" is one)
            if value == "tooltrial.report" or isinstance(value, dict) and value.get("kind") == "tooltrial.report":
                encoded.append("tooltrial.report")
            return dumps(value, *args, **how)
        return counted

    monkeypatch.setattr(json, "dumps", counting(json.dumps))
    monkeypatch.setattr(orjson, "dumps", counting(orjson.dumps))
    done = run_cli("run", str(demo), "-p", "scripted", "--sandbox", "none", "--results", str(tmp_path / "r"),
                   "--report", str(tmp_path / "copy.json"), "--output", "json")
    monkeypatch.undo()
    folder = next((tmp_path / "r").iterdir())
    assert (done.returncode, encoded) == (ExitCode.OK, ["tooltrial.report"])
    assert (tmp_path / "copy.json").read_bytes() == (folder / "report.json").read_bytes()
    assert done.stdout == ascii_json((folder / "report.json").read_text(encoding="utf-8"))  # ASCII, as before
    assert done.stdout.isascii() and json.loads(done.stdout) == _report(folder)


def test_report_of_two_shards_of_one_suite_points_to_merge(tmp_path: Path) -> None:
    cases = bundled_suite(tmp_path, SAMPLE_GROUPS)  # one run a case: the two shards share no case
    first, second = _run(cases, tmp_path / "a", "--shard", "1/2"), _run(cases, tmp_path / "b", "--shard", "2/2")
    done = run_cli("report", str(first), str(second))
    assert done.returncode == 4
    assert done.stderr == (f"error: the two results share no case to compare (these are shards 1/2 and 2/2 of one "
                           f"suite: join them with tooltrial merge {first} {second} -o DIR)\n")
