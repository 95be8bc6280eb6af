"""What a template names that is not there: the undefined value that says which object lacked which
name, and the message and hint tooltrial shows for it (a did-you-mean from the names there are);
and the undefined value ``validate`` renders with to find every such name of a template, not just the first.

``{{ case.ful_id }}`` reads ``case has no attribute 'ful_id' (did you mean 'full_id'?)``, never
advice to define a ``case`` attribute under ``vars:``; ``{{ nme }}`` names the nearest variable.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from jinja2 import StrictUndefined, UndefinedError
from jinja2.exceptions import TemplateRuntimeError
from jinja2.utils import missing

from runner.errors import did_you_mean

_VARS_HINT = "define it under the case's vars:, or check its spelling"
MAX_RECORDED = 100  # distinct undefined names one render records; the rest show once these are fixed


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


Recorded = dict[tuple[int | None, str], MissingName]  # (line in the template, message): the first such error
_RECORDED: ContextVar[Recorded | None] = ContextVar("tooltrial_recorded_undefined", default=None)


@contextmanager
def recorded_names() -> Iterator[Recorded]:
    """Within it, a RecordingUndefined used in this thread (or task) adds its error to the mapping
    yielded, keyed by its template line (None: not known) and message, once each, at most MAX_RECORDED."""
    found: Recorded = {}
    token = _RECORDED.set(found)
    try:
        yield found
    finally:
        _RECORDED.reset(token)


class _StandIn:
    """What a recorded undefined value is in place of an error: empty text, nothing to iterate, False,
    0, or itself (an attribute, an item, a call, an operator's result), each use first calling ``_stand_in``."""

    __slots__ = ()

    def _stand_in(self) -> None:
        raise NotImplementedError

    def _itself(self, *args: Any, **kwargs: Any) -> Any:
        self._stand_in()
        return self

    def _false(self, *args: Any) -> bool:
        self._stand_in()
        return False

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _itself
    __div__ = __rdiv__ = __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _itself
    __mod__ = __rmod__ = __pow__ = __rpow__ = __pos__ = __neg__ = __call__ = __getitem__ = _itself
    __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __contains__ = __eq__ = _false

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        self._stand_in()
        return id(self)

    def __getattr__(self, name: str) -> Any:
        if name[:2] == "__":
            raise AttributeError(name)
        return self._itself()

    def __str__(self) -> str:
        self._stand_in()
        return ""

    def __len__(self) -> int:
        self._stand_in()
        return 0

    def __iter__(self) -> Iterator[Any]:
        self._stand_in()
        return iter(())

    def __int__(self) -> int:
        self._stand_in()
        return 0

    def __float__(self) -> float:
        self._stand_in()
        return 0.0

    def __complex__(self) -> complex:
        self._stand_in()
        return 0j


# jinja types StrictUndefined's operators as never returning; these return
class RecordingUndefined(_StandIn, NamedUndefined):  # type: ignore[misc]
    """A NamedUndefined that, used within ``recorded_names()``, records its MissingName and then stands in
    for a value (``_StandIn``), so the render goes on to the next undefined name. Outside
    ``recorded_names()``, and for any other error it stands for (the sandbox's), it raises as StrictUndefined does.

    A value built from it (``nme + 1``, ``nme.x``) is itself, recorded once, as ``nme``.
    """

    __slots__ = ("_missing", "_recorded")

    def __init__(self, hint: str | None = None, obj: Any = missing, name: str | None = None,
                 exc: type[TemplateRuntimeError] = UndefinedError) -> None:
        self._missing, self._recorded = exc is UndefinedError, False
        super().__init__(hint, obj, name, exc)

    def _stand_in(self) -> None:
        found = _RECORDED.get()
        if found is None or not self._missing:
            self._fail_with_undefined_error()
        if not self._recorded and len(found) < MAX_RECORDED:
            error = self._undefined_exception(self._undefined_message)
            assert isinstance(error, MissingName)
            found.setdefault((_template_line(), str(error)), error)
        self._recorded = True


def _template_line() -> int | None:
    """The line of the template whose code called this, innermost first (jinja's own mapping of its
    compiled code's lines to the template's), or None outside a template."""
    frame = inspect.currentframe()
    while frame is not None:
        template = frame.f_globals.get("__jinja_template__")
        if template is not None:
            line: int = template.get_corresponding_lineno(frame.f_lineno)
            return line
        frame = frame.f_back
    return None
