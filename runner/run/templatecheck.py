"""Every template error before any run: a case's own templates (turns, ``system:``, the simulated
user's) and the system prompt templates (``-P``) rendered against each case, every error of each
(runner.run.prompts.render_errors), each distinct error once, naming the cases it fails for.
``run`` refuses to start on them (runner.suite.engine.preflight); ``validate`` lists them all."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.errors import UserError, in_file_order
from runner.run.prompts import PromptTemplate, TemplateError, context_for, errors_in_case, render_errors
from runner.spec.case import Case
from runner.spec.offered import offered_tools
from runner.tools.mocks import mock_tools
from runner.tools.toolbox import BUILTIN_TOOLS

WORKSPACE = "/workspace"  # what ``workspace`` holds when no run has made one
_NAMED = 3  # cases named in one error; the rest are counted

# An error, once per place, message and hint, with the full ids of the cases it was found for, in order
Grouped = list[tuple[TemplateError, list[str]]]


@dataclass(frozen=True)
class Rendered:
    """What rendering one template gave: the cases it rendered for, those whose own ``system``
    replaces it (not rendered), and its errors, one per distinct error, by line."""

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
    """``template`` rendered once per case of ``cases`` whose ``system`` does not replace it, every
    error of each render kept.

    An error the template gives for several cases (same line, same message, same hint) is reported
    once: its message ends ``, for group/id`` with at most three full ids, then ``and N more``, or
    ``, for all N cases``. Errors come by line in the template.
    """
    used = [case for case in cases if case.system is None]
    found = _grouped((error, case.full_id) for case in used
                     for error in render_errors(template.source, _context(case), template.origin))
    errors = in_file_order(_naming(error, ids, len(used)) for error, ids in found)
    return Rendered(template, len(used), len(cases) - len(used), tuple(errors))


def case_template_errors(cases: Sequence[Case], prompts: Sequence[PromptTemplate]) -> Grouped:
    """Every error of the templates a run of each of ``cases`` renders with each of ``prompts``
    (``case_errors``), as a run renders them (no tools, ``workspace`` /workspace), grouped by place,
    message and hint (the cases a dataset or matrix makes of one case share its templates)."""
    return _grouped((error, case.full_id) for case in cases for prompt in prompts
                    for error in case_errors(case, prompt, context_for(case, [], WORKSPACE)))


def case_errors(case: Case, prompt: PromptTemplate, context: Mapping[str, Any]) -> list[TemplateError]:
    """Every error of the templates a run of ``case`` renders with ``prompt`` and ``context``, in the
    order a run renders them: its system prompt (the case's own ``system:`` wins over ``prompt``), each
    turn, then the simulated user's persona and first message (runner.run.prompts.system_prompt)."""
    system = (errors_in_case(case, ("system",), case.system, context) if case.system is not None
              else render_errors(prompt.source, context, prompt.origin))
    own: list[tuple[tuple[str | int, ...], str]] = [(("turns", index), turn) for index, turn in enumerate(case.turns)]
    if case.user is not None:
        own += [(("user", "persona"), case.user.persona)]
        own += [(("user", "first"), case.user.first)] if case.user.first is not None else []
    return system + [error for key, source in own for error in errors_in_case(case, key, source, context)]


def reported(found: Grouped, cases: int) -> list[TemplateError]:
    """Each grouped error, its message naming the cases when more than one (as ``render_for_cases``
    does; ``cases`` is how many there were, for ``all N cases``), in file order: files in the order
    first met, by line then column in each."""
    files: dict[str, list[TemplateError]] = {}
    for error, ids in found:
        files.setdefault(error.location.file if error.location else "", []).append(
            _naming(error, ids, cases) if len(ids) > 1 else error)
    return [error for errors in files.values() for error in in_file_order(errors)]


def _context(case: Case) -> dict[str, Any]:
    return context_for(case, offered_specs(case), WORKSPACE)


def _grouped(errors: Iterable[tuple[TemplateError, str]]) -> Grouped:
    groups: dict[tuple[str, str, str], tuple[TemplateError, dict[str, None]]] = {}
    for error, case in errors:
        groups.setdefault((str(error.location), error.message, error.hint), (error, {}))[1][case] = None
    return [(error, list(ids)) for error, ids in groups.values()]


def _naming(error: UserError, ids: list[str], rendered: int) -> TemplateError:
    if len(ids) == rendered > 1:
        named = f"all {rendered} cases"
    else:
        named = ", ".join(ids[:_NAMED]) + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")
    return TemplateError(f"{error.message}, for {named}", error.location, error.path, error.hint)
