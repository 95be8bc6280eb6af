"""Who talks to the agent: a case gives fixed ``turns`` or a simulated ``user``, never both, and a
scripted user has a script. Each error is reported where the value was written (the case or its defaults).
"""

from __future__ import annotations

import difflib
import functools
from typing import Any

from runner.errors import CaseFileError
from runner.names import SCRIPTED
from runner.spec.positions import Spot, has_path, written
from runner.spec.schema import case_schema

_EITHER = "give turns, the prompts to send, or user, a simulated user"


def conversation_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """The errors of one merged case's ``turns`` and ``user``: neither given (unless a misspelt key
    stands for one, reported as unknown already), both given, a scripted user without a script."""
    has_turns, user = "turns" in case, case.get("user")
    if not has_turns and user is None:
        unknown = [key for key in case if isinstance(key, str) and key not in _known_keys()]
        if any(difflib.get_close_matches(name, unknown, n=1) for name in ("turns", "user")):
            return []
        return [spot.error("missing required key 'turns'", hint=_EITHER)]
    if has_turns and user is not None:  # reported at the one the case itself writes, user where it writes both
        key = "turns" if has_path(spot.node, ["turns"]) and not has_path(spot.node, ["user"]) else "user"
        at = written([key], spot, defaults)
        hint = "remove one: turns are fixed prompts, a simulated user writes its own"
        return [at.error("a case gives turns or user, not both", [key], at=[key], key=True, hint=hint)]
    if isinstance(user, dict) and user.get("model") == SCRIPTED and "script" not in user:
        at = written(["user", "model"], spot, defaults)
        hint = "add user.script: the user's replies, in order; or give user.model a live model"
        return [at.error("the scripted user has no script", ["user", "model"], hint=hint)]
    return []


@functools.cache
def _known_keys() -> frozenset[str]:
    return frozenset(case_schema()["properties"])
