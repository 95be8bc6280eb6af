"""Aggregation per case and arm, the paired analysis of two arms, and the gates behind the exit code."""

from __future__ import annotations

import pytest

from runner.kinds import Blame
from runner.run.requests import Tokens
from runner.scoring.aggregate import aggregate
from runner.scoring.gates import evaluate, exit_code
from runner.scoring.paired import compare_pairs
from tests.records import matrix, runs


def test_cell_statistics_over_repeats() -> None:
    records = runs("g/a", "PPFPF", outcome=0.5) + runs("g/b", "PPPPP")
    records[0].outcome, records[0].tokens, records[0].cost = 1.0, Tokens(10, 5, 15), 0.01
    comparison = aggregate(records)
    a, b = comparison.cells
    assert (a.case, a.figures.runs, a.figures.passed, a.figures.pass_rate) == ("g/a", 5, 3, 0.6)
    assert a.pass_at_k[1] == pytest.approx(0.6)
    assert a.pass_at_k[3] == pytest.approx(1.0)  # only 2 failures: any 3 runs hold a pass
    assert a.pass_hat_k[2] == pytest.approx(3 / 10)  # C(3,2)/C(5,2)
    assert a.pass_hat_k[5] == 0.0
    assert a.flaky and not b.flaky
    assert a.figures.interval == pytest.approx((0.2307, 0.8824), abs=1e-4)
    assert a.figures.outcome_mean == pytest.approx(0.6) and a.figures.outcome_std == pytest.approx(0.2236, abs=1e-4)
    assert a.figures.process_mean is None  # not scored: left out, not counted as 0
    assert (a.figures.tokens_mean, a.figures.tokens.total_tokens, a.figures.tokens_per_pass) == (15, 15, 5)
    assert a.figures.cost_per_pass == pytest.approx(0.01 / 3)
    (arm,) = comparison.arms
    assert arm.figures.passed == 8 and arm.pass_hat_k[5] == pytest.approx(0.5)  # mean of 0 and 1
    assert comparison.paired is None


def test_two_arms_are_paired_by_case_and_run() -> None:
    records = matrix({("g/a", "old"): "PPPP", ("g/b", "old"): "PPPF", ("g/a", "new"): "FFPF", ("g/b", "new"): "PPPP"})
    paired = aggregate(records).paired
    assert paired is not None
    assert (paired.a, paired.b) == ("scripted · old", "scripted · new")
    assert (paired.pairs, paired.pass_to_fail, paired.fail_to_pass) == (8, 3, 1)
    assert [(f.case, f.pass_to_fail, f.fail_to_pass) for f in paired.flips] == [("g/a", 3, 0), ("g/b", 0, 1)]
    assert paired.p_value == pytest.approx(0.625)  # 2 * (C(4,0) + C(4,1)) / 16
    assert not paired.significant
    assert paired.verdict == (
        "scripted · new vs scripted · old: -25 pts pass rate over 8 paired runs (1 fail→pass, 3 pass→fail); "
        "exact McNemar p = 0.625: not significant at 0.05, the difference may be chance"
    )


def test_significant_difference_says_so() -> None:
    a = {("g/x", i): True for i in range(8)}
    b = {("g/x", i): False for i in range(8)}
    paired = compare_pairs("A", a, "B", b)
    assert paired.p_value == pytest.approx(2 / 256) and paired.significant
    assert paired.verdict.endswith("exact McNemar p = 0.00781: significant at 0.05")


def test_identical_arms_and_infrastructure_errors_are_not_pairs() -> None:
    records = matrix({("g/a", "x"): "PEP", ("g/a", "y"): "PPE"})
    paired = aggregate(records).paired
    assert paired is not None and paired.pairs == 1  # runs 1 and 2 each have an error on one side
    assert paired.verdict == "scripted · y vs scripted · x: same result on the 1 paired run: no difference"


def _two_by_two(patterns: dict[tuple[str, str, str], str]) -> list:
    """Records of ``{(case, provider, prompt): pattern}``, in that order."""
    return [r for (case, provider, prompt), pattern in patterns.items() for r in runs(case, pattern, prompt, provider=provider)]


def test_two_providers_by_two_prompts_compare_the_arms_that_differ_in_one_thing() -> None:
    records = _two_by_two({("g/a", "p", "x"): "PP", ("g/a", "p", "y"): "PF", ("g/a", "q", "x"): "FF", ("g/a", "q", "y"): "PP"})
    model = aggregate(records)
    assert model.paired is None  # four arms: no one pair
    assert [(c.a, c.b, c.factor.name, c.factor.fixed) for c in model.comparisons if c.factor] == [
        ("p · x", "p · y", "prompt", {"provider": "p"}), ("q · x", "q · y", "prompt", {"provider": "q"}),
        ("p · x", "q · x", "provider", {"prompt": "x"}), ("p · y", "q · y", "provider", {"prompt": "y"})]
    assert [c.verdict for c in model.comparisons] == [
        ("prompt y vs x, provider p: -50 pts pass rate over 2 paired runs (0 fail→pass, 1 pass→fail); "
         "exact McNemar p = 1: not significant at 0.05, the difference may be chance"),
        ("prompt y vs x, provider q: +100 pts pass rate over 2 paired runs (2 fail→pass, 0 pass→fail); "
         "exact McNemar p = 0.5: not significant at 0.05, the difference may be chance"),
        ("provider q vs p, prompt x: -100 pts pass rate over 2 paired runs (0 fail→pass, 2 pass→fail); "
         "exact McNemar p = 0.5: not significant at 0.05, the difference may be chance"),
        ("provider q vs p, prompt y: +50 pts pass rate over 2 paired runs (1 fail→pass, 0 pass→fail); "
         "exact McNemar p = 1: not significant at 0.05, the difference may be chance"),
    ]


def test_two_arms_are_compared_once_whatever_they_differ_in() -> None:
    model = aggregate(_two_by_two({("g/a", "p", "x"): "P", ("g/a", "q", "y"): "F"}))
    assert model.comparisons == [model.paired] and model.paired is not None and model.paired.factor is None
    assert model.paired.verdict.startswith("q · y vs p · x: -100 pts pass rate over 1 paired run ")


def test_a_cases_own_prompt_leaves_pairs_out_only_where_the_prompts_differ() -> None:
    records = _two_by_two({("g/a", "p", "x"): "PP", ("g/a", "p", "y"): "PP", ("g/a", "q", "x"): "PP", ("g/a", "q", "y"): "PP"})
    for record in records:
        record.prompt_overridden = record.run == 1
    by_title = {c.title: (c.pairs, c.overridden) for c in aggregate(records).comparisons}
    assert by_title == {"prompt y vs x, provider p": (1, 1), "prompt y vs x, provider q": (1, 1),
                        "provider q vs p, prompt x": (2, 0), "provider q vs p, prompt y": (2, 0)}


def test_default_gate_wants_every_run_to_pass() -> None:
    gates = evaluate(aggregate(runs("g/a", "PPP") + runs("g/b", "PFP")).cells, {})
    assert [g.broken_by for g in gates] == [None, Blame.AGENT]
    assert exit_code(gates) == 1


def test_min_pass_rate_gates_per_case_and_suite() -> None:
    records = runs("g/a", "PPPPF") + runs("g/b", "PPPFF")
    cells = aggregate(records).cells
    assert exit_code(evaluate(cells, {}, default=0.8)) == 1  # g/b: 60% < 80%
    assert exit_code(evaluate(cells, {"g/b": 0.6}, default=0.8)) == 0  # the case's own threshold wins
    assert exit_code(evaluate(cells, {}, default=0.6)) == 0


def test_only_infrastructure_errors_exit_6() -> None:
    gates = evaluate(aggregate(runs("g/a", "PPE") + runs("g/b", "PPP")).cells, {})
    assert [g.broken_by for g in gates] == [Blame.INFRASTRUCTURE, None]
    assert exit_code(gates) == 6


def test_exit_code_takes_the_worst_blame_internal_case_agent_infrastructure() -> None:
    internal, case, agent, outage = runs("g/i", "PI"), runs("g/w", "PW"), runs("g/f", "PF"), runs("g/e", "PE")
    assert [g.broken_by for g in evaluate(aggregate(internal + case + agent + outage).cells, {})] == [
        Blame.INTERNAL, Blame.CASE, Blame.AGENT, Blame.INFRASTRUCTURE]
    assert exit_code(evaluate(aggregate(internal + outage).cells, {})) == 3
    assert exit_code(evaluate(aggregate(case + agent + outage).cells, {})) == 4
    assert exit_code(evaluate(aggregate(agent + outage).cells, {})) == 1
    assert exit_code(evaluate(aggregate(runs("g/a", "PEWI")).cells, {}, 0.25)) == 0  # the gate holds: no blame at all
    assert evaluate(aggregate(runs("g/a", "PEWI")).cells, {}, 0.5)[0].broken_by == Blame.INTERNAL  # the worst error in the cell


def test_agent_failure_wins_over_infrastructure() -> None:
    assert exit_code(evaluate(aggregate(runs("g/a", "PE") + runs("g/b", "PT")).cells, {})) == 1  # a turn limit is the agent's


def test_gate_broken_by_infrastructure_only_when_errors_could_have_saved_it() -> None:
    # 3/5 passed, gate 0.8: one failure and one outage; even had the outage passed, 4/5 holds -> infrastructure
    assert evaluate(aggregate(runs("g/a", "PPPFE")).cells, {}, 0.8)[0].broken_by == Blame.INFRASTRUCTURE
    # two failures: even had the outage passed, 3/5 < 80% -> agent
    assert evaluate(aggregate(runs("g/a", "PPFFE")).cells, {}, 0.8)[0].broken_by == Blame.AGENT
