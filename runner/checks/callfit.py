"""Whether a call that ran fits an expected call: the one rule ``expect.trace.calls`` pairs calls by
(runner.checks.calls), ``expect.trace.args`` looks for a call by (runner.checks.trace) and the
trajectory match scores by (runner.scoring.trajectorymatch).

A call fits an expected call ``{name, args?, exact_args?, strict_types?}`` when it is of that tool,
its values have the types of the tool's own parameter schema with ``strict_types``
(runner.spec.jsontypes), and its arguments match ``args`` (runner.spec.matchers; any arguments
without ``args``), exactly with ``exact_args``; either setting left out of the call is the trace's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.run.trajectory import Step
from runner.spec.case import Case
from runner.spec.expect import CallExpect, TraceExpect
from runner.spec.jsontypes import schema_type_mismatch
from runner.spec.matchers import arguments_mismatches
from runner.tools.registry import BUILTINS

Mismatches = list[str] | None  # why a call fails an expected call ([] when it fits; None: another tool)


def parameter_schemas(case: Case) -> dict[str, Any]:
    """Tool name -> its JSON-Schema parameters (``strict_types`` holds values to them): the builtins'
    (runner.tools.registry), each overridden by a mock of its name."""
    schemas: dict[str, Any] = {name: tool.parameters for name, tool in BUILTINS.items()}
    schemas.update({mock["name"]: mock.get("parameters") for mock in case.mocks})
    return schemas


def call_mismatches(call: CallExpect, step: Step, trace: TraceExpect, schemas: Mapping[str, Any]) -> Mismatches:
    """None when ``step`` is of another tool than ``call``; else every reason it fails ``call``, [] when
    it fits: first the type mismatch (``strict_types``), then one per argument that differs.

    ``trace`` gives ``exact_args`` and ``strict_types`` where ``call`` leaves them None; ``schemas``
    maps tool names to parameter schemas (``parameter_schemas``), read only with ``strict_types``.
    """
    if step.name != call.name:
        return None
    exact = trace.exact_args if call.exact_args is None else call.exact_args
    strict = trace.strict_types if call.strict_types is None else call.strict_types
    reasons = []
    if strict:
        typed = schema_type_mismatch(schemas.get(call.name), step.arguments)
        reasons += [typed] if typed else []
    if call.args is not None:
        reasons += arguments_mismatches(call.args, step.arguments, exact)
    return reasons


def fit_table(calls: Sequence[CallExpect], steps: Sequence[Step], trace: TraceExpect, case: Case) -> list[list[Mismatches]]:
    """``call_mismatches`` of each of ``calls`` (rows) against each of ``steps`` (columns), with the
    parameter schemas of ``case``."""
    schemas = parameter_schemas(case)
    return [[call_mismatches(call, step, trace, schemas) for step in steps] for call in calls]
