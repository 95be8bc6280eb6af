"""What a case expects, typed: ``Expect`` (the case's ``expect``), ``TurnExpect`` (a turn's), and
their parts ``FileExpect``, ``TraceExpect`` and ``JudgeExpect``, built from a validated mapping.

Every field is None where the case wrote nothing. Which values are lists is the check table's
to say (runner.checks.table ``list_keys``); a kind the table has and these classes have no field
for keeps its value, normalised, in ``more``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from runner.checks.table import KINDS, KeyPath

ArgumentSpec = Mapping[str, Any]  # {param: value or matcher}, runner.spec.matchers
Specs = TypeVar("Specs", bound="TurnExpect")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class FileExpect:
    """The checks on one workspace file (``expect.files.<path>``)."""

    contains: tuple[str, ...] | None = None
    not_contains: tuple[str, ...] | None = None
    matches: tuple[str, ...] | None = None
    exists: bool | None = None
    equals: str | None = None

    @property
    def content_rules(self) -> bool:
        """Whether any rule on the content is written (``contains``, ``not_contains``, ``matches``, ``equals``)."""
        return any(rule is not None for rule in (self.contains, self.not_contains, self.matches, self.equals))


@dataclass(frozen=True, slots=True)
class CallExpect:
    """One expected call of ``expect.trace.calls``: the tool ``name``, its ``args`` (None: any
    arguments), and ``exact_args`` / ``strict_types`` for this call (None: the trace's)."""

    name: str
    args: ArgumentSpec | None = None
    exact_args: bool | None = None
    strict_types: bool | None = None


@dataclass(frozen=True, slots=True)
class TraceExpect:
    """The checks and metrics on the tool calls (``expect.trace``): names, counts, order, arguments.

    ``calls`` are per-call expectations matched one to one against the calls that ran
    (runner.checks.calls), in order with ``calls_ordered``, with no other call with
    ``extra_calls`` false; ``strict_types`` holds argument values to the tool's parameter types.
    """

    expected: tuple[str, ...] | None = None
    exact: tuple[str, ...] | None = None
    exact_unordered: tuple[str, ...] | None = None
    must_include: tuple[str, ...] | None = None
    avoid: tuple[str, ...] | None = None
    max_calls: int | None = None
    min_calls: int | None = None
    min_attempts: int | None = None
    order: tuple[str, ...] | None = None
    minimal_calls: int | None = None
    args: Mapping[str, ArgumentSpec] | None = None
    exact_args: bool = False
    strict_types: bool = False
    calls: tuple[CallExpect, ...] | None = None
    calls_ordered: bool = False
    extra_calls: bool = True

    @property
    def wants_calls(self) -> bool:
        """Whether the trace asks for some tool call (``expected``, ``exact``, ``exact_unordered``,
        ``must_include``, ``order``, ``args`` or ``calls`` given, or ``min_calls`` / ``min_attempts`` /
        ``minimal_calls`` >= 1)."""
        named = any((self.expected, self.exact, self.exact_unordered, self.must_include, self.order, self.args,
                     self.calls))
        return named or max(self.min_calls or 0, self.min_attempts or 0) >= 1 or self.minimal_calls is not None


@dataclass(frozen=True, slots=True)
class JudgeExpect:
    """An LLM judge's grading (``expect.judge``): the rubric, the judge model (None: the default
    judge), the lowest passing score in [0, 1] (None: the judge's default), the lowest Cohen's kappa a
    calibration of the judge on this rubric must reach (``min_kappa``; None: tooltrial's default floor,
    runner.checks.judge.DEFAULT_MIN_KAPPA)."""

    rubric: str
    model: str | None = None
    threshold: float | None = None
    min_kappa: float | None = None


@dataclass(frozen=True, slots=True)
class TurnExpect:
    """The checks a ``{content, expect}`` turn writes, on that turn's reply and calls only.

    ``more`` maps a check-table kind with no field here to its normalised value (a list as a tuple).
    """

    response_contains: tuple[str, ...] | None = None
    response_not_contains: tuple[str, ...] | None = None
    response_matches: tuple[str, ...] | None = None
    trace: TraceExpect | None = None
    more: Mapping[str, Any] = field(default_factory=dict)

    def spec(self, name: str) -> Any:
        """What is written for the check kind ``name``; None when nothing is."""
        if name in _own_fields(type(self)):  # type: ignore[arg-type]  # mypy#11470: a class is hashable
            return getattr(self, name)
        return self.more.get(name)

    @property
    def empty(self) -> bool:
        """Whether nothing is written at all."""
        own = _own_fields(type(self))  # type: ignore[arg-type]  # mypy#11470: a class is hashable
        return all(self.spec(name) is None for name in own) and not self.more


@dataclass(frozen=True, slots=True)
class Expect(TurnExpect):
    """The checks of a case (``expect``), run once the last turn is done, and its turn limit.

    ``max_turns`` is the most model requests (None: the default); ``max_tokens`` and ``max_cost``
    (USD) are budgets; ``files`` maps a workspace-relative path to its checks.
    """

    verify: tuple[str, ...] | None = None
    files: Mapping[str, FileExpect] | None = None
    max_turns: int | None = None
    judge: JudgeExpect | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


def expect_of(data: Mapping[str, Any]) -> Expect:
    """The Expect of a validated ``expect`` mapping."""
    return _build(Expect, data)


def turn_expect_of(data: Mapping[str, Any]) -> TurnExpect:
    """The TurnExpect of a validated turn's ``expect`` mapping."""
    return _build(TurnExpect, data)


def normalised(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (an ``expect`` mapping) with each value at a kind's list key as a list; a copy."""
    out = dict(data)
    for name, kind in KINDS.items():
        if name in out:
            for path in kind.list_keys:
                out[name] = _listed(out[name], path)
    return out


def _listed(value: Any, path: KeyPath) -> Any:
    """``value`` with what lies at ``path`` in it as a list (a string becomes a one-item list)."""
    if not path:
        return as_list(value) if isinstance(value, (str, list, tuple)) else value
    key, rest = path[0], path[1:]
    if not isinstance(value, dict):
        return value
    keys = list(value) if key == "*" else [key] if key in value else []
    return {**value, **{k: _listed(value[k], rest) for k in keys}}


def as_list(value: T | Sequence[T]) -> list[T]:
    """A value written as one item or a list of them (``verify: make test`` or ``verify: [a, b]``), as a list:
    a list or tuple is copied, anything else (a string) is one item. Case loading reads every
    string-or-list key (``setup``, each check kind's list keys) through this."""
    return list(value) if isinstance(value, (list, tuple)) else [value]  # type: ignore[list-item]


def _tuples(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: tuple(value) if isinstance(value, list) else value for key, value in data.items()}


def _trace_of(trace: Mapping[str, Any]) -> TraceExpect:
    values = _tuples(trace)
    if values.get("calls") is not None:
        values["calls"] = tuple(CallExpect(**call) for call in values["calls"])
    return TraceExpect(**values)


_PARTS: dict[str, Callable[[Any], Any]] = {
    "files": lambda files: {path: FileExpect(**_tuples(rules)) for path, rules in files.items()},
    "trace": _trace_of,
    "judge": lambda judge: JudgeExpect(**judge),
}


def _build(cls: type[Specs], data: Mapping[str, Any]) -> Specs:
    values = normalised(data)
    own = _own_fields(cls)  # type: ignore[arg-type]  # mypy#11470: a class is hashable
    typed = {key: _PARTS.get(key, _plain)(value) for key, value in values.items() if key in own}
    return cls(**typed, more={key: _plain(value) for key, value in values.items() if key not in own})


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@functools.cache
def _own_fields(cls: type) -> frozenset[str]:
    """The check kinds ``cls`` has a field for (``more`` aside)."""
    return frozenset(f.name for f in dataclasses.fields(cls)) - {"more"}
