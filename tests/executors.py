"""What two executors' records of the same runs must share: everything but timing, ids and what
differs between any two runs of a case (workspace folders, git hashes and dates, test timings)."""

from __future__ import annotations

import re
from typing import Any

TIMING = frozenset({"run_id", "started", "duration", "latency", "queued", "rate_limited", "ttft", "created",
                    "finished", "generated", "wall", "duration_total", "duration_mean",
                    "litellm"})  # and litellm's version: recorded where the process had imported it
_VARYING = [(re.compile(r"/tmp/tooltrial-[A-Za-z0-9_]+"), "<workspace>"),
            (re.compile(r"\b[0-9a-f]{7,40}\b"), "<hash>"),
            (re.compile(r"Date: .*"), "Date: <date>"),
            (re.compile(r"in [0-9.]+s\b"), "in <seconds>s")]


def comparable(value: Any) -> Any:
    """``value`` (a record or report as plain data) without timing keys, its varying text made constant."""
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, (list, tuple)):
        return [comparable(v) for v in value]
    if isinstance(value, str):
        for pattern, constant in _VARYING:
            value = pattern.sub(constant, value)
    return value
