"""``run --until-decided``: the matrix in rounds, each comparison of two arms stopped once decided.

Round ``r`` is run number ``r`` of every case in every arm still needed (``play``). After each round every
undecided comparison (the arms runner.scoring.pairs compares, found in the first round) is fed the
round's paired runs (runner.scoring.sequential, suite-wide: one test per comparison over every case); an
arm all of whose comparisons are decided gets no more runs, and the rounds end when none is left or at
``--runs N``, the cap (a case's own ``runs`` still caps that case). The runs a decision spared, and an
estimate of the tokens and cost they would have spent (each arm's mean per run it did), go in the report.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from runner.run.options import Arm
from runner.scoring.paired import ALPHA
from runner.scoring.pairs import comparisons
from runner.scoring.sequential import A_BETTER, B_BETTER, UNDECIDED, WITHIN, Sequential
from runner.scoring.summary import RunSummary
from runner.spec.case import Case
from runner.suite.engine import Interrupted, RunKey
from runner.text import plural

Play = Callable[[Sequence[Arm], int], list[RunSummary]]  # (arms, run number) -> the round's runs; may raise Interrupted
DEFAULT_MARGIN = 0.05  # ``--margin``: five points of pass rate count as no difference
METHOD = "test by betting (Waudby-Smith & Ramdas 2023, JRSS-B), anytime-valid"


@dataclass(frozen=True)
class Stopping:
    """``--until-decided``: ``cap`` runs of each case in each arm at most (``--runs``), ``margin`` the pass-rate
    difference (0 to 1) that counts as none (``--margin``), ``alpha`` the chance of a false decision."""

    cap: int
    margin: float = DEFAULT_MARGIN
    alpha: float = ALPHA


@dataclass(frozen=True)
class Rounds:
    """What ``run_rounds`` did: the summaries of the runs finished, in round order; the keys of the runs an
    interruption left unfinished; ``section``, report.json's ``sequential`` (``schemas/report.schema.json``)."""

    records: list[RunSummary]
    left: list[RunKey]
    section: dict[str, Any]


@dataclass
class _Comparison:
    a: str
    b: str
    title: str
    test: Sequential
    stopped: int | None = None  # the round it was decided in


def run_rounds(play: Play, cases: Sequence[Case], arms: Sequence[Arm], stopping: Stopping) -> Rounds:
    """Play round after round (``play(arms still needed, run number)``) until every comparison is decided or
    the cap; an Interrupted from ``play`` ends the rounds, its finished runs kept and its unfinished ones
    ``left``. The runs saved are those of the rounds an arm sat out, and once all are decided, of the rounds
    to the cap; an interruption saves none after it."""
    records: list[RunSummary] = []
    left: list[RunKey] = []
    found: list[_Comparison] = []
    spared: Counter[str] = Counter()
    active, number, last = list(arms), 0, max(c.runs or stopping.cap for c in cases)

    def spare(labels: Iterable[str], round_number: int) -> None:
        for label in labels:
            spared[label] += sum((c.runs or stopping.cap) >= round_number for c in cases)

    for number in range(1, last + 1):
        spare([arm.label for arm in arms if arm.label not in {a.label for a in active}], number)
        try:
            batch = play(active, number)
        except Interrupted as e:
            records += e.records
            left = e.left
            break
        records += batch
        if number == 1:
            found = [_Comparison(p.a, p.b, p.title, Sequential(stopping.alpha, stopping.margin))
                     for p in comparisons(batch)]
        by_arm: dict[str, list[RunSummary]] = defaultdict(list)
        for record in batch:
            by_arm[record.arm].append(record)
        for c in found:
            if c.test.decision == UNDECIDED and c.test.add(_differences(by_arm[c.a], by_arm[c.b])) != UNDECIDED:
                c.stopped = number
        needed = {label for c in found if c.test.decision == UNDECIDED for label in (c.a, c.b)}
        active = [arm for arm in arms if arm.label in needed]
        if not active:
            break
    for later in range(number + 1, last + 1) if not left else ():
        spare([arm.label for arm in arms], later)
    played = number - 1 if left else number
    return Rounds(records, left, _section(records, cases, arms, stopping, found, played, spared, bool(left)))


def _differences(a: list[RunSummary], b: list[RunSummary]) -> list[float]:
    """Each paired run's B passed − A passed (runner.scoring.paired's pairing: errors and overridden pairs out)."""
    found = comparisons([*a, *b]) if a and b else []
    if not found:
        return []
    p = found[0]
    return [1.0] * p.fail_to_pass + [-1.0] * p.pass_to_fail + [0.0] * (p.pairs - p.fail_to_pass - p.pass_to_fail)


def _section(records: list[RunSummary], cases: Sequence[Case], arms: Sequence[Arm], stopping: Stopping,
             found: list[_Comparison], rounds: int, spared: Counter[str], interrupted: bool) -> dict[str, Any]:
    by_arm: dict[str, list[RunSummary]] = defaultdict(list)
    for record in records:
        by_arm[record.arm].append(record)
    tokens = _spent_saved(by_arm, spared, lambda r: r.tokens.total_tokens)
    cost = _spent_saved(by_arm, spared, lambda r: r.cost)
    runs = {"cap": sum(c.runs or stopping.cap for c in cases) * len(arms), "spent": len(records),
            "saved": sum(spared.values())}
    return {"method": METHOD, "alpha": stopping.alpha, "margin": stopping.margin, "cap": stopping.cap,
            "rounds": rounds, "runs": runs, "tokens": tokens, "cost": cost,
            "summary": _summary(runs, tokens, cost, rounds),
            "comparisons": [_comparison(c, stopping, rounds, interrupted) for c in found]}


def _spent_saved(by_arm: dict[str, list[RunSummary]], saved: Counter[str],
                 value: Callable[[RunSummary], float | int | None]) -> dict[str, float | None]:
    """Tokens or cost (USD) spent by the runs done, and saved: each arm's runs not done times its mean per run;
    None where no run reported it."""
    spent: float | None = None
    spared: float | None = None
    for label, runs in by_arm.items():
        known = [v for v in map(value, runs) if v is not None]
        if known:
            spent = (spent or 0) + sum(known)
            spared = (spared or 0) + fmean(known) * saved[label]
    return {"spent": spent, "saved": spared}


def _summary(runs: dict[str, int], tokens: dict[str, float | None], cost: dict[str, float | None], rounds: int) -> str:
    share = f" ({runs['saved'] / runs['cap']:.0%})" if runs["cap"] else ""
    line = (f"until decided: {plural(rounds, 'round')}, {runs['spent']} of {plural(runs['cap'], 'run')} at the cap spent, "
            f"{runs['saved']} saved{share}")
    if tokens["spent"] is not None:
        line += f"; tokens {tokens['spent']:,.0f} spent, about {tokens['saved']:,.0f} saved"
    if cost["spent"] is not None:
        line += f"; cost ${cost['spent']:.4f} spent, about ${cost['saved']:.4f} saved"
    return line


def _comparison(c: _Comparison, stopping: Stopping, rounds: int, interrupted: bool) -> dict[str, Any]:
    test = c.test
    level = f"{test.threshold:g} (1/(alpha/2), alpha {stopping.alpha:g})"
    if test.decision == B_BETTER:
        why = f"{c.b} better: after round {c.stopped} the evidence that it passes more often than {c.a} reached {level}"
    elif test.decision == A_BETTER:
        why = f"{c.a} better: after round {c.stopped} the evidence that it passes more often than {c.b} reached {level}"
    elif test.decision == WITHIN:
        why = (f"within ±{stopping.margin:g}: after round {c.stopped} the evidence against a pass-rate difference "
               f"of {stopping.margin:g} or more either way reached {level}")
    elif interrupted:
        why = f"undecided: interrupted in round {rounds + 1}"
    else:
        why = f"undecided at the cap of {plural(rounds, 'round')}: more runs might decide it"
    difference = test.difference
    estimate = "" if difference is None else f" (difference {difference:+.2f} over {plural(test.pairs, 'pair')})"
    return {"a": c.a, "b": c.b, "title": c.title, "decision": test.decision, "stopped_after": c.stopped,
            "pairs": test.pairs, "difference": difference, "evidence": test.evidence(),
            "reason": f"{c.title}: {why}{estimate}"}
