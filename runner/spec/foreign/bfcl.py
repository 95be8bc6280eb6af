"""BFCL (Berkeley Function-Calling Leaderboard) single-turn entries read as tooltrial cases.

BFCL keeps each category in two JSON-lines files: the questions (``BFCL_v4_simple_python.json``:
``{id, question: [[{role, content}, ...]], function: [{name, description, parameters}]}`` a line)
and the answer key (``possible_answer/BFCL_v4_simple_python.json``: ``{id, ground_truth: [{FUNCTION:
{PARAM: [acceptable values]}}]}``). Each entry becomes one case, in a group per category (its id
without the trailing number: ``live_simple_3-2-0`` is ``live_simple``):

    function[]      -> mocks (name with dots as underscores, parameters as JSON Schema) and ``tools``
    question        -> system messages as ``system``, each user message a turn
    ground_truth    -> expect.trace.calls, one per expected call (runner.spec.foreign.bfclanswers)
    irrelevance     -> expect.trace.max_calls: 0;  relevance (no answer key) -> min_attempts: 1

The AST categories (simple, multiple, parallel, parallel_multiple and their live variants) are
checked as BFCL's ``ast_checker`` checks them: ``exact_args`` and ``strict_types`` set, no call
beyond the expected ones (``extra_calls: false``), calls matched in any order.
Source of the formats: bfcl_eval/data/ and eval_checker/ast_eval/ast_checker.py
(https://github.com/ShishirPatil/gorilla/tree/main/berkeley-function-call-leaderboard).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from runner.errors import CaseFileError, Location, UserErrors
from runner.names import ID_PATTERN
from runner.spec.foreign.bfclanswers import first_arguments, is_variable, param_spec
from runner.spec.foreign.bfclfile import IMPORTED, read_lines, refused_because
from runner.spec.foreign.bfclschema import BadDoc, holds_enum, json_schema, json_type, placeholder, unlist, widen

MOCK_RESULT = "ok"  # what every generated mock answers, so the model can finish its reply
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # a tool name, as schemas/case.schema.json says
_CATEGORY = re.compile(r"^(.+?)_\d+(?:-\d+)*$")  # BFCL's ids: category_N or category_N-N-N
_TEMPLATE_MARK = re.compile(r"\{[{%#]")
_T = TypeVar("_T")


@dataclass
class Imported:
    """The cases read: ``groups`` maps a category to its case mappings (keys of schemas/case.schema.json)
    in file order; ``warnings`` are lines about what an entry left out."""

    groups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class _Bad(Exception):
    """An entry that does not have BFCL's shape: the key path in it and what is wrong."""

    def __init__(self, where: str, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.where, self.what, self.hint = where, what, hint
        self.more: list[_Bad] = []  # the entry's other errors, listed after this one

    @staticmethod
    def every(bads: list[_Bad]) -> _Bad:
        """The first of ``bads`` (at least one), carrying the others."""
        first = bads[0]
        first.more = [*first.more, *bads[1:]]
        return first


def _attempt(bads: list[_Bad], make: Callable[[], _T]) -> _T | None:
    """What ``make`` returns; None when it raises _Bad, which is added to ``bads`` (with those it carries)."""
    try:
        return make()
    except _Bad as e:
        bads += [e, *e.more]
        return None


def import_bfcl(questions: Path, answers: Path | None, script: bool = False) -> Imported:
    """The cases of BFCL's ``questions`` file with the answer key ``answers`` (needed for every AST
    category; irrelevance and relevance entries have none); with ``script`` each case gets the
    scripted provider's replies: its first acceptable answer's calls, then a reply without calls.

    Raises UserErrors with every malformed line or entry at ``file:line`` and its key path (an entry's
    question, each function doc and its answer each give theirs): a line that is not JSON, a missing or mistyped key, an unsupported category or type, an AST entry
    without an answer, an answer naming a function the entry does not define; or one error, why, for
    a file BFCL names for a category tooltrial does not import (``BFCL_v4_memory.json``).
    """
    entries, errors = read_lines(questions)
    key: dict[str, tuple[int, Any]] = {}
    if answers is not None:
        lines, more = read_lines(answers)
        errors += more
        for number, entry in lines:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                key[entry["id"]] = (number, entry.get("ground_truth"))
            else:
                errors.append(CaseFileError("an answer must be an object with an 'id'", Location(str(answers), number)))
    imported = Imported()
    seen: set[tuple[str, str]] = set()
    for number, entry in entries:
        try:
            category, case = _case(entry, key, answers, script, imported.warnings)
        except _Bad as e:
            errors += [CaseFileError(b.what, Location(str(questions), number), b.where, b.hint) for b in [e, *e.more]]
            continue
        if (category, case["id"]) in seen:
            errors.append(CaseFileError(f"id {case['id']!r} is given twice", Location(str(questions), number), "id"))
        seen.add((category, case["id"]))
        imported.groups.setdefault(category, []).append(case)
    if errors:
        raise UserErrors(errors)
    return imported


def category_of(entry_id: str) -> str:
    """The category in a BFCL id: ``simple_python_12`` -> ``simple_python``; raises _Bad for another shape."""
    found = _CATEGORY.match(entry_id)
    if not found or not ID_PATTERN.fullmatch(entry_id):
        raise _Bad("id", f"{entry_id!r} is not a BFCL id", "BFCL ids are CATEGORY_N or CATEGORY_N-N-N, lowercase")
    category = found.group(1)
    why = refused_because(category)
    if why is not None:
        raise _Bad("id", f"category {category!r} is not imported: {why}", f"tooltrial imports {IMPORTED}")
    return category


def _case(entry: Any, key: Mapping[str, tuple[int, Any]], answers: Path | None, script: bool,
          warnings: list[str]) -> tuple[str, dict[str, Any]]:
    entry = _need(entry, dict, "", "an object")
    entry_id = _need(entry.get("id"), str, "id", "a string")
    category = category_of(entry_id)
    functions = _need(entry.get("function"), list, "function", "a list")
    docs = {_need(_need(f, dict, f"function[{i}]", "an object").get("name"), str, f"function[{i}].name", "a string"): f
            for i, f in enumerate(functions)}
    names = {name: tool_name(name, f"function[{i}].name") for i, name in enumerate(docs)}
    if len(set(names.values())) < len(functions):
        raise _Bad("function", "two functions have the same name (dots read as underscores)")
    case: dict[str, Any] = {"id": entry_id}
    bads: list[_Bad] = []  # the question's, each function doc's and the answer's errors are all listed
    case.update(_attempt(bads, lambda: _conversation(entry.get("question"), entry_id, warnings)) or {"turns": []})
    case["tools"] = list(names.values())
    relevance = category.endswith("relevance")  # irrelevance too: no answer key, only a count of calls
    missing: list[_Bad] = []
    ground = None if relevance else _attempt(missing, lambda: _ground_truth(entry_id, key, answers))
    case["mocks"] = [_attempt(bads, functools.partial(_mock, names[name], doc, f"function[{i}]", ground))
                     for i, (name, doc) in enumerate(docs.items())]
    if bads or missing:
        raise _Bad.every([*bads, *missing])
    none_fits: list[dict[str, Any]] = [{"content": "None of the functions fits this request."}]
    if ground is not None:
        trace: dict[str, Any] = {"calls": [_expected_call(call, docs, i) for i, call in enumerate(ground)]}
        replies = _script(ground, docs)
    elif "irrelevance" in category:
        trace, replies = {"max_calls": 0}, none_fits
    else:
        trace = {"min_attempts": 1}  # BFCL counts any call as one, whatever the checks would say of it
        replies = _relevant_script(case["mocks"][0]) if case["mocks"] else none_fits
    case["expect"] = {"trace": trace}
    if script:  # a reply to each earlier user message, then the answer to the last
        case["script"] = [{"content": "Noted."}] * (len(case["turns"]) - 1) + replies
    return category, case


def tool_name(name: str, where: str) -> str:
    """A BFCL function name as tooltrial's tool name: dots become underscores, as BFCL names them for
    function-calling models (``math.factorial`` -> ``math_factorial``). Raises _Bad for a name that
    is not a tool name then."""
    tool = name.replace(".", "_")
    if not _NAME.fullmatch(tool):
        raise _Bad(where, f"function name {name!r} is not a tool name", "1 to 64 of a-z A-Z 0-9 _ -")
    return tool


def _need(value: Any, kind: type, where: str, noun: str) -> Any:
    """``value`` when it is a ``kind``; else raises _Bad at ``where``: ``expected a list, got a string``."""
    if not isinstance(value, kind):
        got = {"null": "null", "object": "an object", "array": "a list", "integer": "a number"}.get(json_type(value))
        raise _Bad(where or "(entry)", f"expected {noun}, got {got or 'a ' + json_type(value)}")
    return value


def _conversation(question: Any, entry_id: str, warnings: list[str]) -> dict[str, Any]:
    """``system`` (the system messages, joined) and ``turns`` (each user message) of BFCL's one-turn ``question``."""
    turns = _need(question, list, "question", "a list")
    if len(turns) != 1:
        raise _Bad("question", f"{len(turns)} turns: a single-turn entry has one")
    messages = _need(turns[0], list, "question[0]", "a list")
    said: dict[str, list[str]] = {"system": [], "user": [], "assistant": []}
    for i, message in enumerate(messages):
        message = _need(message, dict, f"question[0][{i}]", "an object")
        role = message.get("role")
        if not isinstance(role, str) or role not in said:
            raise _Bad(f"question[0][{i}].role", f"unknown role {role!r}", "system, user or assistant")
        said[role].append(_need(message.get("content"), str, f"question[0][{i}].content", "a string"))
    if not said["user"]:
        raise _Bad("question[0]", "no user message")
    if said["assistant"]:
        warnings.append(f"{entry_id}: {len(said['assistant'])} assistant message(s) of the question left out: "
                        "the model answers each user message itself")
    out: dict[str, Any] = {}
    texts = {"system": "\n\n".join(said["system"])} if said["system"] else {}
    texts.update({f"turn{i}": text for i, text in enumerate(said["user"], 1)})
    if any(_TEMPLATE_MARK.search(text) for text in texts.values()):  # sent as written, never rendered
        out["vars"] = texts
        texts = {name: "{{ " + name + " }}" for name in texts}
    if "system" in texts:
        out["system"] = texts.pop("system")
    out["turns"] = list(texts.values())
    return out


def _ground_truth(entry_id: str, key: Mapping[str, tuple[int, Any]], answers: Path | None) -> list[dict[str, Any]]:
    if entry_id not in key:
        hint = "give its possible_answer file with --answers" if answers is None else f"{answers} has no line for it"
        raise _Bad("id", f"no answer for {entry_id!r}", hint)
    number, ground = key[entry_id]
    where = f"ground_truth (answer line {number})"
    calls = _need(ground, list, where, "a list")
    for i, call in enumerate(calls):
        if not (isinstance(call, dict) and len(call) == 1 and isinstance(next(iter(call.values())), dict)):
            raise _Bad(f"{where}[{i}]", "expected {FUNCTION: {PARAM: [values]}}")
        for param, values in next(iter(call.values())).items():
            _need(values, list, f"{where}[{i}].{param}", "a list of acceptable values")
    return calls


def _expected_call(call: dict[str, Any], docs: Mapping[str, Any], index: int) -> dict[str, Any]:
    """One ``expect.trace.calls`` entry of one BFCL expected call ``{FUNCTION: {PARAM: [values]}}``."""
    name, params = next(iter(call.items()))
    if name not in docs:
        raise _Bad(f"ground_truth[{index}]", f"the answer calls {name!r}, which the entry does not define")
    properties = docs[name].get("parameters", {}).get("properties", {})
    return {"name": name.replace(".", "_"),
            "args": {param: _arg_spec(properties, param, values) for param, values in params.items()}}


def _arg_spec(properties: Mapping[str, Any], param: str, values: list[Any]) -> Any:
    """The spec of one answer parameter. One the function doc lacks is, sent, an unexpected parameter
    to BFCL: only its absence passes, and only where ``""`` allows it (else no call can pass)."""
    if param in properties:
        return param_spec(properties[param], values)
    return {"absent": True} if "" in values else param_spec({}, values)


def _mock(name: str, doc: Mapping[str, Any], where: str, ground: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The mock of one function doc: its parameters as JSON Schema, each widened to the types the answer
    gives it where BFCL reads those as a variable (runner.spec.foreign.bfclanswers.is_variable), and
    ``enum_match: normalized`` where the schema holds an enum."""
    parameters = _need(doc.get("parameters", {"type": "dict", "properties": {}}), dict, f"{where}.parameters", "an object")
    try:
        schema = json_schema(parameters, f"{where}.parameters")
    except BadDoc as e:
        raise _Bad(e.where, str(e), e.hint) from e
    properties = _need(parameters.get("properties", {}), dict, f"{where}.parameters.properties", "an object")
    for call in ground or []:
        for param, values in call.get(doc["name"], {}).items():
            if param not in properties:
                continue
            given, typed = [v for v in values if v != ""], schema["properties"][param]
            if is_variable(properties[param], values):
                widen(typed, {json_type(v) for v in given})
            elif isinstance(typed.get("items"), dict):  # BFCL takes an item of the answer's type too
                widen(typed["items"], {json_type(item) for v in given if isinstance(v, list) for item in v})
            unlist(typed, given)
    mock: dict[str, Any] = {"name": name}
    if isinstance(doc.get("description"), str):
        mock["description"] = doc["description"]
    mock["parameters"] = schema
    if holds_enum(schema):  # BFCL compares strings normalised and checks no enum: "OPEN" passes for [open, closed]
        mock["enum_match"] = "normalized"
    return {**mock, "responses": [{"result": MOCK_RESULT}]}


def _script(ground: list[dict[str, Any]], docs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The scripted replies: the first acceptable answer's calls in one reply, then a reply without calls."""
    calls = [{"name": name.replace(".", "_"), "arguments": first_arguments(docs[name].get("parameters", {}), params)}
             for call in ground for name, params in call.items()]
    return [{"tool_calls": calls}, {"content": "Done."}]


def _relevant_script(mock: dict[str, Any]) -> list[dict[str, Any]]:
    """A relevance entry's scripted replies: a call of its first function with placeholder arguments
    (runner.spec.foreign.bfclschema.placeholder), then a reply without calls."""
    return [{"tool_calls": [{"name": mock["name"], "arguments": placeholder(mock["parameters"])}]}, {"content": "Done."}]
