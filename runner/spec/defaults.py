"""The one rule of a ``{defaults, cases}`` case file: how its defaults merge under each case."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

Add = Callable[[MutableMapping[str, Any], str, Any], None]
CaseMapping = TypeVar("CaseMapping", bound=MutableMapping[str, Any])


def _append(mapping: MutableMapping[str, Any], key: str, value: Any) -> None:
    mapping[key] = value


def merged_case(case: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """``merge_defaults`` of a copy of ``case``, copying only the mappings the merge writes into (a deep
    copy of each case, its mocks' schemas and all, was most of the time a large file took to check)."""
    merged = dict(case)
    for key, value in defaults.items():
        if key not in merged:
            merged[key] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(merged[key], Mapping):
            merged[key] = merged_case(merged[key], value)
    return merged


def merge_defaults(case: CaseMapping, defaults: Mapping[str, Any], add: Add = _append) -> CaseMapping:
    """``defaults`` merged under ``case``, in place, and ``case`` returned: the one rule of a
    ``{defaults, cases}`` file. Where both hold a mapping under a key, the two merge by the same
    rule; anywhere else the case's value wins (a list or scalar replaces the default's whole).
    A key only the defaults have gets a deep copy of their value, placed by ``add(mapping, key, value)``
    (default: appended; ``--record`` places them to keep its layout).
    """
    for key, value in defaults.items():
        if key not in case:
            add(case, key, copy.deepcopy(value))
        elif isinstance(value, Mapping) and isinstance(case[key], MutableMapping):
            merge_defaults(case[key], value, add)
    return case
