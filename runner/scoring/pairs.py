"""Which arms the paired analysis compares (runner.scoring.paired).

An arm is one value of each dimension a user varies (DIMENSIONS: the ``-P`` prompt, the ``-T`` tool
definitions, the ``-p`` provider, the ``--faults`` arm; a Factor names the tool definitions ``tools``). With two
arms the one comparison is of those two, whatever they differ in. With more, a comparison is of two arms that
differ in exactly one dimension, so each verdict is about one change: the prompts within each provider, then the
tool definitions, then the providers, then the fault arms (2 providers x 2 prompts give four comparisons; three
prompts give three pairs per provider). Arms differing in more than one
dimension are not compared. Where two arms differ by prompt, the runs whose case's own ``system``
replaced both prompts compare nothing and are left out (``Paired.overridden``), and so are the runs of a case
whose inputs differ between the two arms (``Paired.changed``: a folder resumed or merged after the case was
edited; runner.scoring.inputs).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations

from runner.scoring.inputs import changed_cases
from runner.scoring.paired import Factor, Paired, compare_pairs, outcomes, overridden, scores
from runner.scoring.summary import RunSummary

DIMENSIONS = ("prompt", "tool_defs", "provider", "faults")  # the order comparisons are listed in: prompts first
_FACTOR_NAMES = {"tool_defs": "tools"}


def comparisons(records: Sequence[RunSummary]) -> list[Paired]:
    """The paired analysis of every two arms of ``records`` the module docstring names, A the arm seen
    first; [] with fewer than two arms. Arms are ``RunRecord.arm`` labels, taken in first-seen order."""
    by_arm: dict[str, list[RunSummary]] = defaultdict(list)
    for record in records:
        by_arm[record.arm].append(record)
    values = {label: {name: _value(runs[0], name) for name in DIMENSIONS} for label, runs in by_arm.items()}
    if len(by_arm) == 2:
        a, b = by_arm
        return [_compare(by_arm, a, b, None, differ_by_prompt=values[a]["prompt"] != values[b]["prompt"])]
    found = []
    for name in DIMENSIONS:
        for a, b in combinations(by_arm, 2):
            if [d for d in DIMENSIONS if values[a][d] != values[b][d]] == [name]:
                fixed = {_FACTOR_NAMES.get(d, d): v for d in DIMENSIONS if d != name and (v := values[a][d]) is not None}
                factor = Factor(_FACTOR_NAMES.get(name, name), str(values[a][name]), str(values[b][name]), fixed)
                found.append(_compare(by_arm, a, b, factor,
                                      differ_by_prompt=name == "prompt"))
    return found


def _value(record: RunSummary, dimension: str) -> str | None:
    """The arm's value of ``dimension``: its prompt, tool definitions' name, provider, or ``--faults`` arm (the last
    two None without ``-T``, ``--faults``)."""
    if dimension == "faults":
        return record.fault_arm
    value = getattr(record, dimension)
    return None if value is None else str(value)


def _compare(by_arm: dict[str, list[RunSummary]], a: str, b: str, factor: Factor | None, differ_by_prompt: bool) -> Paired:
    own = overridden([*by_arm[a], *by_arm[b]]) if differ_by_prompt else set()
    return compare_pairs(a, outcomes(by_arm[a]), b, outcomes(by_arm[b]), own, factor,
                         changed_cases(by_arm[a], by_arm[b]), scores(by_arm[a]), scores(by_arm[b]))
