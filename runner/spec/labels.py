"""A labels file (``tooltrial judge calibrate LABELS.yml``): a rubric and the items a person gave a verdict,
each a run file or a transcript (turns, tool calls, reply), read with every error at its line and column
(schema ``schemas/labels.schema.json``)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.errors import CaseFileError, Location, UserErrors, did_you_mean, in_file_order
from runner.resources import bundled
from runner.spec.casefile import load_file
from runner.spec.expect import JudgeExpect, as_list
from runner.spec.positions import Spot, position
from runner.spec.schema import schema_errors, schema_validator
from runner.spec.source import parse, to_plain

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

_TRANSCRIPT = ("turns", "calls", "reply")
_HINT = "give each item either run: FILE or a transcript (turns, calls, reply); see docs/judges.md"


@dataclass(frozen=True)
class LabelCall:
    """One tool call of a transcript item: its tool, arguments, result text and whether it was an error."""

    name: str
    arguments: dict[str, Any]
    result: str = ""
    error: bool = False


@dataclass(frozen=True)
class LabelItem:
    """One item a person judged: ``verdict`` (``pass`` or ``fail``), ``name`` (its ``id``, else its place:
    ``item 3 (labels.yml:14)``, its 1-based number and the labels file's line it starts on), ``index`` (0-based, in the file), and either ``run`` (a run file, resolved against the labels
    file's folder) or the transcript (``turns``, ``calls``, ``reply``)."""

    name: str
    index: int
    verdict: str
    run: Path | None = None
    turns: tuple[str, ...] = ()
    calls: tuple[LabelCall, ...] = ()
    reply: str = ""


@dataclass(frozen=True)
class Labels:
    """A labels file: its ``path``, the ``rubric``, the pass ``threshold`` (None: the judge's default), the
    ``items``, and ``spot`` to place later errors (a run file that cannot be read) at an item's line. With
    ``case:``, the rubric and threshold are the case's ``expect.judge`` (the file's ``threshold`` wins), and
    ``model`` and ``min_kappa`` are its judge model and least kappa (else None)."""

    path: Path
    rubric: str
    threshold: float | None
    items: tuple[LabelItem, ...]
    spot: Spot
    model: str | None = None
    min_kappa: float | None = None

    def error(self, message: str, item: LabelItem, key: str, hint: str = "") -> CaseFileError:
        """A positioned error at ``items[<item>].<key>``."""
        return self.spot.error(message, ["items", item.index, key], hint=hint)


@functools.cache
def _validator() -> Draft202012Validator:
    schema = json.loads((bundled("schemas") / "labels.schema.json").read_text(encoding="utf-8"))
    return schema_validator(schema)


def read_labels(path: Path) -> Labels:
    """The labels file at ``path``.

    Raises UserErrors listing every problem, each at its file, line and column: not readable, not YAML,
    against the schema, an item with both a run file and a transcript or neither, ids given twice.
    """
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise UserErrors([CaseFileError(f"cannot read the labels file: {e}", Location(file))]) from e
    root = parse(text, file)
    data = to_plain(root, file)
    spot = Spot(file, root, empty="(file)")
    if not isinstance(data, dict):
        raise UserErrors([spot.error("expected a mapping with rubric and items", hint=_HINT)])
    errors = [e for error in _validator().iter_errors(data) for e in schema_errors(error, spot)]
    if errors:
        raise UserErrors(in_file_order(errors))
    items = [_item(i, entry, path.parent, spot) for i, entry in enumerate(data["items"])]
    errors = [e for i, entry in enumerate(data["items"]) for e in _rules(i, entry, spot)]
    if ("rubric" in data) == ("case" in data):
        errors.append(spot.error("give the rubric or the case whose rubric it is, one of them",
                                 ["case"] if "case" in data else [], hint="rubric: TEXT, or case: {file: FILE, id: ID}"))
    seen: set[str] = set()
    for item in items:
        if item.name in seen:
            errors.append(spot.error(f"id {item.name!r} is given twice", ["items", item.index, "id"],
                                     hint="give each item its own id"))
        seen.add(item.name)
    if errors:
        raise UserErrors(in_file_order(errors))
    if "rubric" in data:
        return Labels(path, data["rubric"], data.get("threshold"), tuple(items), spot)
    judge = _judge_of(data["case"], path.parent, spot)
    threshold = data.get("threshold", judge.threshold)
    return Labels(path, judge.rubric, threshold, tuple(items), spot, judge.model, judge.min_kappa)


def _judge_of(case: dict[str, str], folder: Path, spot: Spot) -> JudgeExpect:
    """The ``expect.judge`` of the case ``case`` names. Raises UserErrors: the case file's error, no such case,
    or a case with no judge, at ``case``'s keys."""
    try:
        cases = load_file(folder / case["file"])
    except CaseFileError as e:
        raise UserErrors([e]) from e
    found = next((c for c in cases if c.id == case["id"]), None)
    if found is None:
        hint = did_you_mean(case["id"], [c.id for c in cases], "its ids: " + ", ".join(c.id for c in cases))
        raise UserErrors([spot.error(f"{case['file']} has no case {case['id']!r}", ["case", "id"], hint=hint)])
    if found.expect.judge is None:
        raise UserErrors([spot.error(f"case {found.full_id} has no expect.judge to calibrate", ["case", "id"],
                                     hint="name a case with expect.judge, or give rubric: TEXT")])
    return found.expect.judge


def _rules(index: int, entry: dict[str, Any], spot: Spot) -> list[CaseFileError]:
    """What the schema cannot say of one item: a run file or a transcript, not both, not neither."""
    transcript = [key for key in _TRANSCRIPT if key in entry]
    if "run" in entry and transcript:
        return [spot.error(f"an item with run: takes no {transcript[0]}: (the run file holds it)",
                           ["items", index, transcript[0]], key=True, hint=_HINT)]
    if "run" not in entry and "reply" not in entry:
        return [spot.error("an item needs run: FILE or a transcript with reply:", ["items", index], hint=_HINT)]
    return []


def _item(index: int, entry: dict[str, Any], folder: Path, spot: Spot) -> LabelItem:
    calls = tuple(LabelCall(c["name"], dict(c.get("arguments", {})), c.get("result", ""), c.get("error", False))
                  for c in entry.get("calls", ()))
    return LabelItem(
        name=entry["id"] if "id" in entry else f"item {index + 1} ({spot.file}:{position(spot.node, ['items', index])[0]})",
        index=index, verdict=entry["verdict"],
        run=folder / entry["run"] if "run" in entry else None,
        turns=tuple(as_list(entry.get("turns", ()))), calls=calls, reply=entry.get("reply", ""))
