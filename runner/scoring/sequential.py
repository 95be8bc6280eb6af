"""The anytime-valid sequential test behind ``run --until-decided``: after each round, is B better than A,
A better than B, or are they within a margin of each other?

The quantity tested is the suite-wide pass-rate difference of a comparison of two arms: the mean, over a
round's paired runs (one per case, runner.scoring.pairs), of ``x = B passed - A passed`` (-1, 0 or +1).
Four one-sided tests run side by side, each a test by betting (Waudby-Smith & Ramdas 2023, "Estimating
means of bounded random variables by betting", JRSS-B 86(1), section 3): a wealth that starts at 1 and
stakes a fraction ``λ`` of itself on each pair, ``W ← W · (1 + λ·(x − m))`` to show the difference exceeds
``m`` (or ``1 + λ·(m − x)`` to show it falls short). ``λ`` is fixed before a round from the rounds before
(their approximate GRAPA bet, section 5.3: the mean gap over the second moment, held to ``CAP`` of the most
that keeps the wealth positive) and is the same for every pair of the round. While the null holds (the
round's mean difference is at most ``m``: every case may differ, only their mean counts), the expected
factor of a round is at most 1 (the pairs are independent, and by the AM-GM inequality the product of
their expected factors is at most the ``n``-th power of their mean), so the wealth is a nonnegative
supermartingale and by Ville's inequality it ever reaches ``2/α`` with probability at most ``α/2``, however
often it is looked at. Hence:

- ``b_better``: the wealth betting that the difference exceeds 0 reached ``2/α``;
- ``a_better``: the wealth betting that it falls short of 0 did;
- ``within_margin``: both the wealth betting that it falls short of ``+margin`` and the one betting that it
  exceeds ``-margin`` did.

With equal arms a winner is declared falsely with probability at most ``α`` (two tests at ``α/2``); with a
true difference of ``margin`` or more, ``within_margin`` is declared falsely with probability at most ``α/2``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

CAP = 0.75  # the largest stake, as a share of the most that keeps the wealth positive (WSR 2023 use 1/2 or 3/4)
B_BETTER, A_BETTER, WITHIN, UNDECIDED = "b_better", "a_better", "within_margin", "undecided"


@dataclass
class Bet:
    """One one-sided test by betting of a mean difference (each ``x`` in [-1, 1]) against the value ``m``:
    ``up`` bets that the mean exceeds ``m`` (null: at most ``m``), else that it falls short (null: at least
    ``m``). ``wealth`` is the e-value (1 at the start); a round's ``λ`` comes from the pairs before it (``play``)."""

    m: float
    up: bool
    wealth: float = 1.0

    def play(self, xs: Sequence[float], mean: float, second: float) -> None:
        """Stake on each of one round's pairs ``xs``, the same ``λ`` for all: the approximate GRAPA bet
        ``gap / (variance + gap²)`` of the earlier pairs' ``mean`` and ``second`` moment (regularised), held to
        [0, CAP × the most that keeps the wealth positive]."""
        sign = 1.0 if self.up else -1.0
        gap = sign * (mean - self.m)
        variance = max(second - mean * mean, 0.0)
        most = 1.0 / (1.0 + sign * self.m)  # 1 + λ·sign·(x − m) > 0 for every x in [-1, 1]
        stake = min(max(gap / (variance + gap * gap), 0.0), CAP * most) if gap > 0 else 0.0
        for x in xs:
            self.wealth *= 1.0 + stake * sign * (x - self.m)


@dataclass
class Sequential:
    """The sequential test of one comparison (B minus A), fed a round at a time (``add``); ``alpha`` the
    chance of a false decision (at most ``alpha`` for a false winner, ``alpha/2`` for a false ``within_margin``),
    ``margin`` the pass-rate difference (0 to 1) that counts as none.

    Attributes:
        decision: ``b_better``, ``a_better``, ``within_margin`` or ``undecided``; once decided it stays.
        rounds: rounds added with at least one pair; ``pairs`` the pairs in them; ``total`` the sum of their ``x``
            and ``squares`` of their ``x²``.
    """

    alpha: float = 0.05
    margin: float = 0.05
    decision: str = UNDECIDED
    rounds: int = 0
    pairs: int = 0
    total: float = 0.0
    squares: float = 0.0
    bets: dict[str, Bet] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bets = {"above_zero": Bet(0.0, True), "below_zero": Bet(0.0, False),
                     "below_margin": Bet(self.margin, False), "above_minus_margin": Bet(-self.margin, True)}

    @property
    def threshold(self) -> float:
        """The wealth (e-value) a test must reach: ``2/alpha`` (each of the two sides at ``alpha/2``)."""
        return 2.0 / self.alpha

    @property
    def difference(self) -> float | None:
        """The mean of every pair's ``x`` so far: B's pass rate minus A's; None before any pair."""
        return self.total / self.pairs if self.pairs else None

    def add(self, xs: Sequence[float]) -> str:
        """Add one round's pairs (each ``x`` = B passed − A passed, in [-1, 1]) unless decided; return the decision.
        A round without pairs (every run an infrastructure error) changes nothing."""
        if self.decision != UNDECIDED or not xs:
            return self.decision
        # the earlier pairs' moments, with one pseudo-pair of x = 0 and second moment 1/4 (no bet before evidence)
        mean, second = self.total / (self.pairs + 1), (0.25 + self.squares) / (self.pairs + 1)
        for bet in self.bets.values():
            bet.play(xs, mean, second)
        self.rounds += 1
        self.pairs += len(xs)
        self.total += sum(xs)
        self.squares += sum(x * x for x in xs)
        reached = {name for name, bet in self.bets.items() if bet.wealth >= self.threshold}
        if "above_zero" in reached:
            self.decision = B_BETTER
        elif "below_zero" in reached:
            self.decision = A_BETTER
        elif {"below_margin", "above_minus_margin"} <= reached:
            self.decision = WITHIN
        return self.decision

    def evidence(self) -> dict[str, float]:
        """Each test's wealth (e-value, at least 0): ``above_zero``, ``below_zero``, ``below_margin``,
        ``above_minus_margin``."""
        return {name: bet.wealth for name, bet in self.bets.items()}
