"""The paired analysis of two arms (or of before and after): runs paired by (case, run index),
infrastructure errors left out, and pairs that cannot tell the arms apart (a prompt A/B where the case's
own system prompt replaced both), the exact McNemar test on the pairs that disagree."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from runner.run.record import PASS
from runner.scoring.difference import Difference, mean_difference, newcombe_paired
from runner.scoring.gates import is_infrastructure_error
from runner.scoring.power import detectable_difference
from runner.scoring.stats import mcnemar_exact
from runner.scoring.summary import RunSummary

ALPHA = 0.05  # significance level of the paired verdict


@dataclass(frozen=True)
class Flip:
    """A case whose paired runs disagree: how many went pass->fail and fail->pass from A to B."""

    case: str
    pass_to_fail: int
    fail_to_pass: int


@dataclass(frozen=True)
class Factor:
    """What a comparison of two arms varies and what it holds: the one dimension ``name`` (``prompt``,
    ``tools``, ``provider`` or ``faults``) in which they differ, its values ``a`` and ``b`` in arms A and B, and ``fixed``, each
    other dimension's value, which both arms share (``{"provider": "scripted"}``)."""

    name: str
    a: str
    b: str
    fixed: dict[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """``prompt terse vs default, provider scripted``: B against A, then what both hold."""
        held = "".join(f", {name} {value}" for name, value in self.fixed.items())
        return f"{self.name} {self.b} vs {self.a}{held}"


@dataclass(frozen=True)
class Paired:
    """Arm B against arm A over the same (case, run) pairs, infrastructure errors left out.

    ``pass_to_fail`` counts pairs A passed and B failed; ``fail_to_pass`` the
    reverse; ``p_value`` is the exact McNemar test on those two counts. ``overridden`` counts the pairs left
    out because their case's own ``system`` prompt replaced the arms' prompts (runner.scoring.pairs
    leaves them out where the arms differ by prompt): both runs used the same prompt. ``factor`` names
    the dimension A and B differ in, and the one they share, where the comparison is one of several
    (runner.scoring.pairs); None where the arm labels ``a`` and ``b`` name it alone. ``changed`` names the cases
    whose inputs differ between the two arms' runs (runner.scoring.inputs), left out and counted in ``pairs``
    of neither. ``means`` holds B's mean outcome and process score minus A's (``{"outcome": Difference,
    "process": Difference}``) over the pairs where both runs have that score, with a paired bootstrap interval
    (the normal interval above 500 pairs; runner.scoring.difference); a score no pair has is absent.
    """

    a: str
    b: str
    pairs: int
    a_passes: int
    b_passes: int
    pass_to_fail: int
    fail_to_pass: int
    p_value: float
    flips: list[Flip]
    overridden: int = 0
    factor: Factor | None = None
    changed: list[str] = field(default_factory=list)
    means: dict[str, Difference] = field(default_factory=dict)

    @property
    def difference(self) -> Difference | None:
        """B's pass rate minus A's with Newcombe's 95% interval for paired proportions; None without pairs."""
        if not self.pairs:
            return None
        both = self.a_passes - self.pass_to_fail
        neither = self.pairs - both - self.pass_to_fail - self.fail_to_pass
        return newcombe_paired(both, self.pass_to_fail, self.fail_to_pass, neither)

    @property
    def discordance(self) -> float | None:
        """The share of pairs whose two runs disagree (0 to 1); None without pairs."""
        return (self.pass_to_fail + self.fail_to_pass) / self.pairs if self.pairs else None

    @property
    def detectable(self) -> float | None:
        """The smallest pass-rate difference these pairs detect (two-sided 0.05, power 0.8, at the observed
        discordance; runner.scoring.power); None when no pair disagreed or no difference is detectable."""
        return None if self.discordance is None else detectable_difference(self.pairs, self.discordance)

    @property
    def estimates(self) -> list[str]:
        """One line per figure: ``pass rate: b - a = +0.08 (-0.03 to +0.19), exact McNemar p = 0.23``, then the
        outcome and process means; the pass rate's line ends with the smallest detectable difference, and says so when
        Newcombe's interval and the exact McNemar test disagree on 0 (possible with few discordant pairs: 3 pass->fail
        of 3 pairs give -1.00 (-1.00 to -0.21) and p = 0.25); the verdict is the test's."""
        if self.difference is None:
            return []
        detectable = self.detectable
        if detectable is not None:
            can = f"these {self.pairs} pairs detect a difference of ±{detectable:.2f} or more (power 0.8)"
        elif self.pass_to_fail or self.fail_to_pass:
            can = f"too few pairs ({self.pairs}) to detect any difference (power 0.8)"
        else:
            can = "no pair disagreed: the power cannot be estimated"
        difference = self.difference
        lines = [f"pass rate: {difference.text(self.a, self.b)}, exact McNemar p = {self.p_value:.3g}; {can}"]
        if (difference.low > 0 or difference.high < 0) != self.significant:  # two methods: with few flips they can part
            flips = self.pass_to_fail + self.fail_to_pass
            lines[0] += (f"; the interval and the exact test disagree at {flips} discordant pair{'s' if flips > 1 else ''}: "
                         "the verdict follows the test")
        return lines + [f"{name} mean: {d.text(self.a, self.b)}, {'paired bootstrap' if d.method == 'bootstrap' else 'normal'}"
                        for name, d in self.means.items()]

    @property
    def title(self) -> str:
        """What the verdict compares: ``B vs A``, or the factor's title (runner.scoring.paired.Factor)."""
        return f"{self.b} vs {self.a}" if self.factor is None else self.factor.title

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    @property
    def verdict(self) -> str:
        """One line: the pass-rate difference, the flips, the p-value and whether it is significant, then
        how many pairs were left out for a case's own system prompt, and which cases for changed inputs, if any."""
        changed = f"; left out, their inputs differ between the arms: {', '.join(self.changed)}" if self.changed else ""
        return self._finding() + (f"; {self.overridden} pair{'s' if self.overridden > 1 else ''} left out: "
                                  "the case's own system prompt replaced both prompts" if self.overridden else "") + changed

    def _finding(self) -> str:
        if not self.pairs:
            return f"{self.title}: no paired runs to compare"
        if not self.pass_to_fail and not self.fail_to_pass:
            every = "the 1 paired run" if self.pairs == 1 else f"all {self.pairs} paired runs"
            return f"{self.title}: same result on {every}: no difference"
        delta = 100 * (self.b_passes - self.a_passes) / self.pairs
        level = f"significant at {ALPHA:g}"
        meaning = level if self.significant else f"not {level}, the difference may be chance"
        return (
            f"{self.title}: {delta:+.0f} pts pass rate over {self.pairs} paired run{'s' if self.pairs > 1 else ''} "
            f"({self.fail_to_pass} fail→pass, {self.pass_to_fail} pass→fail); "
            f"exact McNemar p = {self.p_value:.3g}: {meaning}"
        )


Outcomes = Mapping[tuple[str, int], bool | None]  # (case, run index) -> passed; None: infrastructure error


def outcomes(records: Sequence[RunSummary]) -> dict[tuple[str, int], bool | None]:
    """(case, run index) -> passed, or None for an infrastructure error."""
    return {(r.case, r.run): None if is_infrastructure_error(r) else r.status == PASS for r in records}


def overridden(records: Sequence[RunSummary]) -> set[tuple[str, int]]:
    """The (case, run index) of every run whose case's own ``system`` prompt replaced its arm's."""
    return {(r.case, r.run) for r in records if r.prompt_overridden}


Scores = Mapping[tuple[str, int], Mapping[str, float | None]]  # (case, run index) -> {"outcome": s, "process": s}


def scores(records: Sequence[RunSummary]) -> dict[tuple[str, int], dict[str, float | None]]:
    """(case, run index) -> the run's ``outcome`` and ``process`` scores (0 to 1, None where not scored)."""
    return {(r.case, r.run): {"outcome": r.outcome, "process": r.process} for r in records}


def compare_pairs(a: str, a_runs: Outcomes, b: str, b_runs: Outcomes,
                  left_out: Collection[tuple[str, int]] = (), factor: Factor | None = None,
                  changed: Sequence[str] = (), a_scores: Scores | None = None, b_scores: Scores | None = None) -> Paired:
    """Pair the runs of A and B that share a (case, run index), neither of which is None; a pair in
    ``left_out`` (see ``overridden``) is not compared but counted in ``Paired.overridden``, and a pair of a case
    in ``changed`` is not compared at all. ``factor`` and ``changed`` are kept as the Paired's; with ``a_scores``
    and ``b_scores`` (see ``scores``) the compared pairs' mean score differences are its ``means``."""
    shared = [k for k in a_runs if k in b_runs and a_runs[k] is not None and b_runs[k] is not None
              and k[0] not in changed]
    keys = [k for k in shared if k not in left_out]
    flips: dict[str, list[int]] = {}
    for case, run in keys:
        if a_runs[(case, run)] != b_runs[(case, run)]:
            flips.setdefault(case, [0, 0])[0 if a_runs[(case, run)] else 1] += 1
    down = sum(f[0] for f in flips.values())
    up = sum(f[1] for f in flips.values())
    return Paired(
        a=a, b=b, pairs=len(keys),
        a_passes=sum(bool(a_runs[k]) for k in keys),
        b_passes=sum(bool(b_runs[k]) for k in keys),
        pass_to_fail=down, fail_to_pass=up,
        p_value=mcnemar_exact(down, up),
        flips=[Flip(case, d, u) for case, (d, u) in flips.items()],
        overridden=len(shared) - len(keys),
        factor=factor,
        changed=list(changed),
        means=_means(keys, a_scores, b_scores) if a_scores is not None and b_scores is not None else {},
    )


def _means(keys: Sequence[tuple[str, int]], a_scores: Scores, b_scores: Scores) -> dict[str, Difference]:
    found = {}
    for name in ("outcome", "process"):
        pairs = [(a_scores[k].get(name), b_scores[k].get(name)) for k in keys if k in a_scores and k in b_scores]
        difference = mean_difference([b - a for a, b in pairs if a is not None and b is not None])
        if difference is not None:
            found[name] = difference
    return found
