"""The baseline guard (``tooltrial validate --baseline``): cases that a non-agent can pass test nothing.

Each case runs once with two stand-in models, through the real loop, tools,
workspace and checks:

- **do-nothing** answers every turn with ``Done.`` and never calls a tool;
- **random-tools** calls one to four offered tools, picked at random, with
  arguments made up from their parameter schemas, then answers ``Done.``; its
  choices are seeded by the case id, so a warning can be reproduced.

A case either one passes gets a warning: its checks do not tell an agent that
did the task from one that did not (after ToolEval's do-nothing and random
baselines).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.providers.base import Completion, Provider, ToolCall
from runner.providers.kind import ProviderSpec
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import PromptTemplate
from runner.run.record import PASS
from runner.spec.case import Case

REPLY = "Done."
_WORDS = ("", ".", "x", "*", "README.md", "main.py")


class DoNothing:
    """A model that replies ``Done.`` to everything and calls no tool."""

    name = "do-nothing"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        return Completion(content=REPLY)


class RandomTools:
    """A model that makes 1 to 4 random tool calls (over the whole run), then replies ``Done.``.

    ``seed`` fixes every choice (the case id, so a run can be repeated).
    """

    name = "random-tools"

    def __init__(self, seed: str) -> None:
        self._rng = random.Random(seed)
        self._left = self._rng.randint(1, 4)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        if self._left <= 0 or not tools:
            return Completion(content=REPLY)
        self._left -= 1
        function = self._rng.choice(tools)["function"]
        arguments = made_up_arguments(function.get("parameters") or {}, self._rng)
        call = ToolCall(id=f"random_{self._left}", name=function["name"], arguments=arguments)
        return Completion(content=None, tool_calls=(call,))


def made_up_arguments(schema: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """An arguments object for a JSON-Schema ``object``: every required property, about half the others."""
    required = set(schema.get("required", ()))
    return {
        name: _value(spec, rng)
        for name, spec in schema.get("properties", {}).items()
        if name in required or rng.random() < 0.5
    }


def _value(spec: Mapping[str, Any], rng: random.Random) -> Any:
    if "enum" in spec:
        return rng.choice(list(spec["enum"]))
    kind = spec.get("type")
    makers: dict[str, Callable[[], Any]] = {
        "integer": lambda: rng.randint(0, 3),
        "number": lambda: rng.uniform(0, 3),
        "boolean": lambda: rng.random() < 0.5,
        "array": list,
        "object": dict,
    }
    return makers[kind]() if kind in makers else rng.choice(_WORDS)


BASELINES: dict[str, Callable[[Case], Provider]] = {
    DoNothing.name: lambda case: DoNothing(),
    RandomTools.name: lambda case: RandomTools(case.full_id),
}


@dataclass(frozen=True)
class Weak:
    """A case that the ``agent`` baseline passed."""

    case: str
    agent: str


def weak_cases(cases: Sequence[Case], options: RunOptions, prompt: PromptTemplate) -> list[Weak]:
    """Run every case with every baseline; return each (case, baseline) that passed."""
    weak = []
    for case in cases:
        for name, factory in BASELINES.items():
            record = execute(case, Arm(ProviderSpec(name, factory), prompt), options)
            if record.status == PASS:
                weak.append(Weak(case.full_id, name))
    return weak
