"""Small builders shared by tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.cases import Case


def make_case(**fields: Any) -> Case:
    """A Case with sensible defaults; any field can be overridden."""
    base: dict[str, Any] = {
        "group": "t",
        "id": "case",
        "source": Path("t.yml"),
        "line": 1,
        "turns": ("do it",),
    }
    base.update(fields)
    for key in ("turns", "setup", "tags", "deny", "mocks"):
        if isinstance(base.get(key), list):
            base[key] = tuple(base[key])
    if isinstance(base.get("tools"), list):
        base["tools"] = tuple(base["tools"])
    if isinstance(base.get("script"), list):
        base["script"] = tuple(base["script"])
    return Case(**base)
