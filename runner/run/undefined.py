"""What a template names that is not there: the undefined value that says which object lacked which
name, and the message and hint tooltrial shows for it (a did-you-mean from the names there are).

``{{ case.ful_id }}`` reads ``case has no attribute 'ful_id' (did you mean 'full_id'?)``, never
advice to define a ``case`` attribute under ``vars:``; ``{{ nme }}`` names the nearest variable.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, UndefinedError
from jinja2.exceptions import TemplateRuntimeError
from jinja2.utils import missing

from runner.errors import did_you_mean

_VARS_HINT = "define it under the case's vars:, or check its spelling"


class MissingName(UndefinedError):
    """An undefined name used: ``owner`` is the object that lacks ``name`` (jinja's ``missing``
    for a top-level variable)."""

    def __init__(self, owner: Any, name: Any, message: str) -> None:
        super().__init__(message)
        self.owner = owner
        self.name = name


class NamedUndefined(StrictUndefined):
    """StrictUndefined whose error is a MissingName (other errors it stands for, such as the
    sandbox's SecurityError, are left as they are)."""

    __slots__ = ()

    def __init__(self, hint: str | None = None, obj: Any = missing, name: str | None = None,
                 exc: type[TemplateRuntimeError] = UndefinedError) -> None:
        if exc is UndefinedError:
            exc = functools.partial(MissingName, obj, name)  # type: ignore[assignment]
        super().__init__(hint, obj, name, exc)


def explained(error: MissingName, context: Mapping[str, Any]) -> tuple[str, str]:
    """The message and hint for ``error``, raised rendering with ``context`` (runner.run.prompts.context_for).

    A top-level variable gets the nearest variable there is, else the advice to define it under
    ``vars:``; an attribute of ``case`` or ``vars`` is named as such (``case has no attribute 'x'``),
    with the nearest of their attributes, else the list of ``case``'s or that advice; a key another mapping
    lacks (a tool of ``tools`` in a loop) gets the nearest of its keys, else the list of them; anything else
    keeps jinja's message and the advice to check its spelling.
    """
    name, owner = str(error.name), error.owner
    if owner is missing:
        return error.message or f"{name!r} is undefined", did_you_mean(name, list(context), _VARS_HINT)
    for variable, otherwise in (("case", ""), ("vars", _VARS_HINT)):
        if variable in context and owner is context[variable]:
            have = [str(key) for key in owner]
            hint = did_you_mean(name, have, otherwise or f"{variable} has " + ", ".join(have))
            return f"{variable} has no attribute {name!r}", hint
    if isinstance(owner, Mapping):  # a key of a value the template holds, such as a tool in {% for t in tools %}
        have = [str(key) for key in owner]
        return error.message or f"no key {name!r}", did_you_mean(name, have, "it has " + (", ".join(have) or "no key"))
    return error.message or "undefined variable", "check its spelling"
