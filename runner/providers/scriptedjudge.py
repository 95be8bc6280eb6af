"""The scripted judge, ``scripted-judge:FILE``: an offline judge whose verdicts a YAML file gives, for
``--judge``, ``expect.judge.model`` and ``judge calibrate -j`` (the scripted provider itself cannot judge: it
replies with the case's script). Each rule of the file is tried in order on the final reply of what is judged:

    - when: "Hello|Hi"          # a regular expression searched in the final reply; no when: any reply
      score: 0.9                # or scores: [0.6, 0.8, 1.0], given in turn each time the same text is judged
      reasoning: It greets the user.

The first rule that matches answers ``{"score": ..., "reasoning": ...}``; with ``scores``, asking about the same
transcript again (``run --judge-repeats``) gives the next score, so a judge's noise can be played. A reply no rule
matches is no verdict (NoVerdict: the run's ``judge_error``, an item a calibration leaves out). Nothing is sent
anywhere, no tokens are counted. The judge is its file's text: its calibrations are keyed by the text's SHA-256.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import regex
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from runner.errors import CaseFileError, Location, UserError, UserErrors, did_you_mean, in_file_order
from runner.patterns import PATTERN_TIMEOUT, compile_pattern
from runner.providers.base import Completion, NoVerdict
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
        """The verdict of the first matching rule as JSON text. Raises NoVerdict when no rule matches."""
        prompt = str(messages[-1].get("content") or "")
        reply = prompt.rsplit(_FINAL, 1)[-1]
        for rule in self._rules:
            if rule.when is None or rule.when.search(reply, timeout=PATTERN_TIMEOUT) is not None:
                asked = self._asked.get(prompt, 0)
                self._asked[prompt] = asked + 1
                score = rule.scores[asked % len(rule.scores)]
                return Completion(json.dumps({"score": score, "reasoning": rule.reasoning}), finish_reason="stop")
        raise NoVerdict(f"no rule of {self.name} matches the final reply")


def read_rules(path: Path) -> tuple[tuple[Rule, ...], str]:
    """The rules of a scripted judge's file, and the SHA-256 (hex) of its text, what the judge is
    (runner.providers.kind.ProviderSpec.judge_identity). Raises UserError for a file that cannot be read or
    is not YAML, UserErrors listing every wrong rule, key and value at once, each at its own line and column."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = YAML(typ="rt").load(text)
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the scripted judge's rules: {e}", Location(file), hint=_HINT) from e
    except YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = Location(file, mark.line + 1, mark.column + 1) if mark is not None else Location(file)
        raise UserError(f"not YAML: {getattr(e, 'problem', e)}", where, hint=_HINT) from e
    if not isinstance(data, list) or not data:
        raise UserError("expected a list of rules", Location(file, 1, 1), hint=_HINT)
    errors: list[CaseFileError] = []
    rules = [_rule(file, data, i, errors) for i in range(len(data))]
    if errors:
        raise UserErrors(in_file_order(errors))
    return tuple(r for r in rules if r is not None), hashlib.sha256(text.encode("utf-8")).hexdigest()


def _at(file: str, node: Any, step: Any, kind: str = "value") -> Location:
    """Where ``node``'s item or key ``step`` is written (``kind``: ``item``, ``key`` or ``value``), 1-based."""
    try:
        line, col = getattr(node.lc, kind)(step)
    except (AttributeError, KeyError, IndexError, TypeError):
        return Location(file)
    return Location(file, line + 1, col + 1)


def _rule(file: str, rules: Any, index: int, errors: list[CaseFileError]) -> Rule | None:
    """Rule ``index`` of ``rules``, or None after adding to ``errors`` each thing wrong with it, at its place."""
    entry, name = rules[index], f"[{index}]"

    def wrong(message: str, where: Location, path: str = name, hint: str = _HINT) -> None:
        errors.append(CaseFileError(message, where, path, hint))

    if not isinstance(entry, Mapping):
        wrong("a rule is a mapping", _at(file, rules, index, "item"))
        return None
    before = len(errors)
    for key in entry:
        if key not in _KEYS:
            wrong(f"unknown key {key!r}", _at(file, entry, key, "key"),
                  hint=did_you_mean(str(key), _KEYS, "allowed: " + ", ".join(_KEYS)))
    if "score" in entry and "scores" in entry:
        wrong("give score or scores, not both", _at(file, entry, "scores", "key"))
    elif "score" not in entry and "scores" not in entry:
        wrong("give score: a number from 0 to 1, or scores: a list of them", _at(file, rules, index, "item"))
    scores = [(entry["score"], _at(file, entry, "score"), f"{name}.score")] if "score" in entry else []
    given = entry.get("scores")
    if "scores" in entry and (not isinstance(given, list) or not given):
        wrong("give a list of numbers from 0 to 1", _at(file, entry, "scores"), f"{name}.scores")
    elif isinstance(given, list):
        scores += [(s, _at(file, given, j, "item"), f"{name}.scores[{j}]") for j, s in enumerate(given)]
    for score, where, path in scores:
        if not _unit(score):
            shown = json.dumps(score) if isinstance(score, bool) or score is None else repr(score)
            wrong(f"{shown} is not a number from 0 to 1", where, path)
    when = entry.get("when")
    try:
        pattern = None if when is None else compile_pattern(str(when))
    except regex.error as e:
        wrong(f"{when!r} is not a regular expression: {e}", _at(file, entry, "when"), f"{name}.when")
    if len(errors) > before:
        return None
    return Rule(pattern, tuple(float(s) for s, _, _ in scores), str(entry.get("reasoning", "")))


def _unit(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


def _resolve(name: str, config: Config | None, verbose: bool, stream: bool) -> ProviderSpec:
    rules, sha256 = read_rules(Path(name[len(PREFIX):]))
    return ProviderSpec(name, functools.partial(ScriptedJudge, name, rules),
                        identity={"provider": "scripted-judge", "sha256": sha256})


def _precheck(name: str, config: Config | None, environ: Mapping[str, str]) -> None:
    read_rules(Path(name[len(PREFIX):]))


def _probe(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
           refused: str | None) -> Diagnosis:
    from runner.providers.probe import FAIL, OK, Diagnosis, Finding

    try:
        rules, _ = read_rules(Path(name[len(PREFIX):]))
    except UserError as e:
        return Diagnosis(name, name, (Finding("key", FAIL, e.render()),))
    except UserErrors as e:
        return Diagnosis(name, name, (Finding("key", FAIL, str(e)),))
    return Diagnosis(name, name, (Finding("key", OK, "none needed: a scripted judge answers from its rules"),
                                  Finding("endpoint", OK, f"none: offline, {len(rules)} rules")))


KIND = ProviderKind("scripted-judge", "an offline judge answering from a file of rules",
                    re.compile(re.escape(PREFIX) + ".+", re.DOTALL), _resolve, _probe, _precheck,
                    not_a_judge=None)
