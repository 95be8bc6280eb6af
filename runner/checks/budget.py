"""Budget checks: ``expect.max_tokens`` (tokens, prompt + completion) and ``expect.max_cost`` (USD).

A budget can only be checked against what the provider reported: with no usage
(the scripted provider, a server that sends none) the check passes and says it
was left unchecked, since tooltrial never guesses token counts. A message says what
was used, within or over the budget.
"""

from __future__ import annotations

from typing import Any

from runner.checks.base import CheckContext, CheckResult


def check_max_tokens(limit: Any, ctx: CheckContext) -> list[CheckResult]:
    if ctx.tokens is None:
        return [CheckResult("max_tokens", True, f"token budget {limit:,} unchecked: usage unknown")]
    within = ctx.tokens <= limit
    message = f"used {ctx.tokens:,} tokens, {'within' if within else 'over'} the budget of {limit:,}"
    return [CheckResult("max_tokens", within, message)]


def check_max_cost(limit: Any, ctx: CheckContext) -> list[CheckResult]:
    if ctx.cost is None:
        return [CheckResult("max_cost", True, f"cost budget ${limit} unchecked: cost unknown")]
    within = ctx.cost <= limit
    message = f"cost ${ctx.cost:.4f}, {'within' if within else 'over'} the budget of ${limit:.4f}"
    return [CheckResult("max_cost", within, message)]
