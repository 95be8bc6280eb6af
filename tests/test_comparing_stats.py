"""The interval of a paired difference, the power of a comparison and ``tooltrial plan``: exact values by
hand and from a published example, the planned runs checked by simulation, the CLI on results folders."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

from jsonschema import Draft202012Validator

from runner.output.store import ResultsWriter
from runner.scoring.difference import mean_difference, newcombe_paired
from runner.scoring.paired import compare_pairs
from runner.scoring.power import connor_pairs, detectable_difference, exact_power, pairs_needed
from runner.scoring.stats import mcnemar_exact, wilson
from tests.helpers import GOOD, ROOT, run_cli
from tests.records import runs


def test_newcombe_gives_the_published_interval_of_the_paired_example() -> None:
    # Fagerland, Lydersen and Laake 2017, section 8.5 (Cavo et al. 2012): 59 both, 6 first only, 16 second only,
    # 80 neither; their first-minus-second -0.0621 (-0.1186 to -0.0046) is our B - A with A the first
    found = newcombe_paired(59, 6, 16, 80)
    assert (round(found.estimate, 4), round(found.low, 4), round(found.high, 4)) == (0.0621, 0.0046, 0.1186)
    assert (found.pairs, found.method) == (161, "newcombe")


def test_newcombe_by_hand_on_a_two_pair_table() -> None:
    # one pair passed in both arms, one in B alone: B 2/2, A 1/2; a margin is 0, so the correlation is 0
    found = newcombe_paired(1, 0, 1, 0)
    l1, _ = wilson(2, 2)
    l2, u2 = wilson(1, 2)
    assert found.estimate == 0.5
    assert found.low == 0.5 - math.sqrt((1 - l1) ** 2 + (u2 - 0.5) ** 2)
    assert found.high == 0.5 + (0.5 - l2)  # u1 = 1 = p1
    assert (round(found.low, 4), round(found.high, 4)) == (-0.2726, 0.9055)
    assert found.text("x", "y") == "y - x = +0.50 (-0.27 to +0.91)"


def test_the_mean_difference_is_seeded_and_near_the_normal_interval() -> None:
    differences = [0.0, 1.0] * 100  # mean 0.5, standard error 0.5 / sqrt(200) = 0.0354
    found = mean_difference(differences)
    assert found == mean_difference(differences)
    assert found is not None and found.estimate == 0.5 and found.pairs == 200 and found.method == "bootstrap"
    assert abs(found.low - (0.5 - 1.96 * 0.5 / math.sqrt(200))) < 0.01
    assert abs(found.high - (0.5 + 1.96 * 0.5 / math.sqrt(200))) < 0.01
    same = mean_difference([0.25] * 7)
    assert same is not None and (same.low, same.estimate, same.high) == (0.25, 0.25, 0.25)
    assert mean_difference([]) is None
    many = mean_difference([0.0, 1.0] * 300)  # 600 pairs: 0.5 +- 1.95996 * 0.50042 / sqrt(600), at once
    assert many is not None and many.method == "normal"
    assert (round(many.low, 4), round(many.high, 4)) == (0.46, 0.54)


def test_runs_needed_and_the_smallest_detectable_difference_by_hand() -> None:
    # Connor 1987: (1.95996 sqrt(0.4) + 0.84162 sqrt(0.4 - 0.01))^2 / 0.01 = 1.76525^2 / 0.01 = 311.6
    assert connor_pairs(0.1, 0.4) == 312
    assert abs(detectable_difference(312, 0.4) - 0.1) < 0.0005  # type: ignore[operator]
    assert detectable_difference(312, 0.0) is None  # no pair disagreed: nothing to go on
    assert detectable_difference(5, 0.4) is None  # too few pairs for any difference up to 0.4
    # the exact test is more cautious: at Connor's 312 pairs it falls short, and 329 are needed
    assert exact_power(312, 0.1, 0.4) < 0.8 <= exact_power(329, 0.1, 0.4)
    assert pairs_needed(0.1, 0.4) == 329


def test_the_exact_power_is_the_sum_over_every_table() -> None:
    # 20 pairs: each (fail->pass a, pass->fail b, agreeing c) table's multinomial chance, where the test rejects
    n, up, down = 20, 0.3, 0.0
    found = sum(math.factorial(n) / (math.factorial(a) * math.factorial(b) * math.factorial(n - a - b))
                * up ** a * down ** b * (1 - up - down) ** (n - a - b)
                for a in range(n + 1) for b in range(n + 1 - a) if mcnemar_exact(b, a) < 0.05)
    assert abs(exact_power(20, 0.3, 0.3) - found) < 1e-12
    n, up, down = 30, 0.3, 0.1
    found = sum(math.factorial(n) / (math.factorial(a) * math.factorial(b) * math.factorial(n - a - b))
                * up ** a * down ** b * (1 - up - down) ** (n - a - b)
                for a in range(n + 1) for b in range(n + 1 - a) if mcnemar_exact(b, a) < 0.05)
    assert abs(exact_power(30, 0.2, 0.4) - found) < 1e-12


def test_the_planned_runs_reach_the_power_in_2000_simulated_suites() -> None:
    rng = random.Random(2026)
    for discordance, difference in ((0.3, 0.15), (0.5, 0.2)):
        n = pairs_needed(difference, discordance)
        up, down = (discordance + difference) / 2, (discordance - difference) / 2
        found = 0
        for _ in range(2000):
            draws = [rng.random() for _ in range(n)]
            found += mcnemar_exact(sum(up <= d < up + down for d in draws), sum(d < up for d in draws)) < 0.05
        # 2,000 suites: a standard error of 0.009 about the true power
        assert abs(found / 2000 - 0.8) < 0.03, (discordance, difference, n, found)


def _pilot(tmp_path: Path) -> Path:
    writer = ResultsWriter(tmp_path / "results")
    for prompt, pattern in {"default": "PPPPPPPPPF", "terse": "PPPPPFFFPP"}.items():
        for case in ("g/a", "g/b"):
            for one in runs(case, pattern, prompt):
                writer.write_run(one)
    return writer.path


def test_report_records_and_prints_the_interval_and_the_detectable_difference(tmp_path: Path) -> None:
    folder = _pilot(tmp_path)  # per case: runs 6-8 pass->fail, run 10 fail->pass, the rest pass in both
    document = json.loads(run_cli("report", str(folder), "--output", "json").stdout)
    Draft202012Validator(json.loads((ROOT / "schemas" / "report.schema.json").read_text())).validate(document)
    (paired,) = document["comparisons"]
    assert (paired["pairs"], paired["pass_to_fail"], paired["fail_to_pass"]) == (20, 6, 2)
    expected = newcombe_paired(12, 6, 2, 0)
    assert paired["difference"] == {"estimate": -0.2, "low": round(expected.low, 6), "high": round(expected.high, 6),
                                    "pairs": 20, "method": "newcombe"}
    # Connor: 20 pairs at 40% discordance detect 0.373: (1.96 sqrt(0.4) + 0.8416 sqrt(0.4 - 0.373^2))^2 / 0.373^2 = 20
    assert paired["discordance"] == 0.4 and paired["detectable"] == 0.373265
    line = (f"pass rate: scripted · terse - scripted · default = -0.20 ({expected.low:+.2f} to {expected.high:+.2f}), "
            "exact McNemar p = 0.289; these 20 pairs detect a difference of ±0.37 or more (power 0.8)")
    assert paired["estimates"][0] == line
    assert f"  {line}" in run_cli("report", str(folder)).stdout.splitlines()


def test_plan_prints_the_runs_and_cases_a_difference_needs(tmp_path: Path) -> None:
    done = run_cli("plan", str(_pilot(tmp_path)), "--difference", "0.1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:5] == [
        "plan: a difference of 0.1 in pass rate, two-sided alpha 0.05, power 0.8, 10 runs a case (the pilot: 10 runs a case)",
        "",
        "scripted · terse vs scripted · default: 20 pairs in the pilot, 40% of them disagreed; assumed 40% (the pilot's)",
        "  needs 329 paired runs: 33 cases at 10 runs a case (Connor's approximation: 312)",  # as by hand above
        "",
    ]
    assert "assumptions:" in done.stdout and "exact McNemar test" in done.stdout
    fewer = run_cli("plan", str(tmp_path / "results"), "--difference", "0.1", "--runs", "4", "--discordance", "0.2")
    assert fewer.stdout.splitlines()[2:4] == [
        "scripted · terse vs scripted · default: 20 pairs in the pilot, 40% of them disagreed; assumed 20% (--discordance)",
        "  needs 168 paired runs: 42 cases at 4 runs a case (Connor's approximation: 155)"]
    below = run_cli("plan", str(tmp_path / "results"), "--difference", "0.1", "--discordance", "0.05")
    assert (below.returncode, below.stdout) == (4, "")
    assert below.stderr == ("error: --discordance 0.05 is below --difference 0.1: a difference of 0.1 needs at least "
                            "10% of pairs to disagree (give --discordance 0.1 or more, or leave it out to take the "
                            "pilot's)\n")


def test_plan_from_a_scripted_run_with_two_prompts(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "good.yml").write_text(GOOD)
    for name in ("terse", "chatty"):
        (tmp_path / f"{name}.j2").write_text(f"You are {name}.")
    done = run_cli("run", str(tmp_path / "cases"), "-P", str(tmp_path / "terse.j2"), "-P", str(tmp_path / "chatty.j2"),
                   "--runs", "3", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    paired = json.loads((folder / "report.json").read_text())["comparisons"][0]
    assert paired["pairs"] == 6 and paired["discordance"] == 0 and paired["detectable"] is None
    assert set(paired["means"]) == {"outcome", "process"}
    assert paired["means"]["outcome"] == {"estimate": 0.0, "low": 0.0, "high": 0.0, "pairs": 6, "method": "bootstrap"}
    planned = run_cli("plan", str(folder), "--difference", "0.05")
    assert planned.stdout.splitlines()[2:4] == [
        ("scripted · chatty vs scripted · terse: 6 pairs in the pilot, 0% of them disagreed; assumed 5%, the least a "
         "difference of 0.05 allows (the pilot's is lower; give --discordance to plan at another)"),
        # Connor: (1.95996 sqrt(0.05) + 0.84162 sqrt(0.05 - 0.0025))^2 / 0.0025 = 0.62170^2 / 0.0025 = 154.6
        "  needs 157 paired runs: 53 cases at 3 runs a case (Connor's approximation: 155)",
    ]
    given = run_cli("plan", str(folder), "--difference", "0.1", "--discordance", "0.3")
    assert given.stdout.splitlines()[2] == ("scripted · chatty vs scripted · terse: 6 pairs in the pilot, 0% of them "
                                            "disagreed; assumed 30% (--discordance)")


def test_plan_refuses_a_pilot_of_one_arm_and_a_bad_difference(tmp_path: Path) -> None:
    writer = ResultsWriter(tmp_path / "results")
    for one in runs("g/a", "PF", "default"):
        writer.write_run(one)
    done = run_cli("plan", str(writer.path), "--difference", "0.05")
    assert done.returncode == 4
    assert done.stderr == (f"error: {writer.path} has one arm: plan compares arms (run the pilot with two -P prompts "
                           "or two -p providers, then plan from its folder)\n")
    bad = run_cli("plan", str(writer.path), "--difference", "5")
    assert bad.returncode == 4 and "5 is not between 0 and 1" in bad.stderr


def test_the_pass_rate_line_says_when_the_interval_and_the_exact_test_disagree() -> None:
    # 3 of 3 pairs pass -> fail: Newcombe's interval leaves out 0, the exact test cannot reject with three flips.
    before = {("c", run): True for run in range(3)}
    after = {("c", run): False for run in range(3)}
    (line,) = compare_pairs("A", before, "B", after).estimates
    assert line == ("pass rate: B - A = -1.00 (-1.00 to -0.21), exact McNemar p = 0.25; too few pairs (3) to detect "
                    "any difference (power 0.8); the interval and the exact test disagree at 3 discordant pairs: "
                    "the verdict follows the test")
    # 10 flips of 10: both say it, so no note.
    more = compare_pairs("A", {("c", r): True for r in range(10)}, "B", {("c", r): False for r in range(10)})
    assert more.significant and "disagree" not in more.estimates[0]
