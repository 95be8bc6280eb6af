"""Case files: discovery, YAML loading with positions, schema validation, the Case model, filters."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

DEFAULT_MAX_TURNS = 30


@dataclass(frozen=True)
class Case:
    """One case of a group (a case file), after defaults are merged.

    Attributes:
        group: the case file's stem.
        id: unique within the group.
        source: the case file it came from.
        line: 1-based line of the case in ``source``.
        turns: prompt templates sent in order.
        expect: the validated ``expect`` mapping; check kinds read their own key.
        script: the scripted provider's replies (``content`` / ``tool_calls``) or None.
        timeout: wall-clock seconds for the whole run, or None for the default.
        tools: names offered to the model, None meaning every builtin plus the mocks.
    """

    group: str
    id: str
    source: Path
    line: int
    turns: tuple[str, ...]
    description: str = ""
    tags: tuple[str, ...] = ()
    fixture: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)
    setup: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    vars: Mapping[str, Any] = field(default_factory=dict)
    system: str | None = None
    tools: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()
    mocks: tuple[Mapping[str, Any], ...] = ()
    expect: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    script: tuple[Mapping[str, Any], ...] | None = None
    fixtures_dir: Path | None = None

    @property
    def full_id(self) -> str:
        return f"{self.group}/{self.id}"

    @property
    def max_turns(self) -> int:
        return int(self.expect.get("max_turns", DEFAULT_MAX_TURNS))
