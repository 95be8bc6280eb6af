"""The rules on the tools and parameters a case names, which the schema cannot say: a check that
can never pass is an error, one that checks nothing a warning.

Every name ``tools``, ``deny``, each ``faults`` item's ``tool`` (but ``*``) and the trace checks (the case's and each turn's: ``expected``,
``exact``, ``exact_unordered``, ``must_include``, ``avoid``, ``order``, the keys of ``args``, each
``calls`` item's ``name``) write must be a builtin tool, one of the case's mocks or a name under one
of its MCP servers' prefixes (runner.spec.offered; an error, with a did-you-mean); a ``SERVER__*``
pattern selects only in ``tools`` and ``deny``. Beyond that, by what the check can do:

- ``expected``, ``must_include``, ``exact``, ``exact_unordered``, ``order``, ``args`` and ``calls``
  naming a tool the case does not offer (its ``tools`` leave it out) or denies: an error, since only
  calls that ran count for them (and for accuracy);
- ``avoid`` and ``deny`` naming a tool the case does not offer: a warning (it can never be called); so is a
  fault of a tool the case does not offer or denies (it never fires), and its ``when`` is an ``args`` spec;
- an ``args`` spec (or a ``calls`` item's ``args``, or the spec inside ``{exact: SPEC}``) naming a parameter the tool's schema does not declare (``properties``): an error
  when the schema allows no other (``additionalProperties: false``, as every builtin's does), else
  a warning (the model is never told of it); ``{absent: true}`` for it is a warning (it always holds).
  Nested object specs are checked against nested ``properties`` the same way. A mock without
  ``properties`` in its ``parameters`` has no rule;
- a one-key mapping in an ``args`` spec (at any depth, inside matchers too) whose key is no matcher
  but close to one (``{normalised: Paris}``, ``{optinal: x}``, ``{any_off: [...]}``) is read as an
  object spec: an error when the schema (a mock's ``parameters``, a builtin's own) gives that value a
  type other than ``object`` (no call can match), else a warning; both say which matcher was meant
  (``misspelt_matchers``; runner.spec.jsonpaths applies it to ``expect.response_json.paths`` too);
- a ``script`` call of a tool the case does not offer: a warning with the nearest offered name (``script_call_errors``).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Mapping
from typing import Any, NamedTuple

from runner.errors import CaseFileError, did_you_mean
from runner.spec.matchers import MATCHERS, is_matcher
from runner.spec.mcpservers import mcp_name_hint
from runner.spec.offered import offered_tools, offers
from runner.spec.positions import Spot, written
from runner.tools.registry import BUILTINS

Path = list[str | int]

# The trace keys whose items name tools, and what a name the case cannot call does to each.
_NEVER_PASSES = ("exact", "exact_unordered", "must_include", "order")
_TRACE_LISTS = ("expected", *_NEVER_PASSES, "avoid")


def tool_rule_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """Every error and warning (CaseFileWarning) of the rules above for one merged case."""
    named_tools = _named_tools(case)
    if not named_tools:
        return []
    mocks = [m for m in _list(case.get("mocks")) if isinstance(m, dict) and isinstance(m.get("name"), str)]
    servers = [s["name"] for s in _list(case.get("mcp")) if isinstance(s, dict) and isinstance(s.get("name"), str)]
    known = offered_tools(None, (m["name"] for m in mocks), servers)
    tools = case.get("tools")
    offered = offered_tools([t for t in tools if isinstance(t, str)] if isinstance(tools, list) else None,
                            (m["name"] for m in mocks), servers)
    denied = [name for name in _list(case.get("deny")) if isinstance(name, str)]
    schemas: dict[str, Any] = {**_BUILTIN_SCHEMAS, **{m["name"]: m.get("parameters") for m in mocks}}
    errors = []
    for named in named_tools:
        at = written(named.path, spot, defaults)
        key = named.role == "args"
        label = named.path[:-1] if key else named.path
        if named.name.endswith("*") and named.role not in ("tools", "deny"):
            hint = "name one tool: SERVER__* selects only in tools and deny"
            errors.append(at.error(f"{named.name!r} is a pattern", label, at=named.path, key=key, hint=hint))
            continue
        if not offers(known, named.name):
            hint = mcp_name_hint(named.name, servers) or did_you_mean(named.name, known, "known tools: " + ", ".join(known))
            errors.append(at.error(f"unknown tool {named.name!r}", label, at=named.path, key=key, hint=hint))
            continue
        problem = _unusable(named.name, named.role, offered, denied)
        if problem is not None:
            message, hint, warning = problem
            make = at.warning if warning else at.error
            errors.append(make(message, label, at=named.path, key=key, hint=hint))
        elif named.args is not None:
            spec = _walk(case, named.args)
            errors += _parameter_errors(spec, schemas.get(named.name), named.name, named.args, spot, defaults)
            errors += misspelt_matchers(spec, schemas.get(named.name), named.args, spot, defaults, top=True)
    return errors


def script_call_errors(case: dict[str, Any], spot: Spot, defaults: Spot | None) -> list[CaseFileError]:
    """A warning at each ``script`` call (``script[i].tool_calls[j].name``) of a tool the case does not offer: the
    scripted call is refused as an unknown tool's (``grepp`` where ``grep`` was meant), with the nearest offered name."""
    named = [call for reply in _list(case.get("script")) for call in _list(_get(reply, "tool_calls"))]
    if not any(isinstance(_get(call, "name"), str) for call in named):
        return []  # nothing to ask which tools the case offers about (a large suite loads without the question)
    mocks = [m["name"] for m in _list(case.get("mocks")) if isinstance(_get(m, "name"), str)]
    servers = [s["name"] for s in _list(case.get("mcp")) if isinstance(_get(s, "name"), str)]
    tools = case.get("tools")
    offered = offered_tools([t for t in tools if isinstance(t, str)] if isinstance(tools, list) else None, mocks, servers)
    errors: list[CaseFileError] = []
    for i, reply in enumerate(_list(case.get("script"))):
        for j, call in enumerate(_list(_get(reply, "tool_calls"))):
            name = _get(call, "name")
            if isinstance(name, str) and not offers(offered, name):
                path: Path = ["script", i, "tool_calls", j, "name"]
                hint = did_you_mean(name, offered, f"offered: {', '.join(offered) or 'none'}")
                message = f"tool {name!r} is not offered by the case, so this scripted call is refused"
                errors.append(written(path, spot, defaults).warning(message, path, hint=hint))
    return errors


def _unusable(name: str, role: str, offered: tuple[str, ...], denied: list[str]) -> tuple[str, str, bool] | None:
    """(message, hint, whether only a warning) when ``role`` names a tool the case cannot call, else None."""
    usable = [n for n in offered if n not in denied]
    if role == "tools":
        return None
    if role == "faults":  # a fault of a tool never called fires never
        if offers(usable, name):
            return None
        why = "denied by" if offers(denied, name) else "not offered by"
        return f"tool {name!r} is {why} the case, so its fault never fires", "remove the fault, or offer the tool", True
    if role in ("deny", "avoid"):
        if offers(offered, name) or (role == "deny" and any(offers((name,), n) for n in offered)):
            return None
        what = "denying it changes nothing" if role == "deny" else "avoiding it checks nothing"
        hint = f"remove it, or add it to tools (offered: {', '.join(offered) or 'none'})"
        return f"tool {name!r} is not offered by the case, so {what}", hint, True
    if offers(usable, name) and not offers(denied, name):
        return None
    fix = "remove it from deny" if offers(denied, name) else f"add it to tools (offered: {', '.join(usable) or 'none'})"
    why = "denied by the case" if offers(denied, name) else "not offered by the case"
    return f"tool {name!r} is {why}", did_you_mean(name, usable, f"a call of it is refused and never counts; {fix}"), False


class _Named(NamedTuple):
    """A tool name the case writes: where (``path``; for ``args``, the key that is the name), the key
    that names it (``tools``, ``deny``, a trace list key, ``args`` or ``calls``), and where the
    argument spec for that tool is, if any."""

    path: Path
    name: str
    role: str
    args: Path | None = None


def _named_tools(case: dict[str, Any]) -> list[_Named]:
    """Each tool name the case writes, in ``tools``, ``deny``, ``faults`` and every trace (the case's and each turn's)."""
    found = [_Named(path, name, key) for key in ("tools", "deny") for path, name in strings_at(case.get(key), [key])]
    found += [_Named(["faults", i, "tool"], fault["tool"], "faults", ["faults", i, "when"])
              for i, fault in enumerate(_list(case.get("faults")))
              if isinstance(_get(fault, "tool"), str) and fault["tool"] != "*"]
    traces: list[tuple[Path, Any]] = [(["expect", "trace"], _get(case.get("expect"), "trace"))]
    for i, turn in enumerate(_list(case.get("turns"))):
        traces.append((["turns", i, "expect", "trace"], _get(_get(turn, "expect"), "trace")))
    for at, trace in traces:
        if not isinstance(trace, dict):  # no trace, or a wrong shape: the schema's business
            continue
        for key in _TRACE_LISTS:
            if key in trace:
                found += [_Named(path, name, key) for path, name in strings_at(trace[key], [*at, key])]
        for i, call in enumerate(_list(_get(trace, "calls"))):
            if isinstance(_get(call, "name"), str):
                found.append(_Named([*at, "calls", i, "name"], call["name"], "calls", [*at, "calls", i, "args"]))
        args = _get(trace, "args")
        for name in args if isinstance(args, dict) else ():
            if isinstance(name, str):
                found.append(_Named([*at, "args", name], name, "args", [*at, "args", name]))
    return found


def _parameter_errors(spec: Any, schema: Any, tool: str, path: Path, spot: Spot,
                      defaults: Spot | None) -> list[CaseFileError]:
    """The parameters ``spec`` (an ``args`` spec at ``path``) names that ``schema`` does not declare,
    at every depth where both are objects with named keys."""
    if is_matcher(spec) and "exact" in spec:  # {exact: SPEC}: SPEC names the parameters
        spec = spec["exact"]
        path = [*path, "exact"]
    if not isinstance(spec, Mapping) or is_matcher(spec) or not isinstance(schema, Mapping):
        return []
    declared = schema.get("properties")
    if not isinstance(declared, Mapping):
        return []
    closed = schema.get("additionalProperties") is False and "patternProperties" not in schema
    errors: list[CaseFileError] = []
    for name, wanted in spec.items():
        at = [*path, name]
        if name in declared:
            errors += _parameter_errors(wanted, declared[name], tool, at, spot, defaults)
            continue
        where = written(at, spot, defaults)
        hint = did_you_mean(str(name), [str(k) for k in declared], f"{tool}'s parameters here: {_names(declared)}")
        if isinstance(wanted, Mapping) and wanted.get("absent") is True and len(wanted) == 1:
            message = f"{tool} has no parameter {name!r}, so {{absent: true}} always holds"
            errors.append(where.warning(message, path, at=at, key=True, hint=hint))
        elif closed:
            message = f"{tool} has no parameter {name!r} (its schema allows no other), so no call can match"
            errors.append(where.error(message, path, at=at, key=True, hint=hint))
        else:
            message = f"{tool}'s schema does not declare the parameter {name!r}: the model is never told of it"
            errors.append(where.warning(message, path, at=at, key=True, hint=hint))
    return errors


@functools.lru_cache(maxsize=1024)
def _close_matcher(key: str) -> list[str]:
    """The matcher name ``key`` is likely a misspelling of (difflib, cutoff 0.75), as a list of at most one."""
    return difflib.get_close_matches(key, MATCHERS, n=1, cutoff=0.75)


def misspelt_matchers(spec: Any, schema: Any, path: Path, spot: Spot, defaults: Spot | None,
                      top: bool = False, subject: str = "call") -> list[CaseFileError]:
    """Each one-key mapping in the args spec ``spec`` (at ``path``; ``schema`` the JSON Schema of the
    value it matches, if known) whose key is no matcher name but close to one (difflib, cutoff 0.75:
    ``normalised``, ``optinal``, ``any_off``), so it is read as an object spec: an error when
    ``schema`` gives the value a type that is not ``object`` (it can never match), else a warning.
    A key the schema declares as a property is no misspelling. ``top``: ``spec`` names the
    parameters (a whole args spec, or the SPEC of ``{exact: SPEC}``), so its keys are no matchers. ``subject``: what
    the spec is matched against, as the error names it (``no call can match``; ``reply`` for a JSON reply's path)."""
    if not isinstance(spec, Mapping):
        return []
    if is_matcher(spec):
        name, inner = next(iter(spec.items()))
        if name in ("any_of", "all_of") and isinstance(inner, list):
            return [e for i, item in enumerate(inner)
                    for e in misspelt_matchers(item, schema, [*path, name, i], spot, defaults, subject=subject)]
        return misspelt_matchers(inner, schema, [*path, name], spot, defaults, top=name == "exact", subject=subject)
    declared = schema.get("properties") if isinstance(schema, Mapping) else None
    declared = declared if isinstance(declared, Mapping) else {}
    close = _close_matcher(str(next(iter(spec)))) if len(spec) == 1 and not top and next(iter(spec)) not in declared else []
    if close:
        key = next(iter(spec))
        where = written([*path, key], spot, defaults)
        types = schema.get("type") if isinstance(schema, Mapping) else None
        types = [types] if isinstance(types, str) else types if isinstance(types, list) else []
        hint = f"did you mean {close[0]!r}?"
        if types and "object" not in types:
            message = (f"{key!r} is not a matcher name, so this asks for an object, and the schema says"
                       f" {' or '.join(map(str, types))}: no {subject} can match")
            return [where.error(message, path, at=[*path, key], key=True, hint=hint)]
        message = f"{key!r} is not a matcher name, so this asks for an object with a key {key!r}"
        return [where.warning(message, path, at=[*path, key], key=True, hint=hint)]
    return [e for key, wanted in spec.items()
            for e in misspelt_matchers(wanted, declared.get(key), [*path, key], spot, defaults, subject=subject)]


# A builtin's parameters as the rules read them: its own JSON Schema, as a mock's, so a parameter it does not declare
# is an error (it allows no other), and so is a misspelt matcher on a parameter it types other than object.
_BUILTIN_SCHEMAS = {name: tool.parameters for name, tool in BUILTINS.items()}


def _names(declared: Mapping[Any, Any]) -> str:
    return ", ".join(map(str, declared)) or "none"


def _walk(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step] if isinstance(value, list) and isinstance(step, int) else _get(value, str(step))
    return value


def _get(value: Any, key: str) -> Any:
    """``value[key]`` when ``value`` is a mapping; else None (a wrong shape is the schema's business)."""
    return value.get(key) if isinstance(value, dict) else None


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def strings_at(value: Any, path: Path) -> list[tuple[Path, str]]:
    """(path, text) of each string of a string-or-list value; other items are the schema's business."""
    if isinstance(value, str):
        return [(path, value)]
    return [([*path, i], item) for i, item in enumerate(_list(value)) if isinstance(item, str)]
