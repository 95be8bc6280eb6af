"""``--shard K/N``: the part of a run matrix that one of N machines runs.

A run belongs to shard ``1 + H mod N``, where H is the first 8 bytes (big-endian) of the SHA-256
of ``"<case full id>\\n<run number>"``: the same on every machine and Python (no salted ``hash``),
and independent of the order cases are found in, so adding a case moves no other run. Every arm
of a (case, run) falls in the same shard, which keeps a comparison's pairs together; every planned
(case, arm, run) is in exactly one shard. ``auto/N`` takes K from ``$JOB_COMPLETION_INDEX``, the
0-based index a Kubernetes Indexed Job gives each pod (K = index + 1).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
_FORM = re.compile(r"\s*(auto|[0-9]+)\s*/\s*([0-9]+)\s*")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1 <= index <= count)."""

    index: int
    count: int

    @property
    def label(self) -> str:
        """``K/N``, as ``--shard`` takes it."""
        return f"{self.index}/{self.count}"

    def holds(self, case_id: str, run: int) -> bool:
        """Whether run number ``run`` (1-based) of the case with full id ``case_id`` is in this shard."""
        return shard_of(case_id, run, self.count) == self.index


def shard_of(case_id: str, run: int, count: int) -> int:
    """The shard (1 to ``count``) that run ``run`` of case ``case_id`` belongs to (the module's rule)."""
    digest = hashlib.sha256(f"{case_id}\n{run}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def parse_shard(text: str, environ: Mapping[str, str]) -> Shard:
    """``K/N`` or ``auto/N`` (K from ``environ[INDEX_VARIABLE]``, 0-based) as a Shard.

    Raises ValueError with the message a user sees: bad syntax, N below 1, K of 0 or above N, and
    for ``auto`` the variable unset, not a whole number or out of range.
    """
    form = _FORM.fullmatch(text)
    if form is None:
        raise ValueError(f"expected K/N (shard K of N, e.g. 1/4) or auto/N, got {text!r}")
    count = int(form[2])
    if count < 1:
        raise ValueError(f"{text}: N, the number of shards, must be at least 1")
    if form[1] == "auto":
        value = environ.get(INDEX_VARIABLE)
        if value is None:
            raise ValueError(f"auto/{count} takes K from ${INDEX_VARIABLE} (set by a Kubernetes Indexed Job), "
                             f"which is not set: give K/{count} instead")
        if not value.strip().isdigit() or int(value) >= count:
            raise ValueError(f"auto/{count}: ${INDEX_VARIABLE} is {value!r}, expected a whole number from 0 to {count - 1}")
        return Shard(int(value) + 1, count)
    index = int(form[1])
    if not 1 <= index <= count:
        raise ValueError(f"{text}: K must be from 1 to {count} (shards are counted from 1)")
    return Shard(index, count)


def shard_summary(shard: Shard, keys: Sequence[tuple[str, str, str, int, str | None]], case_ids: Sequence[str],
                  arm_labels: Sequence[str]) -> dict[str, Any]:
    """What a shard's report.json records under ``shard``, for ``tooltrial merge``: ``{index, count,
    plan, planned, selected, cases, arms}``. ``keys`` are the whole (unsharded) plan's run keys
    (case, provider, prompt, run, tool definitions) in plan order; ``plan`` is the SHA-256 (hex) of them, one per
    line (the tool definitions only where ``-T`` gave some), so
    shards of one suite agree on it; ``planned`` counts them, ``selected`` those in this shard;
    ``cases`` and ``arms`` are the suite's case full ids and arm labels in plan order."""
    text = "\n".join("\t".join(str(part) for part in key if part is not None) for key in keys)
    return {
        "index": shard.index,
        "count": shard.count,
        "plan": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "planned": len(keys),
        "selected": sum(shard.holds(case, run) for case, _, _, run, _ in keys),
        "cases": list(case_ids),
        "arms": list(arm_labels),
    }
