"""Whether two sets of runs of one cell (case x arm) ran on the same inputs, by their provenance
(runner.run.provenance), and what changed when they did not: ``case fix/x changed: expect only``,
``prompt terse changed``. The regression view leaves a changed cell out of the paired analysis.

Compared: the case (by part, but its ``script``: the scripted provider's replies are the model, whose change is
what a regression run compares), the fixture tree, the tools offered, the arm's prompt template and its tool
definitions (``-T``); for arms of
one label, the model, its request parameters and the sandbox too (where the two sides' only arms are matched
though named apart, the model is what the comparison is of). tooltrial's and litellm's versions are not
inputs: a regression run exists to see what a new version changed. A run without provenance (a record of an
earlier version, a run stopped before its tools were offered) is not compared.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from runner.run.provenance import Provenance
from runner.scoring.summary import RunSummary

MODEL_PART = "script"  # the case part that is the scripted provider's replies: the model, not an input


@dataclass(frozen=True)
class InputChange:
    """One change of inputs: ``name`` is what changed it (an arm label, or a case's full id) and ``change``
    what changed, a line (``prompt terse changed``, ``case fix/x changed: expect only``)."""

    name: str
    change: str


def input_changes(case: str, arm: str, before: Sequence[RunSummary], after: Sequence[RunSummary],
            same_arm: bool) -> list[InputChange]:
    """What changed between the runs of the cell (``case`` in arm ``arm``, as before names it) ``before`` and
    ``after``, each side read from its first run with provenance; [] when either has none, or nothing changed.
    ``same_arm``: the two arms have one label, so their model, parameters and sandbox are compared too."""
    old, new = _first(before), _first(after)
    if old is None or new is None:
        return []
    found = [InputChange(case, line) for line in case_changes(case, old, new)]
    overridden = all(r.prompt_overridden for r in (*before, *after))  # the case's own system: a case part
    if old.prompt != new.prompt and not overridden:
        found.append(InputChange(arm, f"prompt {before[0].prompt} changed"))
    if old.faults != new.faults and (fault_arm := before[0].faults) is not None:  # the arm's --faults profile
        found.append(InputChange(arm, f"fault profile {fault_arm.arm} changed"))
    if old.tool_defs != new.tool_defs:
        found.append(InputChange(arm, f"tool definitions {before[0].tool_defs} changed"))
    if same_arm:
        found.extend(InputChange(arm, line) for line in _arm_lines(old, new))
    return found


def changed_cases(a: Sequence[RunSummary], b: Sequence[RunSummary]) -> list[str]:
    """The cases, in first-seen order, whose own inputs (the case, its fixture, its tools) differ between the runs
    ``a`` and ``b`` of two arms of one results folder, each case's side read from its first run with provenance.
    Where the arms show different tool definitions (``-T``), the tools offered differ by design: not compared."""
    first_a, first_b = _by_case(a), _by_case(b)
    tools = not a or not b or a[0].tool_defs == b[0].tool_defs
    return [case for case, old in first_a.items() if case in first_b and case_changes(case, old, first_b[case], tools)]


def _by_case(runs: Sequence[RunSummary]) -> dict[str, Provenance]:
    found: dict[str, Provenance] = {}
    for run in runs:
        if run.provenance is not None:
            found.setdefault(run.case, run.provenance)
    return found


def _first(runs: Sequence[RunSummary]) -> Provenance | None:
    return next((r.provenance for r in runs if r.provenance is not None), None)


def case_changes(case: str, old: Provenance, new: Provenance, tools: bool = True) -> list[str]:
    """The lines naming what changed of the case ``case``'s own inputs from ``old`` to ``new``: its parts, its
    fixture tree, the tools it was offered (unless not ``tools``); [] when none did."""
    lines = []
    parts = changed_parts(old, new, {MODEL_PART})
    if parts:
        lines.append(f"case {case} changed: {parts[0]} only" if len(parts) == 1
                     else f"case {case} changed: {', '.join(parts)}")
    if old.fixture != new.fixture and "files" not in parts:
        lines.append(f"case {case}: fixture contents changed")
    if tools and old.tools != new.tools and "tools" not in parts:
        lines.append(f"case {case}: tools offered changed")
    return lines


def changed_parts(old: Provenance, new: Provenance, ignored: Collection[str] = ()) -> list[str]:
    """The parts of the case (runner.spec.fingerprint.case_parts) whose fingerprints differ from ``old`` to ``new``,
    in the order ``old`` lists them, but those ``ignored``."""
    return [p for p in dict.fromkeys([*old.case_parts, *new.case_parts])
            if p not in ignored and old.case_parts.get(p) != new.case_parts.get(p)]


_WHERE = frozenset({"api_base"})  # where the model is served (a local server's new port), not what it is asked


def _arm_lines(old: Provenance, new: Provenance) -> list[str]:
    """The arm's settings that changed: model, request parameters, sandbox."""
    lines = []
    if old.model != new.model:
        lines.append(f"model changed: {old.model} → {new.model}")
    keys = [k for k in dict.fromkeys([*old.params, *new.params])
            if k not in _WHERE and old.params.get(k) != new.params.get(k)]
    if keys:
        lines.append(f"request parameters changed: {', '.join(keys)}")
    if old.sandbox != new.sandbox:
        lines.append(f"sandbox changed: {old.sandbox} → {new.sandbox}")
    return lines


_ARM_INPUTS = ("tooltrial", "commit", "litellm", "model", "params", "sandbox", "tool_defs")
_CASE_INPUTS = ("case", "case_parts", "fixture", "tools", "persona", "rubric")


def arm_provenances(runs: Iterable[RunSummary]) -> dict[str, dict[str, Any]]:
    """Each arm label -> what its runs ran on (runner.run.provenance), from the first run with provenance:
    ``{tooltrial, commit, litellm, model, params, sandbox, tool_defs, [prompt], [faults], cases: {case: {case,
    case_parts, fixture, tools, persona, rubric}}}``; ``prompt`` from a run that rendered the arm's prompt (none when
    every case had its own), ``faults`` the arm's fault profile's fingerprint (``run --faults FILE``). Arms with no
    run with provenance are not keys."""
    arms: dict[str, dict[str, Any]] = {}
    for run in runs:
        if (inputs := run.provenance) is None:
            continue
        arm = arms.setdefault(run.arm, {**{key: getattr(inputs, key) for key in _ARM_INPUTS}, "cases": {}})
        if not run.prompt_overridden:
            arm.setdefault("prompt", inputs.prompt)
        if inputs.faults is not None:
            arm.setdefault("faults", inputs.faults)
        arm["cases"].setdefault(run.case, {key: getattr(inputs, key) for key in _CASE_INPUTS})
    return arms
