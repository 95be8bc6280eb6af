"""Faults as written: a case's (or its defaults') ``faults`` list and a run-wide profile (``run --faults FILE``),
turned into typed values. Where they are applied: runner.tools.faults.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import Location, UserError, UserErrors, in_file_order
from runner.resources import bundled
from runner.spec.fingerprint import digest
from runner.spec.positions import Spot
from runner.spec.schema import schema_errors, schema_validator
from runner.spec.source import parse, to_plain

KINDS = ("error", "timeout", "empty", "truncated", "garbage", "slow")
GARBAGE_FORMS = ("malformed_json", "wrong_types", "stale")
DEFAULT_SECONDS = 1.0  # a ``slow`` fault's added latency and a ``timeout`` fault's bound, when not given
DEFAULT_AT = 100  # characters a ``truncated`` result keeps, when not given
OFF, CASE = "off", "case"  # the --faults values that are no file: every fault off; the case's own only


@dataclass(frozen=True)
class Fault:
    """One declared fault: what happens to a call of ``tool`` (a tool name, ``*`` for any) that it fits.

    ``kind``: ``error`` (the result is ``Error: <message>``), ``timeout`` (the call waits ``seconds`` and is cut,
    the tool not run), ``empty`` (an empty result), ``truncated`` (the result cut at ``at`` characters), ``garbage``
    (``form``: ``malformed_json``, ``wrong_types`` or ``stale``, the last the ``result`` given, else the tool's
    previous result) or ``slow`` (``seconds`` of added latency, then the real result). It fits the calls numbered in
    ``calls`` (1-based, among that tool's calls; empty: every call) whose arguments match ``when`` (a partial match,
    runner.spec.matchers; None: any), and then fires with ``probability`` under the run's seed (runner.tools.faults).
    """

    tool: str
    kind: str
    message: str | None = None
    seconds: float = DEFAULT_SECONDS
    at: int = DEFAULT_AT
    form: str = "malformed_json"
    result: str | None = None
    calls: tuple[int, ...] = ()
    when: Mapping[str, Any] | None = None
    probability: float = 1.0


@dataclass(frozen=True)
class FaultProfile:
    """A ``--faults`` arm: its ``name`` (``off``, ``case`` or the profile's, default the file's stem), its
    ``faults`` (added after each case's own), the ``seed`` its probabilities draw under, whether it keeps each
    case's own faults (``case_faults``: False only for ``off``), and the ``digest`` of what it holds (provenance)."""

    name: str
    faults: tuple[Fault, ...] = ()
    seed: int = 0
    case_faults: bool = True
    digest: str | None = None


def fault_of(spec: Mapping[str, Any]) -> Fault:
    """A validated fault mapping (case.schema.json ``$defs/fault``) as a Fault."""
    calls = spec.get("call", [])
    return Fault(
        tool=spec["tool"], kind=spec["kind"], message=spec.get("message"),
        seconds=float(spec.get("seconds", DEFAULT_SECONDS)), at=int(spec.get("at", DEFAULT_AT)),
        form=spec.get("form", "malformed_json"), result=spec.get("result"),
        calls=tuple(calls) if isinstance(calls, list) else (calls,), when=spec.get("when"),
        probability=float(spec.get("probability", 1.0)))


def faults_of(specs: Sequence[Mapping[str, Any]]) -> tuple[Fault, ...]:
    """A case's validated ``faults`` list as Faults, in order."""
    return tuple(fault_of(spec) for spec in specs)


def profile_schema() -> dict[str, Any]:
    """``schemas/faults.schema.json`` with its fault items read from case.schema.json's ``$defs`` (one rule)."""
    schema = json.loads((bundled("schemas") / "faults.schema.json").read_text(encoding="utf-8"))
    defs = json.loads((bundled("schemas") / "case.schema.json").read_text(encoding="utf-8"))["$defs"]
    schema["properties"]["faults"]["items"] = {"$ref": "#/$defs/fault"}
    return {**schema, "$defs": defs}


def load_profiles(values: Sequence[str]) -> list[FaultProfile]:
    """The arms of ``run --faults`` values: ``off``, ``case`` or a profile file each, the clean twin (``off``)
    first when no value is ``off``; [] for no values (each case's own faults, no arm dimension).

    Raises UserError for a value given twice, a file that cannot be read, and UserErrors listing every problem of
    a profile, each at its file, line and column."""
    if not values:
        return []
    twice = next((v for v in values if values.count(v) > 1), None)
    if twice is not None:
        raise UserError(f"--faults {twice} is given twice", hint="give each --faults value once")
    profiles = [read_profile(Path(v)) if v not in (OFF, CASE) else FaultProfile(v, case_faults=v == CASE)
                for v in values]
    names = [p.name for p in profiles]
    clash = next((n for n in names if names.count(n) > 1), None)
    if clash is not None:
        raise UserError(f"two --faults arms are both named {clash!r}", hint="give each profile its own `name:`")
    return profiles if OFF in values else [FaultProfile(OFF, case_faults=False), *profiles]


def read_profile(path: Path) -> FaultProfile:
    """One profile file: ``{name?, seed?, faults: [fault, ...]}``. Raises UserError when it cannot be read,
    UserErrors for what is wrong in it."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the fault profile: {getattr(e, 'strerror', None) or e}", Location(file),
                        hint="give --faults a profile file, `off` or `case`") from e
    root = parse(text, file)
    data, spot = to_plain(root, file), Spot(file, root, empty="(file)")
    if not isinstance(data, dict):
        raise UserErrors([spot.error("expected a mapping with `faults:`", hint="see examples/robustness/faults.yml")])
    errors = [e for error in schema_validator(profile_schema()).iter_errors(data) for e in schema_errors(error, spot)]
    if errors:
        raise UserErrors(in_file_order(errors))
    return FaultProfile(data.get("name", path.stem), faults_of(data["faults"]), int(data.get("seed", 0)),
                        digest=digest(data))
