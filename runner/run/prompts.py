"""Jinja templates for the system prompt and the turns.

Templates render in a sandboxed environment with StrictUndefined, so a
misspelled variable is an error that names the template, its line and the nearest
name (runner.run.undefined), never an empty string sent to the model;
runner.run.templatelimits bounds what one render may build and how long it may run.
Whatever a template raises (``1/0``, a macro calling itself forever, a limit) is a
TemplateError at its place; ``render_errors`` and ``errors_in_case`` give every error, not just the first.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import traceback
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path, PurePath
from typing import Any

import jinja2

from runner.errors import Location, UserError, did_you_mean
from runner.resources import bundled
from runner.run.templatelimits import (
    MAX_SIZE,
    BoundedEnvironment,
    LimitError,
    guard_loops,
    render_bounded,
)
from runner.run.undefined import MissingName, NamedUndefined, RecordingUndefined, explained, recorded_names
from runner.spec.case import Case
from runner.spec.located import template_location
from runner.spec.positions import dotted

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
    """Read the template a ``-P`` names (see ``prompt_file``); None gives the bundled ``prompts/default.j2``.

    Raises UserError when the file cannot be read, or a bare name is no file and no bundled prompt.
    """
    found = prompt_file(path) if path else str(bundled("prompts") / f"{DEFAULT_PROMPT}.j2")
    file = Path(found)
    try:
        source = file.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read prompt template: {e.strerror}", Location(found)) from e
    return PromptTemplate(name=file.stem if path else DEFAULT_PROMPT, origin=found, source=source)


def prompt_file(given: str) -> str:
    """The file a ``-P`` names: ``given`` itself when a file of that name exists or it is a path
    (holds a ``/``), else the bundled prompt of that name (``terse`` or ``terse.j2``), from any
    folder. Raises UserError for a bare name that is neither, naming the bundled prompts."""
    if os.path.lexists(given) or "/" in given or os.sep in given:
        return given
    name = given.removesuffix(".j2")
    folder = bundled("prompts")
    if (folder / f"{name}.j2").is_file():
        return str(folder / f"{name}.j2")
    names = sorted(file.stem for file in folder.glob("*.j2"))
    raise UserError("no such file, and no bundled prompt of that name", Location(given),
                    hint=did_you_mean(name, names, "the bundled prompts: " + ", ".join(names)))


def load_prompts(paths: Sequence[str]) -> list[PromptTemplate]:
    """Read every template ``-P`` names (``prompt_file``), each named by ``prompt_labels`` of its file;
    no paths gives the bundled default.

    Raises UserError when a file cannot be read, or when one file is given twice (under any
    spelling: ``prompts/a.j2`` and ``./prompts/a.j2``, a link, a hard link, a bundled prompt's name).
    """
    if not paths:
        return [load_prompt(None)]
    templates = [load_prompt(path) for path in paths]
    files = [template.origin for template in templates]
    first_of: dict[tuple[int, int], str] = {}  # (device, inode): the -P that named that file first
    for path, file in zip(paths, files):
        try:
            info = os.stat(file)
        except OSError as e:
            raise UserError(f"cannot read prompt template: {e.strerror}", Location(file)) from e
        first = first_of.get((info.st_dev, info.st_ino))
        if first is not None:
            spelled = f" (as {first} and {path})" if first != path else ""
            raise UserError(f"prompt template {first} is given twice with -P{spelled}",
                            hint="give each -P file once; to run each case more often, use --runs N")
        first_of[(info.st_dev, info.st_ino)] = path
    return [dataclasses.replace(t, name=label) for t, label in zip(templates, prompt_labels(files))]


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


@lru_cache(maxsize=2)
def _environment(recording: bool) -> BoundedEnvironment:
    """The template environment (with RecordingUndefined when ``recording``, for ``_failures``' second
    render, else NamedUndefined), with a ``shell`` filter (shlex.quote) for agent command lines."""
    environment = BoundedEnvironment()
    environment.undefined = RecordingUndefined if recording else NamedUndefined
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
def _compiled(source: str, recording: bool = False) -> jinja2.Template:
    """``source`` compiled once, its loops guarded: every run of a case renders the same templates (thread-safe)."""
    environment = _environment(recording)
    return environment.from_string(guard_loops(environment.parse(source)))


def render(source: str, context: Mapping[str, Any], file: str) -> str:
    """Render one template file's text (a ``-P`` template); raises TemplateError at its line in ``file``."""
    try:
        return _rendered(source, context)
    except _Failure as e:
        raise TemplateError(e.message, Location(file, e.line), hint=e.hint) from e


def render_in_case(case: Case, key: tuple[str | int, ...], source: str, context: Mapping[str, Any]) -> str:
    """Render a template ``case`` holds at ``key`` of its mapping (``("turns", 1)``, ``("system",)``).

    Raises TemplateError named ``group/id.turns[1]``, at the template's own line in the case file
    (runner.spec.located), or where the template starts, naming the line, when that line has no place
    of its own (a line of a folded or quoted text).
    """
    try:
        return _rendered(source, context)
    except _Failure as e:
        raise _in_case(case, key, e) from e


def render_errors(source: str, context: Mapping[str, Any], file: str) -> list[TemplateError]:
    """Every error ``render`` finds in ``source``, not just the first (see ``_failures``); [] when it renders."""
    return [TemplateError(e.message, Location(file, e.line), hint=e.hint) for e in _failures(source, context)]


def errors_in_case(case: Case, key: tuple[str | int, ...], source: str, context: Mapping[str, Any]) -> list[TemplateError]:
    """Every error ``render_in_case`` finds, each placed as it places one (see ``_failures``); [] when it renders."""
    return [_in_case(case, key, e) for e in _failures(source, context)]


def _in_case(case: Case, key: tuple[str | int, ...], failure: _Failure) -> TemplateError:
    where, own = template_location(case, key, failure.line)
    named = f"line {failure.line} of the template" if failure.line and not own else ""
    hint = "; ".join(part for part in (named, failure.hint) if part)
    return TemplateError(failure.message, where, path=f"{case.full_id}.{dotted(key)}", hint=hint)


def _failures(source: str, context: Mapping[str, Any]) -> list[_Failure]:
    """Every failure of ``source`` with ``context``, by line: a render stopped by an undefined name is done
    again with RecordingUndefined standing in for each, so each undefined name is found once per line and
    message, then whatever else stops that render (``1/0`` further on). A syntax error is the only one."""
    try:
        _rendered(source, context)
        return []
    except _Failure as e:
        if not isinstance(e.__cause__, MissingName):
            return [e]
        first = e
    with recorded_names() as recorded:
        try:
            _rendered(source, context, recording=True)
            stopped: list[_Failure] = []
        except _Failure as e:
            stopped = [e]
    found = [_Failure(*explained(error, context), line=line) for (line, _), error in recorded.items()]
    return sorted(found + stopped, key=lambda one: one.line or 0) or [first]


class _Failure(Exception):
    """A template that failed: the message, the hint and its line in the template (None: not known)."""

    def __init__(self, message: str, hint: str, line: int | None) -> None:
        super().__init__(message)
        self.message, self.hint, self.line = message, hint, line


def _rendered(source: str, context: Mapping[str, Any], recording: bool = False) -> str:
    """``source`` rendered with ``context``; raises _Failure saying what failed and what to do."""
    if "{" not in source and "\r" not in source and len(source) <= MAX_SIZE:  # no template syntax: as jinja writes it
        return source.strip()
    try:
        return render_bounded(_compiled(source, recording), context).strip()
    except jinja2.TemplateSyntaxError as e:
        raise _Failure(e.message or "syntax error", _SYNTAX_HINT, e.lineno) from e
    except MissingName as e:
        message, hint = explained(e, context)
        raise _Failure(message, hint, _template_line(e)) from e
    except LimitError as e:
        raise _Failure(e.message, e.hint, _template_line(e)) from e
    except jinja2.TemplateError as e:
        raise _Failure(str(e), "", _template_line(e)) from e
    except RecursionError as e:
        raise _Failure("the template recurses too deeply", _RECURSION_HINT, _template_line(e)) from e
    except _FAILURES as e:
        message = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        raise _Failure(message, _FAILURE_HINT, _template_line(e)) from e


_SYNTAX_HINT = "close each {{ with }} and each {% with %}; write {{ '{{' }} for literal braces"
_RECURSION_HINT = "a macro that calls itself needs a condition that stops it"
_FAILURE_HINT = "the expression failed as the template rendered"
# What an expression can raise as it renders: 1/0, range(10**9) (OverflowError), 'a' + 1, int('x'**9999)...
_FAILURES = (ArithmeticError, TypeError, ValueError, LookupError, AttributeError)


def _template_line(error: BaseException) -> int | None:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == "<template>"]
    return frames[-1].lineno if frames else None


def system_prompt(template: PromptTemplate, case: Case, context: Mapping[str, Any]) -> str:
    """The system prompt for a run: the case's inline ``system`` wins over ``-P``."""
    if case.system is not None:
        return render_in_case(case, ("system",), case.system, context)
    return render(template.source, context, template.origin)


def turn_prompts(case: Case, context: Mapping[str, Any]) -> list[str]:
    """Every turn of the case, rendered."""
    return [turn_prompt(case, index, context) for index in range(len(case.turns))]


def turn_prompt(case: Case, index: int, context: Mapping[str, Any]) -> str:
    """Turn ``index`` (from 0) of the case, rendered."""
    return render_in_case(case, ("turns", index), case.turns[index], context)


def user_prompts(case: Case, context: Mapping[str, Any]) -> tuple[str, str | None]:
    """The simulated user's persona and first message (None when the case gives none), rendered.
    Raises TemplateError; the case must have a ``user``."""
    assert case.user is not None
    persona = render_in_case(case, ("user", "persona"), case.user.persona, context)
    first = case.user.first
    return persona, None if first is None else render_in_case(case, ("user", "first"), first, context)
