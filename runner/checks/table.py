"""The check table: every key a case may write under ``expect``, and what tooltrial makes of it.

It is data only, so the case loader reads it without importing the checks: the loader turns each
of a kind's list keys into a list (runner.spec.expect), the extra rules compile each of its regex
keys (runner.spec.rules), the registry runs its function (runner.checks.registry.CHECKS) and
stamps its category on the results, and the scorer finds the failure cause its failed results
point to (runner.scoring.metrics). The case schema's ``expect`` properties are held to the table's
names by tests/test_check_table.py. Adding a check kind: a row here, its function in the registry,
its property in ``schemas/case.schema.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.kinds import Category, FailureCause

KeyPath = tuple[str, ...]  # keys from a kind's value down to a value; "*" is every key of a mapping
WHOLE: KeyPath = ()  # the kind's value itself


@dataclass(frozen=True)
class Points:
    """The failure cause a failed result points to; with ``empty_reply``, only when the final reply is empty."""

    cause: FailureCause
    empty_reply: bool = False


@dataclass(frozen=True)
class CheckKind:
    """One ``expect`` key.

    Attributes:
        name: the key, and the name of the check results it gives (``trace`` gives ``trace.avoid``...).
        category: what its results are about; None for a limit the run enforces instead of a check
            made afterwards (``max_turns``: the turn limit; the run is an error of kind ``turn_limit``).
        per_turn: whether a ``{content, expect}`` turn may write it too.
        list_keys: where a value may be one string or a list of them (loaded as a list).
        regex_keys: where a value is a pattern, or a list of them, compiled when the file is loaded.
        matcher_keys: where any ``{matches: PATTERN}`` argument matcher, at any depth, is compiled too.
        causes: result name -> the failure cause a failed result of that name points to; a failed
            result of no name here points to none of its own (good_process_bad_outcome or unknown).
        own_category: its function sets each result's category (``check`` with ``process: true``), which the
            registry then keeps; ``category`` is the default it sets.
    """

    name: str
    category: Category | None
    per_turn: bool = False
    list_keys: tuple[KeyPath, ...] = ()
    regex_keys: tuple[KeyPath, ...] = ()
    matcher_keys: tuple[KeyPath, ...] = ()
    causes: Mapping[str, Points] = field(default_factory=dict)
    own_category: bool = False


def _rows(*kinds: CheckKind) -> dict[str, CheckKind]:
    return {kind.name: kind for kind in kinds}


_FILE_LISTS = (("*", "contains"), ("*", "not_contains"), ("*", "matches"))
_TRACE_LISTS = (("expected",), ("exact",), ("exact_unordered",), ("must_include",), ("avoid",), ("order",))
_MISSING_REPLY = Points(FailureCause.MISSING_OUTPUT, empty_reply=True)

# In the order the checks run and their results are recorded.
KINDS: dict[str, CheckKind] = _rows(
    CheckKind("verify", Category.OUTCOME, list_keys=(WHOLE,)),
    CheckKind("files", Category.OUTCOME, list_keys=_FILE_LISTS, regex_keys=(("*", "matches"),),
              causes={"files.exists": Points(FailureCause.MISSING_OUTPUT)}),
    CheckKind("response_contains", Category.OUTCOME, per_turn=True, list_keys=(WHOLE,),
              causes={"response_contains": _MISSING_REPLY}),
    CheckKind("response_not_contains", Category.OUTCOME, per_turn=True, list_keys=(WHOLE,),
              causes={"response_not_contains": _MISSING_REPLY}),
    CheckKind("response_matches", Category.OUTCOME, per_turn=True, list_keys=(WHOLE,), regex_keys=(WHOLE,),
              causes={"response_matches": _MISSING_REPLY}),
    CheckKind("response_json", Category.OUTCOME, matcher_keys=(("paths",),),
              causes={"response_json": _MISSING_REPLY}),
    CheckKind("max_turns", None),
    CheckKind("trace", Category.PROCESS, per_turn=True, list_keys=_TRACE_LISTS,
              matcher_keys=(("args",), ("calls",)), causes={
        "trace.avoid": Points(FailureCause.CALLED_FORBIDDEN),
        "trace.must_include": Points(FailureCause.WRONG_TOOL),
        "trace.exact": Points(FailureCause.WRONG_TOOL),
        "trace.exact_unordered": Points(FailureCause.WRONG_TOOL),
        "trace.order": Points(FailureCause.WRONG_TOOL),
        "trace.min_calls": Points(FailureCause.WRONG_TOOL),
        "trace.min_attempts": Points(FailureCause.WRONG_TOOL),
        "trace.args": Points(FailureCause.WRONG_ARGS),
        "trace.calls": Points(FailureCause.WRONG_ARGS),
        "trace.max_calls": Points(FailureCause.EXCESSIVE_CALLS),
    }),
    CheckKind("judge", Category.OUTCOME),
    CheckKind("check", Category.OUTCOME, list_keys=(WHOLE,), own_category=True,
              causes={"check": Points(FailureCause.CHECK_FAILED)}),
    CheckKind("max_tokens", Category.BUDGET, causes={"max_tokens": Points(FailureCause.OVER_BUDGET)}),
    CheckKind("max_cost", Category.BUDGET, causes={"max_cost": Points(FailureCause.OVER_BUDGET)}),
    CheckKind("attack", None),  # the attacker's checks (runner.spec.inject): apart from the run's verdict
)
