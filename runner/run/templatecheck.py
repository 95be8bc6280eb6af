"""``tooltrial validate -P FILE``: a system prompt template rendered against every selected case, with
the variables a run gives it (runner.run.prompts.context_for) and the tools that case offers, so a
template error shows before any run, at its line, naming the cases it fails for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from runner.errors import UserError
from runner.run.prompts import PromptTemplate, TemplateError, context_for, render
from runner.spec.case import Case
from runner.spec.offered import offered_tools
from runner.tools.mocks import mock_tools
from runner.tools.toolbox import BUILTIN_TOOLS

WORKSPACE = "/workspace"  # what ``workspace`` holds when no run has made one
_NAMED = 3  # cases named in one error; the rest are counted


@dataclass(frozen=True)
class Rendered:
    """What rendering one template gave: the cases it rendered for, those whose own ``system``
    replaces it (not rendered), and its errors, one per distinct error."""

    template: PromptTemplate
    cases: int
    overridden: int
    errors: tuple[TemplateError, ...]


def offered_specs(case: Case) -> list[dict[str, Any]]:
    """The function specs (OpenAI's shape) of the tools ``case`` offers, in the order a run offers them."""
    known = {**BUILTIN_TOOLS, **mock_tools(case.mocks)}
    names = offered_tools(case.tools, (mock["name"] for mock in case.mocks))
    return [known[name].spec() for name in names if name in known]


def render_for_cases(template: PromptTemplate, cases: Sequence[Case]) -> Rendered:
    """``template`` rendered once per case of ``cases`` whose ``system`` does not replace it.

    An error the template gives for several cases (same line, same message) is reported once:
    its message ends ``, for group/id`` with at most three full ids, then ``and N more``, or
    ``, for all N cases``.
    """
    failed: dict[tuple[str, str, str], tuple[TemplateError, list[str]]] = {}
    used = [case for case in cases if case.system is None]
    for case in used:
        context = context_for(case, offered_specs(case), WORKSPACE)
        try:
            render(template.source, context, template.origin)
        except TemplateError as e:
            failed.setdefault((str(e.location), e.message, e.hint), (e, []))[1].append(case.full_id)
    errors = tuple(_naming(error, ids, len(used)) for error, ids in failed.values())
    return Rendered(template, len(used), len(cases) - len(used), errors)


def _naming(error: UserError, ids: list[str], rendered: int) -> TemplateError:
    if len(ids) == rendered > 1:
        named = f"all {rendered} cases"
    else:
        named = ", ".join(ids[:_NAMED]) + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")
    return TemplateError(f"{error.message}, for {named}", error.location, error.path, error.hint)
