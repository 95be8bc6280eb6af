"""Freezing runs as cases: ``tooltrial run ... --record DIR``.

Each finished run writes its case again, with ``script:`` holding what the
model actually replied (texts, tool calls with their arguments, usage), to
``DIR/cases/<group>.yml``; the fixtures those cases use are copied to
``DIR/fixtures``. ``tooltrial run DIR/cases -p scripted`` then replays the
runs offline with the same tool calls, results, replies and checks.

A case is written as its source file says it (key order and flow or block
style kept, comments dropped), with the file's ``defaults`` merged in so each
recorded case stands alone; a replio fixture is written as the case it maps
onto. When several providers, prompts or repeats
ran, ids get ``.<provider>``, ``.<prompt>`` and ``.run<N>`` suffixes so that
every run is a case of its own (its ``runs:`` key dropped). The group files
this writes are replaced, each atomically and flushed to disk
(runner.output.store.write_replace). A run the provider failed is left out: its replay
would end when the script does, an agent failure where the run was an
infrastructure error; so is one whose simulated user failed. A simulated user is recorded as
``scripted``, its lines as its ``script:``.
"""

from __future__ import annotations

import copy
import re
import shutil
import threading
from collections.abc import MutableMapping, Sequence
from io import StringIO
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import Comment, CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString

from runner.errors import UserError
from runner.kinds import ErrorKind
from runner.names import ID_CHARS, SCRIPTED
from runner.output.store import write_replace
from runner.run.record import RunRecord
from runner.spec.case import Case
from runner.spec.dataset import expanded_case
from runner.spec.defaults import merge_defaults
from runner.spec.fixture import FixtureError, copy_fixture
from runner.spec.foreign import replio
from runner.spec.source import parse, to_plain

_UNSAFE = re.compile(f"[^{ID_CHARS}]+")  # what a suffix of an id cannot hold
_WIDTH = 80  # characters in a line of text, or in a mapping written on one line


class Recorder:
    """Writes a replayable case for each run it is given (``record`` is safe to call from any thread).

    Args:
        folder: the recording's folder (created); cases go to ``cases/``, fixtures to ``fixtures/``.
        cases: every case that may run, read from their source files now.
        providers, prompts, runs, tool_defs: how many of each the run matrix has (for id suffixes; ``tool_defs``
            the ``-T`` arms); a case's own ``runs:`` wins over ``runs``.

    Raises UserError when two cases use fixtures of one name from different folders.
    """

    def __init__(
        self, folder: Path, cases: Sequence[Case], providers: int = 1, prompts: int = 1, runs: int = 1,
        tool_defs: int = 0,
    ) -> None:
        self.cases_dir = folder / "cases"
        self.fixtures_dir = folder / "fixtures"
        self.recorded = 0
        self.left_out = 0
        self._vary = (providers > 1, prompts > 1, tool_defs > 1)
        self._runs = runs
        self._mappings = {case.full_id: (index, case, _case_mapping(case)) for index, case in enumerate(cases)}
        self._groups: dict[str, dict[tuple[int, str, str, str, int], CommentedMap]] = {}
        self._lock = threading.Lock()
        self.cases_dir.mkdir(parents=True, exist_ok=True)
        _copy_fixtures(cases, self.fixtures_dir)

    def record(self, record: RunRecord) -> None:
        """Add the case of ``record`` with its script, and rewrite its group's file; count a run
        the provider failed in ``left_out`` instead."""
        kind = ErrorKind(record.error_kind) if record.error_kind is not None else None
        if kind is not None and (kind.from_provider or kind is ErrorKind.USER_ERROR):
            with self._lock:
                self.left_out += 1
            return
        index, case, mapping = self._mappings[record.case]
        entry = copy.deepcopy(mapping)
        entry["id"] = case.id + self._suffix(record, case.runs or self._runs)
        entry.pop("runs", None)
        entry.pop("script", None)
        entry["script"] = _literal(record.script)
        if record.user_model is not None:  # the simulated user replays its recorded lines too
            entry["user"]["model"] = SCRIPTED
            entry["user"]["script"] = _literal(_user_script(record))
        with self._lock:
            group = self._groups.setdefault(case.group, {})
            group[(index, record.provider, record.prompt, record.tool_defs or "", record.run)] = entry
            self._write(case.group, [group[key] for key in sorted(group)])
            self.recorded += 1

    def _suffix(self, record: RunRecord, runs: int) -> str:
        parts = [record.provider, record.prompt, record.tool_defs or "", f"run{record.run}"]
        vary = (*self._vary, runs > 1)
        return "".join(f".{_UNSAFE.sub('-', part.lower()).strip('-')}" for part, varies in zip(parts, vary) if varies)

    def _write(self, group: str, entries: list[CommentedMap]) -> None:
        document = CommentedMap(cases=CommentedSeq(entries))
        document.yaml_set_start_comment(
            "Recorded by `tooltrial run --record`: each case's script is what its model replied.\n"
            f"Replay offline: tooltrial run {self.cases_dir} -p scripted"
        )
        yaml = YAML()
        yaml.width = 4096  # the case's own values keep their lines
        yaml.indent(mapping=2, sequence=4, offset=2)
        text = StringIO()
        yaml.dump(document, text)
        write_replace(self.cases_dir / f"{group}.yml", text.getvalue())


def _user_script(record: RunRecord) -> list[Any]:
    """The simulated user's lines as its ``script:``: text, or ``{content, usage}`` where usage was reported."""
    lines = [t for t in record.user_turns if t.by == "model"]
    return [{"content": t.content, "usage": {k: v for k, v in vars(t.usage).items() if v is not None}} if t.usage
            else t.content for t in lines]


def _case_mapping(case: Case) -> CommentedMap:
    """The case as its source file writes it: the ruamel mapping with the file's defaults merged in."""
    file = str(case.source)
    root = parse(case.source.read_text(encoding="utf-8-sig"), file)
    plain = to_plain(root, file)
    if replio.is_fixture(plain):
        return CommentedMap(replio.to_case_mapping(plain, case.source.stem))
    wrapped = isinstance(root, CommentedMap)  # {defaults, cases}, else a list of cases
    defaults, items = (root.get("defaults") or CommentedMap(), root["cases"]) if wrapped else (CommentedMap(), root)
    mappings = [item for item in items if isinstance(item, CommentedMap)]
    node = next((item for item in mappings if item.get("id") == case.id), None)
    if node is not None:
        return _uncommented(_merge(copy.deepcopy(node), defaults))
    # A case expanded from a dataset or matrix (runner.spec.dataset): the mapping written at its line.
    written = next(item for item in mappings if item.lc.line + 1 == case.line)
    merged = to_plain(_merge(copy.deepcopy(written), defaults), file)
    return CommentedMap(expanded_case(merged, case.id, case.vars))


def _merge(case: CommentedMap, defaults: CommentedMap) -> CommentedMap:
    """``defaults`` merged under ``case`` in place by the loader's rule (merge_defaults). Keys only
    the defaults have go after the case's ``id`` and ``description`` at the top, last below it."""
    at = next((i for i, key in enumerate(case) if key not in ("id", "description")), len(case))

    def add(mapping: MutableMapping[str, Any], key: str, value: Any) -> None:
        nonlocal at
        if mapping is case:
            case.insert(at, key, value)
            at += 1
        else:
            mapping[key] = value

    merge_defaults(case, defaults, add)
    return case


def _uncommented(node: Any) -> Any:
    """``node`` with every comment below it removed: moved into another file they land in odd places."""
    if isinstance(node, (CommentedMap, CommentedSeq)):
        if hasattr(node, Comment.attrib):
            delattr(node, Comment.attrib)
        for child in node.values() if isinstance(node, CommentedMap) else node:
            _uncommented(child)
    return node


def _literal(value: Any) -> Any:
    """``value`` laid out to read well: short mappings of one-line scalars on one line,
    multi-line strings as literal blocks, long lines folded."""
    if isinstance(value, dict):
        mapping = CommentedMap((key, _literal(item)) for key, item in value.items())
        one_line = all(not isinstance(v, (dict, list)) and "\n" not in str(v).rstrip("\n") for v in value.values())
        if one_line and len(", ".join(f"{k}: {v}" for k, v in value.items())) <= _WIDTH:
            mapping.fa.set_flow_style()
        return mapping
    if isinstance(value, list):
        return [_literal(item) for item in value]
    if isinstance(value, str) and "\n" in value.rstrip("\n"):
        return LiteralScalarString(value)
    if isinstance(value, str) and len(value) > _WIDTH and value == value.strip():
        return _folded(value)
    return value


def _folded(text: str) -> FoldedScalarString:
    """``text`` (one line) as a folded block broken at single spaces every ``_WIDTH`` characters or so."""
    folded = FoldedScalarString(text)
    folds, start = [], 0
    for at, char in enumerate(text):
        if at - start >= _WIDTH and char == " " and text[at - 1] != " " and text[at + 1 : at + 2] not in ("", " "):
            folds.append(at)
            start = at + 1
    folded.fold_pos = folds  # where ruamel breaks the line
    return folded


def _copy_fixtures(cases: Sequence[Case], target: Path) -> None:
    """Copy each fixture folder the cases use into ``target``, once, as the workspace does
    (runner.spec.fixture: no symbolic link on the way followed); raise UserError on a name clash or
    a fixture that cannot be copied."""
    chosen: dict[str, Path] = {}
    homes: dict[str, Path] = {}
    for case in cases:
        if case.fixture is None or case.fixtures_dir is None:
            continue
        source = (case.fixtures_dir / case.fixture).resolve()
        homes.setdefault(case.fixture, case.fixtures_dir)
        if chosen.setdefault(case.fixture, source) != source:
            raise UserError(
                f"cannot record: two fixtures are named {case.fixture!r} ({chosen[case.fixture]} and {source})",
                hint="record those cases separately",
            )
    for name, source in chosen.items():
        destination = target / name
        if destination.resolve() != source:
            shutil.rmtree(destination, ignore_errors=True)
            destination.mkdir(parents=True)
            try:
                copy_fixture(homes[name], name, destination)
            except FixtureError as e:
                raise UserError(f"cannot record: {e}") from e
