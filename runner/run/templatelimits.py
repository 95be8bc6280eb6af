"""The Jinja environment prompt templates render in: sandboxed, and bounded in size and in time.

Templates (turns, ``system:``, ``-P`` files) are case authors' code, run in
tooltrial's own process, so one that builds ten gigabytes (``'a' * 10**10``,
``'a'.center(10**10)``, ``'{:>9999999999}'.format(1)``) or loops for hours
would take the whole suite with it. Jinja's sandbox refuses unsafe attributes
and ranges of more than 100,000 items; on top of it:

- size: no operator (``*``, ``**``, ``%``, ``+``), text method (``center``,
  ``ljust``, ``rjust``, ``zfill``, ``expandtabs``, ``replace``, ``join``,
  ``translate``, ``format``), filter or call builds or takes a value of more
  than ``MAX_SIZE`` characters, and no integer of more than ``MAX_BITS`` bits;
  a value's size is the text it stands for, counted through nested lists,
  tuples and mappings (a part shared many times counts each time, as ``str()``
  would write it). Each value written out, and the whole output, is bounded too.
- time: a render stops after ``RENDER_SECONDS`` of its thread's CPU time (a busy machine fails none); each
  loop step (``{% for %}`` goes through ``Budget.loop``), call, operator and output chunk checks it.

Not bounded: one C-level operation on a value literals built by sharing (hashing nested tuples).
"""

from __future__ import annotations

import functools
import inspect
import re
import string
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, Template, nodes
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum

MAX_SIZE = 1_000_000  # characters (list items count too) one value in a template may stand for
MAX_BITS = 1_000_000  # bits of one integer (about 300,000 digits)
RENDER_SECONDS = 1.0  # CPU seconds of the rendering thread one render may take
BUDGET = "__tooltrial_budget"  # the name the compiled loops find the render's Budget under

_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")
_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(\d*)[,_]?(?:\.(\d+))?")


class LimitError(Exception):
    """A render went past a limit: ``message`` says which, ``hint`` what to write instead."""

    def __init__(self, message: str, hint: str) -> None:
        self.message, self.hint = message, hint
        super().__init__(message)


def size(value: Any, limit: int = MAX_SIZE) -> int:
    """Characters ``value`` stands for as text, walked through lists, tuples, sets and mappings;
    the count stops once it passes ``limit`` (a list holding itself passes it too)."""
    total, stack = 0, [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, dict):  # not jinja's Context, a Mapping filters get first
            total += 2 + 2 * len(item)
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            total += 2 + len(item)
            stack += item
        else:
            total += 1
    return total


def check(built: int, what: str = "a value") -> None:
    """Raise LimitError when ``built`` (characters) passes ``MAX_SIZE``."""
    if built > MAX_SIZE:
        hint = "a prompt needs far less: build shorter text, or loop over fewer items"
        raise LimitError(f"the template builds {what} of more than {MAX_SIZE:,} characters", hint)


def _bits(bits: int) -> None:
    if bits > MAX_BITS:
        raise LimitError(f"the template builds an integer of more than {MAX_BITS:,} bits", "use smaller numbers")


@dataclass
class Budget:
    """One render's deadline (``time.thread_time()`` seconds: its thread's CPU time) and the text it has written so far."""

    deadline: float
    written: int = 0

    def tick(self) -> None:
        """Raise LimitError once the deadline has passed."""
        if time.thread_time() > self.deadline:
            hint = "a loop or a recursive macro runs too long: loop over fewer items"
            raise LimitError(f"the template ran for more than {RENDER_SECONDS:g} s of CPU time", hint)

    def loop(self, items: Iterable[Any]) -> Iterator[Any]:
        """``items``, checking the deadline every 256 of them."""
        for index, item in enumerate(items):
            if index % 256 == 0:
                self.tick()
            yield item

    def text(self, value: Any) -> Any:
        """``value`` as it is: a ``~`` operand, passed here so that ``call`` checks its size first."""
        return value

    def write(self, chunk: str) -> str:
        """``chunk`` of the output, once the whole output so far is within ``MAX_SIZE``."""
        self.written += len(chunk)
        check(self.written, "an output")
        self.tick()
        return chunk


def _int(value: Any) -> int:
    """``value`` when it is an integer, else 0: Python raises its own error for the call."""
    return value if isinstance(value, int) else 0


def _replaced(text: str, old: Any, new: Any, count: Any = -1) -> int:
    if not isinstance(old, str) or not isinstance(new, str):
        return 0
    found = text.count(old) if old else len(text) + 1
    if isinstance(count, int) and count >= 0:
        found = min(found, count)
    return len(text) + found * max(0, len(new) - len(old))


def _percent(text: str, args: Any) -> int:
    """The most characters ``text % args`` can write."""
    conversions = _PERCENT.findall(text)
    widths = sum(int(part) for found in conversions for part in found if part.isdigit())
    numbers = args if isinstance(args, tuple) else (args,)
    starred = sum(1 for found in conversions for part in found if part == "*")
    widths += starred * max((_int(a) for a in numbers), default=0)
    values = args.values() if isinstance(args, Mapping) else numbers
    return len(text) + widths + len(conversions) * max((size(v) for v in values), default=0)


def _braces(text: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    """The most characters ``text.format(*args, **kwargs)`` can write."""
    fields = [spec for _, name, spec, _ in string.Formatter().parse(text) if name is not None]
    values = [*args, *kwargs.values()]
    widest = max((_int(v) for v in values), default=0)  # a width given by a nested field: {:{w}}
    widths = 0
    for spec in fields:
        found = _SPEC.match(spec or "")
        widths += sum(int(n) for n in found.groups() if n) if found else 0
        widths += widest * (spec or "").count("{")
    return len(text) + widths + len(fields) * max((size(v) for v in values), default=0)


_TEXT_METHODS: dict[str, Callable[..., int]] = {  # str method -> the most characters a call can build
    "center": lambda s, width=0, *_: _int(width),
    "ljust": lambda s, width=0, *_: _int(width),
    "rjust": lambda s, width=0, *_: _int(width),
    "zfill": lambda s, width=0: _int(width),
    "expandtabs": lambda s, tabsize=8: len(s) + s.count("\t") * _int(tabsize),
    "replace": _replaced,
    "translate": lambda s, table=None: len(s) * max(map(size, table.values() if isinstance(table, dict) else ()), default=1),
    "format": lambda s, *args, **kwargs: _braces(s, args, kwargs),
    "format_map": lambda s, mapping=None: _braces(s, (), mapping if isinstance(mapping, Mapping) else {}),
}


def _indented(text: Any, width: Any = 4) -> int:
    """The most characters ``|indent(width)`` writes: every line of ``text`` gets the indentation."""
    indentation = len(width) if isinstance(width, str) else _int(width)
    return len(str(text)) + (str(text).count("\n") + 1) * indentation


def _joined(items: list[Any], separator: Any = "") -> int:
    return sum(size(v) for v in items) + len(items) * size(separator)


# filter -> the most characters (or items) it can build, from its bound arguments;
# the filters in _LISTED get their iterable argument as a list, so that it can be counted.
_FILTERS: dict[str, Callable[[dict[str, Any]], int]] = {
    "center": lambda a: _int(a.get("width")),
    "indent": lambda a: _indented(a["s"], a.get("width", 4)),
    "replace": lambda a: _replaced(str(a["s"]), a.get("old"), a.get("new"), a.get("count")),
    "format": lambda a: _percent(str(a["value"]), tuple(a.get("args", ())) or dict(a.get("kwargs", {}))),
    "join": lambda a: _joined(a["value"], a.get("d", "")),
    "batch": lambda a: _int(a.get("linecount")),
    "slice": lambda a: _int(a.get("slices")),
    "sum": lambda a: 0 if isinstance(a.get("start", 0), (int, float)) else size(a["iterable"]) ** 2,
    "tojson": lambda a: size(a["value"]) * (1 + _int(a.get("indent"))),
}
_LISTED = {"join": "value", "sum": "iterable"}


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (the filter ``name``) refusing values past ``MAX_SIZE``, taken or (by ``_FILTERS``) built."""
    if getattr(function, "jinja_async_variant", False):  # the sync filter it wraps: this environment is not async
        function = function.__wrapped__  # type: ignore[attr-defined]  # set by jinja.async_utils.async_variant
    signature = inspect.signature(function)
    estimate = _FILTERS.get(name)

    @functools.wraps(function)  # keeps jinja's pass_context / pass_eval_context mark
    def bounded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            check(size(value))
        if estimate is None:
            return function(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        if name in _LISTED and _LISTED[name] in bound.arguments:
            bound.arguments[_LISTED[name]] = list(bound.arguments[_LISTED[name]])
        check(estimate(bound.arguments), f"a value (|{name})")
        return function(*bound.args, **bound.kwargs)

    return bounded


class BoundedEnvironment(SandboxedEnvironment):
    """A SandboxedEnvironment (StrictUndefined) whose operators, calls, filters and output keep within the
    limits above. Render with ``render_bounded``: it supplies the per-render Budget."""

    intercepted_binops = frozenset({"*", "**", "%", "+"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, keep_trailing_newline=False, finalize=_finalize)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}
        self.globals["lipsum"] = _lipsum

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _budget(context).tick()
        if operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            _bits(left.bit_length() * right)
        elif operator == "*" and isinstance(left, int) and isinstance(right, int):
            _bits(left.bit_length() + right.bit_length())
        elif operator == "*":
            sequence, times = (left, right) if isinstance(right, int) else (right, left)
            check(size(sequence) * _int(times))
        elif operator == "+" and not isinstance(left, (int, float)):
            check(size(left) + size(right))
        elif operator == "%" and isinstance(left, str):
            check(_percent(left, right))
        return super().call_binop(context, operator, left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        _budget(context).tick()
        for value in (*args, *kwargs.values()):
            check(size(value))
        method = getattr(obj, "__wrapped__", obj)  # the sandbox wraps str.format
        owner, name = getattr(method, "__self__", None), getattr(method, "__name__", "")
        if isinstance(owner, str) and name == "join":
            args = (list(args[0]),) if args else args  # counted once, then joined
            check(len(owner) * len(args[0]) + sum(size(v) for v in args[0]) if args else 0, "a value (str.join)")
        elif isinstance(owner, str) and name in _TEXT_METHODS:
            check(_TEXT_METHODS[name](owner, *args, **kwargs), f"a value (str.{name})")
        return super().call(context, obj, *args, **kwargs)


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """jinja's ``lipsum``, refused past ``MAX_SIZE`` (a word is at most 14 characters)."""
    check(_int(n) * _int(max) * 15, "a value (lipsum)")
    return generate_lorem_ipsum(n, html, min, max)


def _finalize(value: Any) -> Any:
    """Each ``{{ value }}`` written out: refused before ``str()`` makes it text when it stands for too much."""
    check(size(value))
    return value


def _budget(context: Context) -> Budget:
    return context.resolve_or_missing(BUDGET)


def guard_loops(template: nodes.Template) -> nodes.Template:
    """``template`` with every ``{% for %}`` iterating through the render's ``Budget.loop``,
    and every ``~`` operand passed through a call (so its size is checked)."""
    for loop in template.find_all(nodes.For):
        loop.iter = nodes.Call(_budget_attr("loop"), [loop.iter], [], None, None)
        loop.iter.set_lineno(loop.lineno)
    for concat in template.find_all(nodes.Concat):
        concat.nodes = [nodes.Call(_budget_attr("text"), [part], [], None, None) for part in concat.nodes]
        concat.set_lineno(concat.lineno)
    return template


def _budget_attr(name: str) -> nodes.Getattr:
    return nodes.Getattr(nodes.Name(BUDGET, "load"), name, "load")


def render_bounded(template: Template, context: Mapping[str, Any]) -> str:
    """``template`` (compiled by a BoundedEnvironment from ``guard_loops`` of its source) rendered with
    ``context`` and a fresh Budget. Raises what the template raises (LimitError past a limit), its
    traceback pointing at template lines as jinja's own ``render`` makes it."""
    budget = Budget(time.thread_time() + RENDER_SECONDS)
    frame = template.new_context({**context, BUDGET: budget})
    try:
        return "".join(budget.write(chunk) for chunk in template.root_render_func(frame))
    except Exception:  # noqa: BLE001 (jinja re-raises it, with template lines in the traceback)
        return template.environment.handle_exception()
