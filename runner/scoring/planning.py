"""``tooltrial plan``: the paired runs, and the cases, a pilot's comparisons need to detect a difference in pass
rate, from each comparison's discordance (runner.scoring.power)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from runner.scoring.paired import Paired
from runner.scoring.power import ALPHA, POWER, connor_pairs, pairs_needed


@dataclass(frozen=True)
class Need:
    """One comparison's plan: its ``title`` (runner.scoring.paired.Paired.title), the pilot's ``pairs`` and the
    share of them that disagreed (``observed``, None without pairs), the ``discordance`` the plan assumes and
    its ``source``: ``given`` (``--discordance``), ``pilot`` (the observed one) or ``floor`` (the difference
    itself, where the pilot's is lower or there is none, since a difference needs at least that share of pairs
    to disagree), the paired runs ``needed`` (the exact test's; ``connor``, the normal approximation's) and the
    ``cases`` they make at ``repeats`` runs a case."""

    title: str
    pairs: int
    observed: float | None
    discordance: float
    source: str
    needed: int
    connor: int
    repeats: int
    cases: int


def plan(comparisons: Sequence[Paired], repeats: int, difference: float, alpha: float = ALPHA,
         power: float = POWER, discordance: float | None = None) -> list[Need]:
    """A ``Need`` for each comparison: the paired runs that detect ``difference`` (a pass-rate fraction) at
    two-sided ``alpha`` with chance ``power`` (the exact McNemar test's, runner.scoring.power), at ``discordance`` where
    given, else at each comparison's own raised to ``difference`` where lower, and the cases they make at
    ``repeats`` runs a case (rounded up). Raises ValueError for a difference, discordance, alpha or power outside
    (0, 1), a discordance given below the difference (no difference that large can arise), or repeats below 1."""
    if not 0 < difference < 1 or (discordance is not None and not difference <= discordance <= 1) or repeats < 1:
        raise ValueError(f"need 0 < difference < 1, difference <= discordance <= 1 and repeats >= 1, got "
                         f"{difference}, {discordance} and {repeats}")
    needs = []
    for paired in comparisons:
        if discordance is not None:
            used, source = discordance, "given"
        elif paired.discordance is not None and paired.discordance >= difference:
            used, source = paired.discordance, "pilot"
        else:
            used, source = difference, "floor"
        needed = pairs_needed(difference, used, alpha, power)
        needs.append(Need(paired.title, paired.pairs, paired.discordance, used, source, needed,
                          connor_pairs(difference, used, alpha, power), repeats, math.ceil(needed / repeats)))
    return needs
