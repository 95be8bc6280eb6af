"""Declarative mock tools: a case's ``mocks`` as Tools that answer from the case file.

A mock is the agent's world held fixed (ToolEval's "mock the world, not the
agent's mind"): the model reasons live, the tool answers from canned responses
chosen by the call's arguments. Each mock in ``Case.mocks`` is a mapping
``{name, description, parameters, enum_match, responses: [{when?, result? | error?}]}``.

Choosing a response: the responses with a ``when`` are tried in order, and the
first whose ``when`` matches the arguments (runner.spec.matchers, partial)
wins; when none does, the response without ``when`` (the fallback) answers;
without a fallback the call gets ``Error: no mock response for these arguments``.
A ``result`` string is returned as is, any other JSON value serialised
(``json.dumps``); an ``error`` becomes an error result (``Error: <error>``).
Arguments that violate ``parameters`` never reach the mock: the Toolbox refuses
them with the schema violation, as it does for every tool; with ``enum_match:
normalized`` a string is in an ``enum`` when it equals a member once both are
normalised as BFCL does (``OPEN`` is in ``[open, closed]``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.spec.matchers import arguments_mismatch
from runner.tools.base import Tool, ToolContext, ToolError

NO_MATCH = "no mock response for these arguments"


@dataclass(frozen=True)
class MockResponse:
    """One canned answer: ``when`` (None: the fallback), and a ``result`` text or an ``error`` message."""

    when: Mapping[str, Any] | None
    result: str | None = None
    error: str | None = None

    @classmethod
    def parse(cls, spec: Mapping[str, Any]) -> MockResponse:
        """From a case's response mapping; a non-string ``result`` becomes its JSON text."""
        result = spec.get("result")
        if "result" in spec and not isinstance(result, str):
            result = json.dumps(result, ensure_ascii=False)
        return cls(spec.get("when"), result, spec.get("error"))


@dataclass(frozen=True)
class MockBehaviour:
    """The ``run`` of a mock Tool: picks a response for the arguments (see the module docstring)."""

    responses: tuple[MockResponse, ...]

    def choose(self, arguments: Mapping[str, Any], context: ToolContext | None = None) -> MockResponse | None:
        """The first response whose ``when`` matches, else the fallback, else None.

        Each ``matches`` search may take ``runner.patterns.PATTERN_TIMEOUT`` seconds; with a
        ``context``, the choice stops (ToolError) between responses once the run's time is up
        or on Ctrl-C.
        """
        for response in self.responses:
            if context is not None:
                context.check_stop()
            if response.when is not None and arguments_mismatch(response.when, arguments) is None:
                return response
        return next((r for r in self.responses if r.when is None), None)

    def __call__(self, arguments: dict[str, Any], context: ToolContext) -> str:
        response = self.choose(arguments, context)
        if response is None:
            raise ToolError(NO_MATCH)
        if response.error is not None:
            raise ToolError(response.error)
        return response.result or ""


def mock_tool(spec: Mapping[str, Any]) -> Tool:
    """One mock as a Tool; ``spec`` is a normalised ``Case.mocks`` item (every key present but
    ``enum_match``, ``exact`` when left out)."""
    behaviour = MockBehaviour(tuple(MockResponse.parse(r) for r in spec["responses"]))
    return Tool(spec["name"], spec["description"], spec["parameters"], behaviour, spec.get("enum_match", "exact"))


def mock_tools(mocks: Sequence[Mapping[str, Any]]) -> dict[str, Tool]:
    """``{name: Tool}`` for a case's mocks, in order; pass it as ``extra`` to ``build_toolbox``,
    where a mock named like a builtin replaces the builtin."""
    return {spec["name"]: mock_tool(spec) for spec in mocks}
