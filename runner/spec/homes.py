"""Where a misplaced key belongs: the neighbouring levels of a case whose keys an unknown key may be.

A case's levels are the case itself, ``expect``, ``expect.trace`` and each ``expect.files.<path>``;
a ``{content, expect}`` turn adds its own ``expect`` and ``expect.trace``. A key written at one of
them that is a key of another (``max_calls`` under ``expect``) is most likely in the wrong place,
which a did-you-mean for a similar key at its own level would hide.
"""

from __future__ import annotations

from typing import Any

# (name, path from the case's top; "*" is any key or index), nearest first.
_CASE = (("expect", ("expect",)), ("expect.trace", ("expect", "trace")), ("top level", ()),
         ("expect.files.<path>", ("expect", "files", "*")))
_TURN = (("turns[N].expect", ("turns", "*", "expect")), ("turns[N].expect.trace", ("turns", "*", "expect", "trace")))


def home_hint(key: str, path: list[str | int], schema: dict[str, Any]) -> str:
    """``"'max_calls' belongs under expect.trace"`` when ``key``, unknown in the mapping at ``path``
    (a key path from the case's or the defaults' top), is a key of another level of the case
    ``schema`` (the case JSON Schema) describes; else ""."""
    here = _level(path)
    if here is None:
        return ""
    in_turn = here.startswith("turns")
    levels = (*_TURN, *_CASE) if in_turn else _CASE
    keys = _keys(schema)
    homes = [_render(name, path, in_turn) for name, _ in levels if name != here and key in keys[name]]
    return f"{key!r} belongs " + " or ".join(homes) if homes else ""


def _render(name: str, path: list[str | int], in_turn: bool) -> str:
    """A level's name as a hint says it, from the mapping at ``path``."""
    if name.startswith("turns"):
        return "under " + name.replace("turns[N]", f"turns[{path[1]}]")
    if name == "top level":
        return "at the case's top level"
    return f"under the case's {name}" if in_turn else f"under {name}"


def _level(path: list[str | int]) -> str | None:
    """The name of the level the mapping at ``path`` is, or None when it is none of them."""
    for name, pattern in (*_CASE, *_TURN):
        if len(pattern) == len(path) and all(p in ("*", step) for p, step in zip(pattern, path)):
            return name
    return None


def _keys(schema: dict[str, Any]) -> dict[str, set[str]]:
    """Each level's keys, from the case schema."""
    expect = schema["properties"]["expect"]["properties"]
    trace = set(expect["trace"]["properties"])
    return {
        "top level": set(schema["properties"]),
        "expect": set(expect),
        "expect.trace": trace,
        "expect.files.<path>": set(expect["files"]["additionalProperties"]["properties"]),
        "turns[N].expect": set(schema["$defs"]["turn"]["properties"]["expect"]["properties"]),
        "turns[N].expect.trace": trace,
    }
