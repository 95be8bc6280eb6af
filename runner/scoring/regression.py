"""The regression view: the same cases run at two times (two results folders), before against after.

Arms are matched by label (``provider · prompt``); when the folders share no
label but each has exactly one arm, those two are matched (a model or prompt
change between the runs). Only cells (case x matched arm) that both sides ran
are compared; the rest are listed. Runs are paired by (case, run index), as
for the McNemar test, and **pass->fail** and **fail->pass** always count such
pairs of runs: a case is listed under pass->fail with how many of its paired
runs passed before and failed after (and under fail->pass with the reverse; a
case whose runs flipped both ways is under both), so the counts of the lists
add up to the paired verdict's.

A cell whose inputs changed between the two (runner.scoring.inputs: the case, its fixture, the tools, the
prompt, the arm's model and settings) is named with what changed, and left out of the paired analysis (and
so of pass->fail and fail->pass) unless ``allow_changed``: its flips say nothing of the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from runner.errors import UserError
from runner.scoring.aggregate import Aggregate, Arm, aggregate
from runner.scoring.inputs import InputChange, input_changes
from runner.scoring.paired import Paired, compare_pairs, outcomes, scores
from runner.scoring.summary import RunSummary


@dataclass(frozen=True)
class CaseChange:
    """One case in one matched arm (named as before) some of whose paired runs flipped: ``pass_to_fail``
    of them passed before and failed after, ``fail_to_pass`` the reverse; ``before`` and ``after`` are
    its pass rates, fractions of the scored runs, None where no run was scored."""

    case: str
    arm: str
    before: float | None
    after: float | None
    pass_to_fail: int = 0
    fail_to_pass: int = 0


@dataclass(frozen=True)
class Regression:
    """Before against after.

    ``arms`` holds each matched arm of the aggregation (runner.scoring.aggregate)
    before and after, over the shared cells; ``pass_to_fail`` / ``fail_to_pass`` the cells with a
    paired run that flipped that way, in run order (their counts sum to ``paired``'s);
    ``only_before`` / ``only_after`` list the ``case [arm]`` cells found on one side only;
    ``changed`` each change of inputs (runner.scoring.inputs), once each, in cell order, and ``left_out`` the
    ``case [arm]`` cells they left out of ``paired`` (none when ``allow_changed``).
    """

    arms: list[tuple[Arm, Arm]]
    pass_to_fail: list[CaseChange]
    fail_to_pass: list[CaseChange]
    only_before: list[str]
    only_after: list[str]
    paired: Paired
    changed: list[InputChange] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    allow_changed: bool = False


Cells = dict[tuple[str, str], list[RunSummary]]  # (case, before's arm label) -> runs


def regression(before: Sequence[RunSummary], after: Sequence[RunSummary], allow_changed: bool = False) -> Regression:
    """Compare two sets of runs over the cells (case x matched arm) that both have; cells whose inputs changed
    are left out of the paired analysis unless ``allow_changed``.

    Raises UserError when no arm can be matched or the matched arms share no case.
    """
    matched = _match(_arms(before), _arms(after))
    same, to_old = {a: a for a, _ in matched}, {b: a for a, b in matched}
    old_cells, new_cells = _cells(before, same), _cells(after, to_old)
    common = [key for key in old_cells if key in new_cells]
    if not common:
        raise UserError("the two results share no case to compare")
    old = aggregate([r for key in common for r in old_cells[key]])
    new = aggregate([r for key in common for r in new_cells[key]])
    old_rates, new_rates = _rates(old, same), _rates(new, to_old)
    label = (lambda case, arm: case) if len(matched) == 1 else (lambda case, arm: f"{case} [{arm}]")
    named = {a: a == b for a, b in matched}
    found = {key: input_changes(*key, old_cells[key], new_cells[key], named[key[1]]) for key in common}
    left = [] if allow_changed else [key for key in common if found[key]]
    kept = [key for key in common if key not in left]
    paired = compare_pairs("before", _outcomes(old_cells, kept, label), "after", _outcomes(new_cells, kept, label),
                           a_scores=_scores(old_cells, kept, label), b_scores=_scores(new_cells, kept, label))
    cell_of = {label(case, arm): (case, arm) for case, arm in common}
    changes = [CaseChange(case, arm, old_rates[(case, arm)], new_rates[(case, arm)], flip.pass_to_fail, flip.fail_to_pass)
               for flip in paired.flips for case, arm in [cell_of[flip.case]]]
    return Regression(
        arms=[(old.arm(o), new.arm(n)) for o, n in matched if o in old.labels],
        pass_to_fail=[c for c in changes if c.pass_to_fail],
        fail_to_pass=[c for c in changes if c.fail_to_pass],
        only_before=_unmatched(before, common, same),
        only_after=_unmatched(after, common, to_old),
        paired=paired,
        changed=list(dict.fromkeys(change for key in common for change in found[key])),
        left_out=[f"{case} [{arm}]" for case, arm in left],
        allow_changed=allow_changed,
    )


def _arms(records: Sequence[RunSummary]) -> list[str]:
    return list(dict.fromkeys(r.arm for r in records))


def _match(old: list[str], new: list[str]) -> list[tuple[str, str]]:
    shared = [(arm, arm) for arm in old if arm in new]
    if shared:
        return shared
    if len(old) == 1 and len(new) == 1:
        return [(old[0], new[0])]
    raise UserError(
        "the two results share no arm to compare",
        hint=f"before has {', '.join(old)}; after has {', '.join(new)}",
    )


def _cells(records: Sequence[RunSummary], label: dict[str, str]) -> Cells:
    """The runs of each matched cell, keyed by case and the before-side arm label."""
    cells: Cells = {}
    for r in records:
        if r.arm in label:
            cells.setdefault((r.case, label[r.arm]), []).append(r)
    return cells


def _rates(side: Aggregate, label: dict[str, str]) -> dict[tuple[str, str], float | None]:
    """Each cell's pass rate, keyed by case and the before-side arm label."""
    return {(c.case, label[c.arm]): c.figures.pass_rate for c in side.cells}


def _unmatched(records: Sequence[RunSummary], common: list[tuple[str, str]], label: dict[str, str]) -> list[str]:
    """``case [arm]`` of each cell of ``records`` outside ``common``, in first-seen order."""
    shared = set(common)
    cells = dict.fromkeys((r.case, r.arm) for r in records if (r.case, label.get(r.arm)) not in shared)
    return [f"{case} [{arm}]" for case, arm in cells]


def _outcomes(cells: Cells, common: list[tuple[str, str]], label) -> dict[tuple[str, int], bool | None]:
    """(case label, run index) -> passed, None for an infrastructure error."""
    return {
        (label(case, arm), run): passed
        for case, arm in common
        for (_, run), passed in outcomes(cells[(case, arm)]).items()
    }


def _scores(cells: Cells, common: list[tuple[str, str]], label) -> dict[tuple[str, int], dict[str, float | None]]:
    """(case label, run index) -> the run's outcome and process scores, as ``_outcomes`` keys them."""
    return {(label(case, arm), run): found for case, arm in common for (_, run), found in scores(cells[(case, arm)]).items()}
