"""The check registry: ``expect`` key -> check function; adding a kind touches one place plus the schema."""

from __future__ import annotations

from runner.checks.base import (
    BUDGET,
    OUTCOME,
    PROCESS,
    Check,
    CheckContext,
    CheckResult,
)
from runner.checks.budget import check_max_cost, check_max_tokens
from runner.checks.judge import check_judge
from runner.checks.outcome import (
    check_files,
    check_response_contains,
    check_response_matches,
    check_response_not_contains,
    check_verify,
)
from runner.checks.trace import check_trace
from runner.checks.turns import check_turns

CHECKS: dict[str, Check] = {
    "verify": check_verify,
    "files": check_files,
    "response_contains": check_response_contains,
    "response_not_contains": check_response_not_contains,
    "response_matches": check_response_matches,
    "trace": check_trace,
    "judge": check_judge,
    "max_tokens": check_max_tokens,
    "max_cost": check_max_cost,
}

__all__ = ["BUDGET", "CHECKS", "OUTCOME", "PROCESS", "CheckContext", "CheckResult", "run_checks"]


def run_checks(ctx: CheckContext) -> list[CheckResult]:
    """Run every per-turn check, then every check the case's ``expect`` names, in registry order; all of them, always."""
    results = check_turns(CHECKS, ctx)
    for key, check in CHECKS.items():
        if key in ctx.case.expect:
            results.extend(check(ctx.case.expect[key], ctx))
    return results
