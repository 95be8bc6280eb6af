"""The scripted judge, ``scripted-judge:FILE``: an offline judge whose verdicts a YAML file gives, for
``--judge``, ``expect.judge.model`` and ``judge calibrate -j`` (the scripted provider itself cannot judge: it
replies with the case's script). Each rule of the file is tried in order on the final reply of what is judged:

    - when: "Hello|Hi"          # a regular expression searched in the final reply; no when: any reply
      score: 0.9                # or scores: [0.6, 0.8, 1.0], given in turn each time the same text is judged
      reasoning: It greets the user.

The first rule that matches answers ``{"score": ..., "reasoning": ...}``; with ``scores``, asking about the same
transcript again (``run --judge-repeats``) gives the next score, so a judge's noise can be played. A reply no rule
matches is no verdict (the run's ``judge_error``). Nothing is sent anywhere, no tokens are counted.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from runner.errors import Location, UserError, did_you_mean
from runner.patterns import PATTERN_TIMEOUT, compile_pattern
from runner.providers.base import Completion
from runner.providers.kind import ProviderKind, ProviderSpec

if TYPE_CHECKING:
    from runner.providers.probe import Diagnosis
    from runner.spec.case import Case
    from runner.spec.config import Config

PREFIX = "scripted-judge:"
_KEYS = ("when", "score", "scores", "reasoning")
_HINT = "each rule: {when?: REGEX, score: 0..1 or scores: [0..1, ...], reasoning?: TEXT}; see docs/judges.md"
_FINAL = "Final reply:\n"  # where the judge's prompt puts the reply (runner.checks.judge.judge_prompt)


@dataclass(frozen=True)
class Rule:
    """One rule: ``when`` (None: any reply), the ``scores`` given in turn (in [0, 1]) and the ``reasoning``."""

    when: regex.Pattern[str] | None
    scores: tuple[float, ...]
    reasoning: str


class ScriptedJudge:
    """Answers a judge's request from ``rules``: the first whose ``when`` is found in the final reply; the n-th
    request about the same text gets the rule's n-th score (cycling)."""

    def __init__(self, name: str, rules: Sequence[Rule], case: Case | None = None) -> None:
        self.name = name
        self._rules = rules
        self._asked: dict[str, int] = {}

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None
                 ) -> Completion:
        """The verdict of the first matching rule as JSON text, or a sentence (no verdict) when none matches."""
        prompt = str(messages[-1].get("content") or "")
        reply = prompt.rsplit(_FINAL, 1)[-1]
        for rule in self._rules:
            if rule.when is None or rule.when.search(reply, timeout=PATTERN_TIMEOUT) is not None:
                asked = self._asked.get(prompt, 0)
                self._asked[prompt] = asked + 1
                score = rule.scores[asked % len(rule.scores)]
                return Completion(json.dumps({"score": score, "reasoning": rule.reasoning}), finish_reason="stop")
        return Completion(f"no rule of {self.name} matches the final reply", finish_reason="stop")


def read_rules(path: Path) -> tuple[Rule, ...]:
    """The rules of a scripted judge's file. Raises UserError at the file, line and column of what is wrong."""
    file = str(path)
    try:
        data = YAML(typ="rt").load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the scripted judge's rules: {e}", Location(file), hint=_HINT) from e
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = Location(file, mark.line + 1, mark.column + 1) if mark is not None else Location(file)
        raise UserError(f"not YAML: {getattr(e, 'problem', e)}", where, hint=_HINT) from e
    if not isinstance(data, list) or not data:
        raise UserError("expected a list of rules", Location(file, 1, 1), hint=_HINT)
    return tuple(_rule(file, i, entry) for i, entry in enumerate(data))


def _rule(file: str, index: int, entry: Any) -> Rule:
    line, col = (entry.lc.line + 1, entry.lc.col + 1) if hasattr(entry, "lc") else (None, None)

    def wrong(message: str, hint: str = _HINT) -> UserError:
        return UserError(message, Location(file, line, col), f"[{index}]", hint)

    if not isinstance(entry, Mapping):
        raise wrong("a rule is a mapping")
    for key in entry:
        if key not in _KEYS:
            raise wrong(f"unknown key {key!r}", did_you_mean(str(key), _KEYS, "allowed: " + ", ".join(_KEYS)))
    scores = [entry["score"]] if "score" in entry else list(entry.get("scores") or [])
    if ("score" in entry) == ("scores" in entry) or not scores or not all(_unit(s) for s in scores):
        raise wrong("give score: a number from 0 to 1, or scores: a list of them")
    when = entry.get("when")
    try:
        pattern = None if when is None else compile_pattern(str(when))
    except regex.error as e:
        raise wrong(f"when: {when!r} is not a regular expression: {e}") from e
    return Rule(pattern, tuple(float(s) for s in scores), str(entry.get("reasoning", "")))


def _unit(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _resolve(name: str, config: Config | None, verbose: bool, stream: bool) -> ProviderSpec:
    return ProviderSpec(name, functools.partial(ScriptedJudge, name, read_rules(Path(name[len(PREFIX):]))))


def _precheck(name: str, config: Config | None, environ: Mapping[str, str]) -> None:
    read_rules(Path(name[len(PREFIX):]))


def _probe(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
           refused: str | None) -> Diagnosis:
    from runner.providers.probe import FAIL, OK, Diagnosis, Finding

    try:
        rules = read_rules(Path(name[len(PREFIX):]))
    except UserError as e:
        return Diagnosis(name, name, (Finding("key", FAIL, e.render()),))
    return Diagnosis(name, name, (Finding("key", OK, "none needed: a scripted judge answers from its rules"),
                                  Finding("endpoint", OK, f"none: offline, {len(rules)} rules")))


KIND = ProviderKind("scripted-judge", "an offline judge answering from a file of rules",
                    re.compile(re.escape(PREFIX) + ".+", re.DOTALL), _resolve, _probe, _precheck,
                    not_a_judge=None)
