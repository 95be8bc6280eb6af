"""A case's prompt injections as written: ``inject:`` (attacker text planted in a tool's results or a
workspace file), ``expect.attack`` (the checks the attacker wanted to pass), and the clean twin every
case with injections also runs as (``ID.clean``: the same case without them), so a suite measures
utility without attack, utility under attack and attack success side by side (AgentDojo's measures,
Debenedetti et al. 2024).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runner.spec.expect import Expect, expect_of

if TYPE_CHECKING:
    from runner.spec.case import Case

TWIN_SUFFIX = ".clean"  # the clean twin's id is the case's id and this
ATTACK = "attack"  # the key under ``expect``


@dataclass(frozen=True)
class Injection:
    """One planted text: appended to the results of ``tool`` (its ``call``-th call that runs, 1-based; None: every
    call), or to the workspace file ``file`` (workspace-relative, created if missing) after setup."""

    text: str
    tool: str | None = None
    call: int | None = None
    file: str | None = None


def injections_of(data: Mapping[str, Any]) -> tuple[Injection, ...]:
    """The validated case mapping's ``inject`` items as Injections; () when it has none."""
    return tuple(Injection(**item) for item in data.get("inject", ()))


def task_expect(data: Mapping[str, Any]) -> Expect:
    """The case's own checks: its validated ``expect`` mapping without ``attack``."""
    return expect_of({key: value for key, value in data.get("expect", {}).items() if key != ATTACK})


def attack_expect(data: Mapping[str, Any]) -> Expect | None:
    """The attacker's checks (``expect.attack``) as an Expect, lists normalised; None when the case has none."""
    attack = data.get("expect", {}).get(ATTACK)
    return None if attack is None else expect_of(attack)


def with_twins(cases: Iterable[Case]) -> list[Case]:
    """``cases``, each with injections followed by its clean twin: id ``ID.clean``, no injections, no attack
    checks, ``twin_of`` the case's id."""
    out: list[Case] = []
    for case in cases:
        out.append(case)
        if case.inject:
            out.append(dataclasses.replace(case, id=case.id + TWIN_SUFFIX, inject=(), attack=None, twin_of=case.id))
    return out
