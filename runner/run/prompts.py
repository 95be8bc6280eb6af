"""Jinja templates for the system prompt and the turns.

Templates render in a sandboxed environment with StrictUndefined, so a
misspelled variable is an error that names the template and line, never an
empty string sent to the model; runner.run.templatelimits bounds what one render
may build and how long it may run. Whatever a template raises (``1/0``, a
macro calling itself forever, a limit) is a TemplateError at its place.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import traceback
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any, Mapping, Sequence

import jinja2

from runner.errors import Location, UserError
from runner.resources import bundled
from runner.run.templatelimits import (
    MAX_SIZE,
    BoundedEnvironment,
    LimitError,
    guard_loops,
    render_bounded,
)
from runner.spec.case import Case

DEFAULT_PROMPT = "default"


class TemplateError(UserError):
    """A template that does not parse, uses an undefined variable, fails as it renders or goes past a limit."""


@dataclass(frozen=True)
class PromptTemplate:
    """A system prompt template: ``name`` labels the A/B arm, ``origin`` is shown in errors."""

    name: str
    origin: str
    source: str


def load_prompt(path: str | None) -> PromptTemplate:
    """Read a ``-P`` template file; None gives the bundled ``prompts/default.j2``.

    Raises UserError when the file cannot be read.
    """
    file = Path(path) if path else bundled("prompts") / f"{DEFAULT_PROMPT}.j2"
    try:
        source = file.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read prompt template: {e.strerror}", Location(str(file))) from e
    return PromptTemplate(name=file.stem if path else DEFAULT_PROMPT, origin=str(path or file), source=source)


def load_prompts(paths: Sequence[str]) -> list[PromptTemplate]:
    """Read every ``-P`` template, each named by ``prompt_labels``; no paths gives the bundled default.

    Raises UserError when a file cannot be read, or when one file is given twice (under any
    spelling: ``prompts/a.j2`` and ``./prompts/a.j2``, a link, a hard link).
    """
    if not paths:
        return [load_prompt(None)]
    templates = [load_prompt(path) for path in paths]
    first_of: dict[tuple[int, int], str] = {}  # (device, inode): the -P that named that file first
    for path in paths:
        try:
            info = os.stat(path)
        except OSError as e:
            raise UserError(f"cannot read prompt template: {e.strerror}", Location(path)) from e
        first = first_of.get((info.st_dev, info.st_ino))
        if first is not None:
            spelled = f" (as {first} and {path})" if first != path else ""
            raise UserError(f"prompt template {first} is given twice with -P{spelled}",
                            hint="give each -P file once; to run each case more often, use --runs N")
        first_of[(info.st_dev, info.st_ino)] = path
    return [dataclasses.replace(t, name=label) for t, label in zip(templates, prompt_labels(paths))]


def prompt_labels(paths: Sequence[str]) -> list[str]:
    """A distinct label for each of ``paths`` (different files): the file's stem (``prompts/terse.j2``
    is ``terse``), or where stems are shared, the shortest ending of the path that tells them apart
    (``v1/system.j2`` and ``v2/system.j2`` are ``v1/system`` and ``v2/system``; ``terse.j2`` and
    ``terse.txt`` keep their extensions). Paths are made absolute first (``..`` resolved by name).
    """
    endings = [_endings(path) for path in paths]
    level = [0] * len(paths)
    while True:
        labels = [ending[at] for ending, at in zip(endings, level)]
        shared = {label for label, count in Counter(labels).items() if count > 1}
        longer = [i for i, label in enumerate(labels) if label in shared and level[i] + 1 < len(endings[i])]
        if not longer:  # the longest endings are the absolute paths themselves, which differ
            return labels
        for i in longer:
            level[i] += 1


def _endings(path: str) -> list[str]:
    """The labels ``path`` may take, shortest first: ``terse``, ``terse.j2``, ``prompts/terse``,
    ``prompts/terse.j2``, ... up to the absolute path."""
    whole = PurePath(os.path.abspath(path))
    bare, named = whole.with_name(whole.stem).parts, whole.parts
    return list(dict.fromkeys(PurePath(*parts[len(parts) - k:]).as_posix()
                              for k in range(1, len(named) + 1) for parts in (bare, named)))


@lru_cache(maxsize=1)
def _environment() -> BoundedEnvironment:
    """The one template environment, with a ``shell`` filter (shlex.quote) for agent command lines."""
    environment = BoundedEnvironment()
    environment.filters["shell"] = shlex.quote
    return environment


def context_for(case: Case, tools: Sequence[Mapping[str, Any]], workspace: str) -> dict[str, Any]:
    """The variables every template sees: the case vars at top level, plus
    ``vars``, ``case`` (id, group, full_id, description, tags), ``tools``
    (list of ``{name, description}``) and ``workspace`` (absolute path).
    """
    return {
        **case.vars,
        "vars": dict(case.vars),
        "case": {
            "id": case.id,
            "group": case.group,
            "full_id": case.full_id,
            "description": case.description,
            "tags": list(case.tags),
        },
        "tools": [{"name": t["function"]["name"], "description": t["function"]["description"]} for t in tools],
        "workspace": workspace,
    }


@lru_cache(maxsize=1024)
def _compiled(source: str) -> jinja2.Template:
    """``source`` compiled once, its loops guarded: every run of a case renders the same templates (thread-safe)."""
    environment = _environment()
    return environment.from_string(guard_loops(environment.parse(source)))


def render(source: str, context: Mapping[str, Any], file: str, path: str = "", line: int | None = None) -> str:
    """Render one template string; raises TemplateError saying where it is written and what to do.

    A template file (``-P``) is ``file`` itself, and an error points at its line. A template
    inside a case file has ``path`` (``group/id.turns[0]``) and the case's ``line`` there: an
    error points at the case and names the template's own line when that is past the first.
    """
    if "{" not in source and "\r" not in source and len(source) <= MAX_SIZE:  # no template syntax: as jinja writes it
        return source.strip()
    try:
        return render_bounded(_compiled(source), context).strip()
    except jinja2.TemplateSyntaxError as e:
        raise _error(e.message or "syntax error", e.lineno, file, path, line, _SYNTAX_HINT) from e
    except jinja2.UndefinedError as e:
        raise _error(e.message or "undefined variable", _template_line(e), file, path, line, _UNDEFINED_HINT) from e
    except LimitError as e:
        raise _error(e.message, _template_line(e), file, path, line, e.hint) from e
    except jinja2.TemplateError as e:
        raise _error(str(e), _template_line(e), file, path, line, "") from e
    except RecursionError as e:
        raise _error("the template recurses too deeply", _template_line(e), file, path, line, _RECURSION_HINT) from e
    except _FAILURES as e:
        message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        raise _error(message, _template_line(e), file, path, line, _FAILURE_HINT) from e


_SYNTAX_HINT = "close each {{ with }} and each {% with %}; write {{ '{{' }} for literal braces"
_UNDEFINED_HINT = "define it under the case's vars:, or check its spelling"
_RECURSION_HINT = "a macro that calls itself needs a condition that stops it"
_FAILURE_HINT = "the expression failed as the template rendered"
# What an expression can raise as it renders: 1/0, range(10**9) (OverflowError), 'a' + 1, int('x'**9999)...
_FAILURES = (ArithmeticError, TypeError, ValueError, LookupError, AttributeError)


def _error(message: str, template_line: int | None, file: str, path: str, line: int | None, hint: str) -> TemplateError:
    if not path:
        return TemplateError(message, Location(file, template_line), hint=hint)
    if template_line and template_line > 1:
        hint = f"line {template_line} of the template; {hint}" if hint else f"line {template_line} of the template"
    return TemplateError(message, Location(file, line), path=path, hint=hint)


def _template_line(error: BaseException) -> int | None:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == "<template>"]
    return frames[-1].lineno if frames else None


def system_prompt(template: PromptTemplate, case: Case, context: Mapping[str, Any]) -> str:
    """The system prompt for a run: the case's inline ``system`` wins over ``-P``."""
    if case.system is not None:
        return render(case.system, context, str(case.source), f"{case.full_id}.system", case.line)
    return render(template.source, context, template.origin)


def turn_prompts(case: Case, context: Mapping[str, Any]) -> list[str]:
    """Every turn of the case, rendered."""
    return [turn_prompt(case, index, context) for index in range(len(case.turns))]


def turn_prompt(case: Case, index: int, context: Mapping[str, Any]) -> str:
    """Turn ``index`` (from 0) of the case, rendered."""
    return render(case.turns[index], context, str(case.source), f"{case.full_id}.turns[{index}]", case.line)


def user_prompts(case: Case, context: Mapping[str, Any]) -> tuple[str, str | None]:
    """The simulated user's persona and first message (None when the case gives none), rendered.
    Raises TemplateError; the case must have a ``user``."""
    assert case.user is not None
    where = str(case.source), case.full_id
    persona = render(case.user.persona, context, where[0], f"{where[1]}.user.persona", case.line)
    first = case.user.first
    return persona, None if first is None else render(first, context, where[0], f"{where[1]}.user.first", case.line)
