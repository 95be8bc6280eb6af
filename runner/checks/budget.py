"""Budget checks: ``expect.max_tokens`` (tokens, prompt + completion) and ``expect.max_cost`` (USD).

A budget can only be checked against what the provider reported: with no usage
(the scripted provider, a server that sends none) the check passes and says it
was not checked, since tooltrial never guesses token counts.
"""

from __future__ import annotations

from typing import Any

from runner.checks.base import CheckContext, CheckResult


def check_max_tokens(limit: Any, ctx: CheckContext) -> list[CheckResult]:
    if ctx.tokens is None:
        return [CheckResult("max_tokens", True, f"token budget {limit:,} not checked: no usage reported")]
    message = f"used {ctx.tokens:,} tokens, over the budget of {limit:,}"
    return [CheckResult("max_tokens", ctx.tokens <= limit, message)]


def check_max_cost(limit: Any, ctx: CheckContext) -> list[CheckResult]:
    if ctx.cost is None:
        return [CheckResult("max_cost", True, f"cost budget ${limit} not checked: cost unknown")]
    message = f"cost ${ctx.cost:.4f}, over the budget of ${limit:.4f}"
    return [CheckResult("max_cost", ctx.cost <= limit, message)]
