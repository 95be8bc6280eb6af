"""What faults one run received and how it coped (``RunRecord.faults``): data only; the run sets its arm and seed
(runner.run.converse), the scoring its counts (runner.scoring.robustness)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FaultUse:
    """The faults of one run.

    Attributes:
        arm: the arm's ``--faults`` value (``off``, ``case`` or a profile's name), None when the suite had no
            ``--faults`` (the case's own faults, no fault dimension).
        seed: the seed its probabilistic faults drew under (runner.tools.faults.draw).
        received: its steps that got a fault (``Step.fault``).
        recovered: whether it passed despite at least one fault; None when it got none or was not scored.
        retries: calls of a faulted tool after that tool's first fault.
        calls_to_recover: calls from just after the first fault to the first that got a clean answer (no fault, no
            error), that one included; None when none did or it got no fault.
    """

    arm: str | None
    seed: int = 0
    received: int = 0
    recovered: bool | None = None
    retries: int = 0
    calls_to_recover: int | None = None
