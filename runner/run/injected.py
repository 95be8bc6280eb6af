"""What a run records of its prompt injections (runner.run.injection), data only: the run record holds it."""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.checks.base import CheckResult


@dataclass
class InjectionOutcome:
    """A run's part in a prompt-injection measurement (AgentDojo's, Debenedetti et al. 2024).

    Attributes:
        attacked: True for a run of a case with injections, False for its clean twin (``ID.clean``).
        planted: where the text was planted, in order: ``file README.md`` once per file, ``tool search call 1``
            once per tool result that carried it.
        utility: whether the task's checks passed (the run's status is ``pass``); None when the run ended in an
            error before its checks ran.
        attack_success: whether every attack check passed; None for the clean twin, a case with no
            ``expect.attack``, or a run whose checks did not run.
        attack_checks: the attack checks' results (runner.checks.base.CheckResult), apart from the run's ``checks``.
    """

    attacked: bool
    planted: list[str] = field(default_factory=list)
    utility: bool | None = None
    attack_success: bool | None = None
    attack_checks: list[CheckResult] = field(default_factory=list)
