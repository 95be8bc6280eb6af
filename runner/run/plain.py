"""Dataclasses as JSON-ready dicts, each field under its run-file key: how a run record is written."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from runner.run.requests import JSON_KEY

_LEAVES = (str, int, float, bool, type(None))


@functools.cache
def _field_keys(cls: type) -> tuple[tuple[str, str], ...]:
    """``(field name, its key in the run file)`` of each field of dataclass ``cls`` (runner.run.requests.JSON_KEY)."""
    return tuple((f.name, f.metadata.get(JSON_KEY, f.name)) for f in dataclasses.fields(cls))


def plain(value: Any) -> Any:
    """What ``dataclasses.asdict`` makes of ``value`` (dataclasses to dicts, each field under its run-file key;
    lists, tuples and dicts rebuilt as their own type), without its deep copy of every leaf: a record's leaves are str, numbers, None and
    enums, which a copy leaves as they are. A record is written once per run on the parent's one thread,
    where asdict's copying was the larger part of the write (benchmarks/executors.py, figure (k))."""
    if isinstance(value, _LEAVES):
        return value
    cls = type(value)
    if dataclasses.is_dataclass(cls):
        return {key: plain(getattr(value, name)) for name, key in _field_keys(cls)}
    if cls is list or cls is tuple:
        return cls(plain(item) for item in value)
    if cls is dict:
        return {plain(key): plain(item) for key, item in value.items()}
    return dataclasses.asdict(_Box(value))["value"]  # asdict's own way with anything else (named tuples...)


@dataclass
class _Box:
    value: Any
