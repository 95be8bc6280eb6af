"""``tooltrial report``: one results folder re-rendered, two folders as the regression view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from runner.errors import UserError
from runner.output.store import ResultsWriter
from runner.scoring.regression import regression
from tests.helpers import ROOT, run_cli
from tests.records import matrix, runs

BEFORE = {("g/a", "a"): "PPP", ("g/b", "a"): "PPP", ("g/c", "a"): "FFF", ("g/gone", "a"): "PPP"}
AFTER = {("g/a", "a"): "PPP", ("g/b", "a"): "PFF", ("g/c", "a"): "PPF", ("g/new", "a"): "P"}


def _folder(root: Path, cells: dict[tuple[str, str], str]) -> Path:
    writer = ResultsWriter(root)
    for one in matrix(cells):
        writer.write_run(one)
    return writer.path



def test_regression_view_lists_flips_and_deltas(tmp_path: Path) -> None:
    before, after = _folder(tmp_path, BEFORE), _folder(tmp_path, AFTER)
    done = run_cli("report", str(before), str(after))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:2] == [f"before: {before}", f"after:  {after}"]
    tail = lines[lines.index("pass→fail: 2 runs in 1 case"):]
    assert tail == [  # every pass→fail and fail→pass counts paired runs, as the verdict does
        "pass→fail: 2 runs in 1 case",
        "  g/b [scripted · a]: 2 runs, pass rate 100% → 33%",
        "fail→pass: 2 runs in 1 case",
        "  g/c [scripted · a]: 2 runs, pass rate 0% → 67%",
        "only before (1 case, not compared): g/gone [scripted · a]",
        "only after (1 case, not compared): g/new [scripted · a]",
        ("after vs before: +0 pts pass rate over 9 paired runs (2 fail→pass, 2 pass→fail); "
         "exact McNemar p = 1: not significant at 0.05, the difference may be chance"),
        ("  pass rate: after - before = +0.00 (-0.38 to +0.38), exact McNemar p = 1; "
         "too few pairs (9) to detect any difference (power 0.8)"),
    ]
    table = "\n".join(lines[2 : lines.index("pass→fail: 2 runs in 1 case")])
    assert ["pass", "rate", "67%", "67%"] in [line.split() for line in table.splitlines()]  # no change; shared cells only: g/gone and g/new left out


def test_regression_counts_the_runs_that_flipped_each_way_in_every_case(tmp_path: Path) -> None:
    before = _folder(tmp_path, {("g/a", "x"): "PPF", ("g/b", "x"): "PP", ("g/a", "y"): "FF", ("g/b", "y"): "PP"})
    after = _folder(tmp_path, {("g/a", "x"): "FFP", ("g/b", "x"): "PF", ("g/a", "y"): "FF", ("g/b", "y"): "PP"})
    lines = run_cli("report", str(before), str(after)).stdout.splitlines()
    assert lines[lines.index("pass→fail: 3 runs in 2 cases"):] == [
        "pass→fail: 3 runs in 2 cases",
        "  g/a [scripted · x]: 2 runs, pass rate 67% → 33%",
        "  g/b [scripted · x]: 1 run, pass rate 100% → 50%",
        "fail→pass: 1 run in 1 case",
        "  g/a [scripted · x]: 1 run, pass rate 67% → 33%",  # its runs flipped both ways: under both
        ("after vs before: -22 pts pass rate over 9 paired runs (1 fail→pass, 3 pass→fail); "
         "exact McNemar p = 0.625: not significant at 0.05, the difference may be chance"),
        ("  pass rate: after - before = -0.22 (-0.55 to +0.20), exact McNemar p = 0.625; "
         "too few pairs (9) to detect any difference (power 0.8)"),
    ]
    document = json.loads(run_cli("report", str(before), str(after), "--output", "json").stdout)
    assert [(c["case"], c["pass_to_fail"], c["fail_to_pass"]) for c in document["pass_to_fail"]] == [
        ("g/a", 2, 1), ("g/b", 1, 0)]
    assert sum(c["pass_to_fail"] for c in document["pass_to_fail"]) == document["paired"]["pass_to_fail"]
    assert sum(c["fail_to_pass"] for c in document["fail_to_pass"]) == document["paired"]["fail_to_pass"]


def test_regression_json_matches_the_schema(tmp_path: Path) -> None:
    before, after = _folder(tmp_path, BEFORE), _folder(tmp_path, AFTER)
    done = run_cli("report", str(before), str(after), "--output", "json")
    document = json.loads(done.stdout)
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(document)
    assert document["kind"] == "tooltrial.regression"
    assert [c["case"] for c in document["pass_to_fail"]] == ["g/b"]
    assert document["paired"]["pairs"] == 9


def test_one_folder_is_rendered_again(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {("g/a", "x"): "PF", ("g/a", "y"): "PP"})
    done = run_cli("report", str(folder))
    lines = done.stdout.splitlines()
    assert lines[:5] == [
        "PASS g/a #1 [scripted · x]", "FAIL g/a #2 [scripted · x]", "  verify failed (exit 1): test -f out.txt",
        "PASS g/a #1 [scripted · y]", "PASS g/a #2 [scripted · y]",
    ]
    assert "3/4 passed" in lines
    assert "scripted · x" in lines and any(line.startswith("group ") for line in lines)  # the summary tables, as run printed them
    assert "g/a      2        50% (9%–91%)    1.00    0.00        -        -  flaky" in lines
    assert lines[lines.index("  g/a: 0 pass→fail, 1 fail→pass"):] == [
        "  g/a: 0 pass→fail, 1 fail→pass",
        ("scripted · y vs scripted · x: +50 pts pass rate over 2 paired runs (1 fail→pass, 0 pass→fail); "
         "exact McNemar p = 1: not significant at 0.05, the difference may be chance"),
        ("  pass rate: scripted · y - scripted · x = +0.50 (-0.27 to +0.91), exact McNemar p = 1; "
         "too few pairs (2) to detect any difference (power 0.8)"),
        "gate failed: g/a [scripted · x]: 1/2 passed, needs 100% (agent)",
    ]
    document = json.loads(run_cli("report", str(tmp_path), "--output", "json").stdout)
    assert document["kind"] == "tooltrial.report" and document["exit_code"] == 1


def test_two_providers_by_two_prompts_print_a_verdict_for_each_arm_pair_that_differs_in_one_thing(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path)
    for (provider, prompt), pattern in {("scripted", "default"): "PP", ("scripted", "terse"): "PF",
                                        ("replay", "default"): "FF", ("replay", "terse"): "PP"}.items():
        for one in runs("g/a", pattern, prompt, provider=provider):
            writer.write_run(one)
    printed = run_cli("report", str(writer.path)).stdout.splitlines()
    assert ("  pass rate: scripted · terse - scripted · default = -0.50 (-0.91 to +0.27), exact McNemar p = 1; "
            "too few pairs (2) to detect any difference (power 0.8)") in printed
    lines = [line for line in printed if not line.startswith(("  pass rate: ", "  outcome mean: ", "  process mean: "))]
    chance = "exact McNemar p = {}: not significant at 0.05, the difference may be chance"
    assert lines[lines.index("  g/a: 1 pass→fail, 0 fail→pass") - 1:lines.index("gate failed: g/a [scripted · terse]: 1/2 passed, needs 100% (agent)")] == [
        "",
        "  g/a: 1 pass→fail, 0 fail→pass",
        "prompt terse vs default, provider scripted: -50 pts pass rate over 2 paired runs (0 fail→pass, 1 pass→fail); " + chance.format(1),
        "",
        "  g/a: 0 pass→fail, 2 fail→pass",
        "prompt terse vs default, provider replay: +100 pts pass rate over 2 paired runs (2 fail→pass, 0 pass→fail); " + chance.format(0.5),
        "",
        "  g/a: 2 pass→fail, 0 fail→pass",
        "provider replay vs scripted, prompt default: -100 pts pass rate over 2 paired runs (0 fail→pass, 2 pass→fail); " + chance.format(0.5),
        "",
        "  g/a: 0 pass→fail, 1 fail→pass",
        "provider replay vs scripted, prompt terse: +50 pts pass rate over 2 paired runs (1 fail→pass, 0 pass→fail); " + chance.format(1),
    ]
    document = json.loads(run_cli("report", str(writer.path), "--output", "json").stdout)
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(document)
    assert document["paired"] is None
    assert [c["verdict"] for c in document["comparisons"]] == [line for line in lines if " vs " in line]
    assert document["comparisons"][2]["factor"] == {"name": "provider", "a": "scripted", "b": "replay", "fixed": {"prompt": "default"}}


def test_quiet_shows_only_the_runs_that_did_not_pass_then_the_same_summary(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "made", {("g/a", "x"): "PF", ("g/a", "y"): "PP"})
    whole, quiet = run_cli("report", str(folder)).stdout.splitlines(), run_cli("report", str(folder), "-q").stdout.splitlines()
    assert quiet[:3] == ["FAIL g/a #2 [scripted · x]", "  verify failed (exit 1): test -f out.txt", "3/4 passed"]
    assert quiet[2:] == whole[5:]  # the tables as without -q

    (tmp_path / "s.yml").write_text("- {id: ok, turns: [Hi.], script: [{content: hi}]}\n"
                                    "- {id: bad, turns: [Hi.], expect: {response_contains: [bye]}, script: [{content: hi}]}\n")
    for k in (1, 2):
        assert run_cli("run", str(tmp_path / "s.yml"), "--shard", f"{k}/2", "--results", str(tmp_path / f"part{k}")).returncode in (0, 1, 5)
    merged = run_cli("merge", str(tmp_path / "part1"), str(tmp_path / "part2"), "-o", str(tmp_path / "merged"), "-q")
    assert merged.returncode == 1, merged.stderr
    assert merged.stdout.splitlines()[:3] == ["FAIL s/bad", '  response missing "bye"', "1/2 passed"]


def test_arms_match_by_label_or_as_the_only_ones() -> None:
    renamed = regression(runs("g/a", "PP", prompt="old"), runs("g/a", "PF", prompt="new"))
    assert [(c.case, c.before, c.after) for c in renamed.pass_to_fail] == [("g/a", 1.0, 0.5)]
    with pytest.raises(UserError, match="share no arm"):
        regression(matrix({("g/a", "x"): "P", ("g/a", "y"): "P"}), matrix({("g/a", "z"): "P", ("g/a", "w"): "P"}))


def test_three_folders_is_a_usage_error(tmp_path: Path) -> None:
    done = run_cli("report", str(tmp_path), str(tmp_path), str(tmp_path))
    assert done.returncode == 4 and "give one to show it, or two to compare them" in done.stderr
