"""The check registry: each check kind of the table (runner.checks.table) -> its function.

The table says what a kind is (its ``expect`` key, category, list and regex keys, failure causes);
this module only adds the function that makes its results, and stamps the kind's category on each.
"""

from __future__ import annotations

import dataclasses

from runner.checks.base import (
    BUDGET,
    OUTCOME,
    PROCESS,
    Check,
    CheckContext,
    CheckResult,
)
from runner.checks.budget import check_max_cost, check_max_tokens
from runner.checks.command import check_commands
from runner.checks.jsonreply import check_response_json
from runner.checks.judge import check_judge
from runner.checks.outcome import (
    check_files,
    check_response_contains,
    check_response_matches,
    check_response_not_contains,
    check_verify,
)
from runner.checks.table import KINDS
from runner.checks.trace import check_trace
from runner.checks.turns import check_turns
from runner.kinds import Category

FUNCTIONS: dict[str, Check] = {
    "verify": check_verify,
    "files": check_files,
    "response_contains": check_response_contains,
    "response_not_contains": check_response_not_contains,
    "response_matches": check_response_matches,
    "response_json": check_response_json,
    "trace": check_trace,
    "judge": check_judge,
    "check": check_commands,
    "max_tokens": check_max_tokens,
    "max_cost": check_max_cost,
}

__all__ = ["BUDGET", "CHECKS", "OUTCOME", "PROCESS", "CheckContext", "CheckResult", "run_checks"]


def _stamped(name: str, category: Category) -> Check:
    """The function of kind ``name``, its results stamped with ``category``, the table's for the kind (unless the
    kind sets its results' own: ``own_category``)."""
    check = FUNCTIONS[name]
    if KINDS[name].own_category:
        return check

    def run(spec: object, ctx: CheckContext) -> list[CheckResult]:
        return [dataclasses.replace(result, category=category) for result in check(spec, ctx)]

    return run


# In table order; a kind with no category (max_turns, a limit the run enforces) has no function.
CHECKS: dict[str, Check] = {name: _stamped(name, kind.category) for name, kind in KINDS.items()
                           if kind.category is not None}


def run_checks(ctx: CheckContext) -> list[CheckResult]:
    """Run every per-turn check, then every check the case's ``expect`` writes, in table order; all of them, always."""
    results = check_turns(CHECKS, ctx)
    for key, check in CHECKS.items():
        spec = ctx.case.expect.spec(key)
        if spec is not None:
            results.extend(check(spec, ctx))
    return results
