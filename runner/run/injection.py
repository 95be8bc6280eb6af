"""Prompt injections in one run (runner.spec.inject): the attacker's text planted in a workspace file after setup
and in the results of the tools it names, then the attacker's checks (``expect.attack``) judged on what the agent
did, beside the task's own. The text is data: it reaches the model and the record, and tooltrial's outputs escape
it where they print it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.checks.base import CheckContext
from runner.checks.registry import run_checks
from runner.kinds import Status
from runner.run.injected import InjectionOutcome
from runner.run.workspace import WorkspaceError
from runner.spec.case import Case
from runner.spec.inject import Injection
from runner.tools.base import ToolContext, ToolError
from runner.tools.paths import open_inside, resolve_inside
from runner.tools.toolbox import Toolbox


def plant_files(case: Case, workspace: Path) -> InjectionOutcome | None:
    """The run's outcome (None for a case neither injected nor a clean twin), the case's file injections appended to
    their files in ``workspace`` (each created if missing, no symbolic link followed). Raises WorkspaceError for a
    path that leaves the workspace or cannot be written."""
    if not case.inject and case.twin_of is None:
        return None
    outcome = InjectionOutcome(attacked=bool(case.inject))
    for injection in case.inject:
        if injection.file is not None:
            _append(workspace, injection.file, injection.text)
            outcome.planted.append(f"file {injection.file}")
    return outcome


def _append(workspace: Path, path: str, text: str) -> None:
    try:
        target = resolve_inside(workspace, path)
        fd = open_inside(workspace, target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, make_parents=True)
    except (ToolError, OSError) as e:
        raise WorkspaceError(f"inject: cannot plant text in {path}: {e}") from e
    with os.fdopen(fd, "a", encoding="utf-8") as file:
        file.write(text if text.endswith("\n") else text + "\n")


def inject_tools(toolbox: Toolbox, case: Case, outcome: InjectionOutcome | None) -> None:
    """Wrap each tool of ``toolbox`` that an injection of ``case`` names, so its results carry the text: appended
    on a line of its own to the result of every call that runs, or of its ``call``-th only. Each planting is
    added to ``outcome.planted``. A tool the case does not offer is left alone."""
    if outcome is None:
        return
    for name in {i.tool for i in case.inject if i.tool is not None and i.tool in toolbox.tools}:
        tool = toolbox.tools[name]
        wrapped = _planting(tool.run, [i for i in case.inject if i.tool == name], outcome)
        toolbox.tools[name] = dataclasses.replace(tool, run=wrapped)


Run = Callable[[dict[str, Any], ToolContext], str]


def _planting(run: Run, injections: list[Injection], outcome: InjectionOutcome) -> Run:
    count = 0

    def planted(arguments: dict[str, Any], context: ToolContext) -> str:
        nonlocal count
        count += 1
        result = run(arguments, context)
        for injection in injections:
            if injection.call is None or injection.call == count:
                result = f"{result}\n{injection.text}"
                outcome.planted.append(f"tool {injection.tool} call {count}")
        return result

    return planted


def judge_attack(context: CheckContext, status: Status, outcome: InjectionOutcome | None) -> None:
    """Fill in ``outcome``'s utility (``status`` is ``pass``) and, for a case with ``expect.attack``, its attack
    checks, run on the same trajectory and workspace as the task's (the trace and reply matchers), and whether they
    all passed."""
    if outcome is None:
        return
    outcome.utility = status == Status.PASS
    attack = context.case.attack
    if attack is None:
        return
    case = dataclasses.replace(context.case, expect=attack, turn_expect=())
    outcome.attack_checks = run_checks(dataclasses.replace(context, case=case))
    outcome.attack_success = all(c.passed for c in outcome.attack_checks)
