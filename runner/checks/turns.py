"""Per-turn checks: a turn written as ``{content, expect}`` is checked on its own.

The turn's ``expect`` takes the reply checks (``response_contains``,
``response_not_contains``, ``response_matches``) and ``trace``; they see that
turn's reply and only the tool calls made during that turn, exactly as they
stood when the turn ended. Each result is named ``turns[i].<check>`` and its
message starts with ``turn N:`` (1-based). A turn the run never finished fails
its checks with one ``turn N: never finished`` line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from runner.checks.base import Check, CheckContext, CheckResult
from runner.run.trajectory import Trajectory
from runner.spec.expect import TurnExpect


def check_turns(checks: Mapping[str, Check], ctx: CheckContext) -> list[CheckResult]:
    """Every per-turn check of the case, in turn order; ``checks`` is the registry to look kinds up in."""
    results: list[CheckResult] = []
    for index, expect in enumerate(ctx.case.turn_expect):
        if not expect.empty:
            results += _one_turn(index, expect, checks, ctx)
    return results


def _one_turn(index: int, expect: TurnExpect, checks: Mapping[str, Check], ctx: CheckContext) -> list[CheckResult]:
    prefix = f"turn {index + 1}: "
    if index >= len(ctx.trajectory.replies):
        return [CheckResult(f"turns[{index}]", False, prefix + "never finished")]
    view = Trajectory(
        messages=ctx.trajectory.messages,
        steps=[s for s in ctx.trajectory.steps if s.turn == index],
        replies=[ctx.trajectory.replies[index]],
    )
    turn_ctx = dataclasses.replace(ctx, trajectory=view)
    return [
        dataclasses.replace(result, check=f"turns[{index}].{result.check}", message=prefix + result.message)
        for key, check in checks.items()
        if (spec := expect.spec(key)) is not None
        for result in check(spec, turn_ctx)
    ]
