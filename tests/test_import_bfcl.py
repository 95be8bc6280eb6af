"""``tooltrial import bfcl``: hand-written BFCL-shaped entries of each category imported through the CLI,
then run with the scripted provider. The first acceptable answer passes; each answer BFCL's
``ast_checker`` accepts passes, each it rejects fails (one variant per rule); the files, the mapping
and the errors are pinned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import UserErrors
from runner.spec.casefile import load_file
from runner.spec.foreign.bfcl import import_bfcl
from runner.spec.foreign.bfclfile import IMPORTED, case_file_text
from tests.helpers import run_cli

TRIANGLE = {"name": "geometry.triangle_area", "description": "Area of a triangle.", "parameters": {
    "type": "dict", "required": ["base", "height"], "properties": {
        "base": {"type": "integer", "description": "Base."}, "height": {"type": "float", "description": "Height."},
        "unit": {"type": "string", "description": "Unit.", "optional": True}}}}
WEATHER = {"name": "get_weather", "description": "Weather in a city.", "parameters": {
    "type": "dict", "required": ["city"], "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "detail": {"type": "any"}}}}
ROOTS = {"name": "quadratic_roots", "parameters": {"type": "dict", "required": ["a", "b", "c"], "properties": {
    "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}}}
HOTEL = {"name": "book_hotel", "parameters": {"type": "dict", "required": ["nights", "rooms"], "properties": {
    "nights": {"type": "array", "items": {"type": "integer"}},
    "rooms": {"type": "dict", "properties": {"size": {"type": "string"}, "view": {"type": "string"}}},
    "guests": {"type": "array", "items": {"type": "dict"}},
    "span": {"type": "tuple", "items": {"type": "float"}}}}}

QUESTIONS = [
    {"id": "simple_python_0", "question": [[{"role": "user", "content": "Area of a triangle, base 10 and height 5?"}]],
     "function": [TRIANGLE]},
    {"id": "multiple_0", "question": [[{"role": "user", "content": "Weather in San Francisco for 3 days?"}]],
     "function": [TRIANGLE, WEATHER]},
    {"id": "parallel_0", "question": [[{"role": "user", "content": "Roots of 3x^2+4x+2 and 5x^2-7x+3."}]],
     "function": [ROOTS]},
    {"id": "parallel_multiple_0", "question": [[{"role": "user", "content": "Book 2 then 3 nights; weather in Paris."}]],
     "function": [HOTEL, WEATHER]},
    {"id": "irrelevance_0", "question": [[{"role": "user", "content": "Who wrote Hamlet?"}]], "function": [ROOTS]},
    {"id": "live_simple_0-0-0", "question": [[{"role": "system", "content": "You answer about {{ weather }}."},
                                              {"role": "user", "content": "Weather in Oslo?"}]],
     "function": [WEATHER]},
]
ANSWERS = [
    {"id": "simple_python_0", "ground_truth": [{"geometry.triangle_area": {
        "base": [10], "height": [5.0], "unit": ["", "units", "cm"]}}]},
    {"id": "multiple_0", "ground_truth": [{"get_weather": {
        "city": ["San Francisco, CA", "SF"], "days": [3], "detail": [""]}}]},
    {"id": "parallel_0", "ground_truth": [{"quadratic_roots": {"a": [3], "b": [4], "c": [2]}},
                                          {"quadratic_roots": {"a": [5], "b": [-7], "c": [3]}}]},
    {"id": "parallel_multiple_0", "ground_truth": [
        {"book_hotel": {"nights": [[2, 3]], "rooms": [{"size": ["double"], "view": ["", "sea"]}],
                        "guests": [[{"name": ["Ann"]}, {"name": ["Bo"]}]], "span": [[1.5, 2.0], ""]}},
        {"get_weather": {"city": ["Paris"], "days": ["", None]}}]},
    {"id": "live_simple_0-0-0", "ground_truth": [{"get_weather": {"city": ["Oslo"]}}]},
]


def _jsonl(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def _import(tmp_path: Path, *extra: str) -> Any:
    questions = _jsonl(tmp_path / "BFCL_v4_sample.json", QUESTIONS)
    answers = _jsonl(tmp_path / "answers.json", ANSWERS)
    return run_cli("import", "bfcl", str(questions), "--answers", str(answers), "-o", str(tmp_path / "cases"), *extra)


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": name, "arguments": args} for name, args in calls]}, {"content": "Done."}]


TRI, HOT = "geometry_triangle_area", "book_hotel"
GOOD_HOTEL = {"nights": [2, 3], "rooms": {"size": "double"}, "guests": [{"name": "Ann"}, {"name": "Bo"}]}
# (BFCL id, variant, script, the status BFCL's checker implies): one variant per rule
VARIANTS: list[tuple[str, str, list[dict[str, Any]], str]] = [
    ("simple_python_0", "int-for-float", _calls((TRI, {"base": 10, "height": 5})), "pass"),
    ("simple_python_0", "optional-given", _calls((TRI, {"base": 10, "height": 5.0, "unit": "CM"})), "pass"),
    ("simple_python_0", "float-for-int", _calls((TRI, {"base": 10.0, "height": 5.0})), "fail"),
    ("simple_python_0", "wrong-value", _calls((TRI, {"base": 11, "height": 5.0})), "fail"),
    ("simple_python_0", "missing-required", _calls((TRI, {"base": 10})), "fail"),
    ("simple_python_0", "unexpected-param", _calls((TRI, {"base": 10, "height": 5.0, "color": "red"})), "fail"),
    ("simple_python_0", "not-acceptable", _calls((TRI, {"base": 10, "height": 5.0, "unit": "inch"})), "fail"),
    ("simple_python_0", "dotted-name", _calls(("geometry.triangle_area", {"base": 10, "height": 5.0})), "fail"),
    ("simple_python_0", "two-calls", _calls((TRI, {"base": 10, "height": 5.0}), (TRI, {"base": 10, "height": 5.0})),
     "fail"),
    ("multiple_0", "normalised", _calls(("get_weather", {"city": "san francisco ca", "days": 3})), "pass"),
    ("multiple_0", "second-value", _calls(("get_weather", {"city": "sf", "days": 3})), "pass"),
    ("multiple_0", "optional-empty-string", _calls(("get_weather", {"city": "SF", "days": 3, "detail": " "})), "pass"),
    ("multiple_0", "optional-other", _calls(("get_weather", {"city": "SF", "days": 3, "detail": "hourly"})), "fail"),
    ("multiple_0", "wrong-function", _calls((TRI, {"base": 10, "height": 5.0})), "fail"),
    ("multiple_0", "bool-for-int", _calls(("get_weather", {"city": "SF", "days": True})), "fail"),
    ("parallel_0", "swapped", _calls(("quadratic_roots", {"a": 5, "b": -7, "c": 3}),
                                     ("quadratic_roots", {"a": 3, "b": 4, "c": 2})), "pass"),
    ("parallel_0", "duplicate", _calls(("quadratic_roots", {"a": 3, "b": 4, "c": 2}),
                                       ("quadratic_roots", {"a": 3, "b": 4, "c": 2})), "fail"),
    ("parallel_0", "one-missing", _calls(("quadratic_roots", {"a": 3, "b": 4, "c": 2})), "fail"),
    ("parallel_multiple_0", "null-optional", _calls(("get_weather", {"city": "Paris", "days": None}), (HOT, GOOD_HOTEL)),
     "pass"),
    ("parallel_multiple_0", "dict-optional-key", _calls(
        (HOT, {**GOOD_HOTEL, "rooms": {"size": "Double", "view": "sea"}, "span": [1.5, 2.0]}), ("get_weather", {"city": "Paris"})),
     "pass"),
    ("parallel_multiple_0", "dict-extra-key", _calls(
        (HOT, {**GOOD_HOTEL, "rooms": {"size": "double", "floor": 3}}), ("get_weather", {"city": "Paris"})), "fail"),
    ("parallel_multiple_0", "dict-missing-key", _calls(
        (HOT, {**GOOD_HOTEL, "rooms": {"view": "sea"}}), ("get_weather", {"city": "Paris"})), "fail"),
    ("parallel_multiple_0", "list-order", _calls(
        (HOT, {**GOOD_HOTEL, "nights": [3, 2]}), ("get_weather", {"city": "Paris"})), "fail"),
    ("parallel_multiple_0", "list-item-float", _calls(
        (HOT, {**GOOD_HOTEL, "nights": [2.0, 3]}), ("get_weather", {"city": "Paris"})), "fail"),
    ("parallel_multiple_0", "list-of-dicts-value", _calls(
        (HOT, {**GOOD_HOTEL, "guests": [{"name": "Ann"}, {"name": "Cy"}]}), ("get_weather", {"city": "Paris"})), "fail"),
    ("irrelevance_0", "a-call", _calls(("quadratic_roots", {"a": 1, "b": 2, "c": 3})), "fail"),
    ("live_simple_0-0-0", "case-and-spaces", _calls(("get_weather", {"city": " OSLO "})), "pass"),
]


def test_the_first_acceptable_answer_passes_and_each_bfcl_rule_holds(tmp_path: Path) -> None:
    done = _import(tmp_path, "--script")
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in (tmp_path / "cases").iterdir())
    assert files == ["bfcl_irrelevance.yml", "bfcl_live_simple.yml", "bfcl_multiple.yml", "bfcl_parallel.yml",
                     "bfcl_parallel_multiple.yml", "bfcl_simple_python.yml"]
    first = run_cli("run", str(tmp_path / "cases"), "-p", "scripted", "--results", str(tmp_path / "first"))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "6/6 passed" in first.stdout
    # every variant as a case of its own: the imported case with the variant's script
    variants = []
    for entry_id, name, script, _ in VARIANTS:
        category = entry_id.rsplit("_", 1)[0]
        data = yaml.safe_load((tmp_path / "cases" / f"bfcl_{category}.yml").read_text())
        case = next(c for c in data["cases"] if c["id"] == entry_id)
        variants.append({**case, "id": f"{entry_id}.{name}", "script": script, **data["defaults"],
                         "expect": {"trace": {**data["defaults"].get("expect", {}).get("trace", {}),
                                              **case["expect"]["trace"]}}})
    (tmp_path / "variants.yml").write_text(yaml.safe_dump(variants, sort_keys=False))
    run_cli("run", str(tmp_path / "variants.yml"), "-p", "scripted", "--results", str(tmp_path / "v"))
    runs = [json.loads(p.read_text()) for p in (tmp_path / "v").glob("*/runs/*.json")]
    got = {r["case"].split("/", 1)[1]: r["status"] for r in runs}
    assert got == {f"{entry_id}.{name}": status for entry_id, name, _, status in VARIANTS}
    messages = {r["case"].split("/", 1)[1]: [c["message"] for c in r["checks"] if not c["passed"]] for r in runs}
    assert messages["parallel_0.duplicate"] == [
        ('expected call #2 quadratic_roots {"a": 5, "b": -7, "c": 3} found no partner: nearest call #2 {"a": 3, "b": 4, '
         '"c": 2} (a: expected 5, got 3, and 2 more difference(s))')]
    assert ('nearest call #1 {"base": 10.0, "height": 5.0} (base: expected integer, got 10.0 (the tool\'s parameter type))'
            in messages["simple_python_0.float-for-int"][0])


def test_the_mapping_of_one_entry(tmp_path: Path) -> None:
    assert _import(tmp_path).returncode == 0
    data = yaml.safe_load((tmp_path / "cases" / "bfcl_parallel_multiple.yml").read_text())
    assert data["defaults"] == {"tags": ["bfcl", "parallel_multiple"],
                                "expect": {"trace": {"exact_args": True, "strict_types": True, "extra_calls": False}}}
    case = data["cases"][0]
    assert case["tools"] == ["book_hotel", "get_weather"]
    assert case["mocks"][0] == {"name": "book_hotel", "parameters": {
        "type": "object", "required": ["nights", "rooms"], "properties": {
            "nights": {"type": "array", "items": {"type": "integer"}},
            "rooms": {"type": "object", "properties": {"size": {"type": "string"}, "view": {"type": "string"}}},
            "guests": {"type": "array", "items": {"type": "object"}},
            "span": {"type": "array", "items": {"type": "number"}}}}, "responses": [{"result": "ok"}]}
    # a null among the acceptable values is a "variable" to BFCL: the schema accepts it too
    assert case["mocks"][1]["parameters"]["properties"]["days"] == {"type": ["integer", "null"]}
    assert case["expect"]["trace"]["calls"] == [
        {"name": "book_hotel", "args": {
            "nights": [2, 3],
            "rooms": {"size": {"normalized": "double"}, "view": {"optional": {"any_of": [{"normalized": "sea"},
                                                                                        {"normalized": ""}]}}},
            "guests": [{"name": {"normalized": "Ann"}}, {"name": {"normalized": "Bo"}}],
            "span": {"optional": {"any_of": [[1.5, 2.0], []]}}}},  # BFCL's list check reads "" as []
        {"name": "get_weather", "args": {"city": {"normalized": "Paris"}, "days": {"optional": None}}}]
    assert "script" not in case
    simple = yaml.safe_load((tmp_path / "cases" / "bfcl_simple_python.yml").read_text())["cases"][0]
    assert simple["mocks"][0]["parameters"]["properties"]["unit"] == {"type": "string", "description": "Unit."}
    assert simple["expect"]["trace"]["calls"][0]["args"]["unit"] == {
        "optional": {"any_of": [{"normalized": "units"}, {"normalized": "cm"}, {"normalized": ""}]}}
    irrelevance = yaml.safe_load((tmp_path / "cases" / "bfcl_irrelevance.yml").read_text())
    assert irrelevance["defaults"] == {"tags": ["bfcl", "irrelevance"]}
    assert irrelevance["cases"][0]["expect"] == {"trace": {"max_calls": 0}}
    live = yaml.safe_load((tmp_path / "cases" / "bfcl_live_simple.yml").read_text())["cases"][0]
    # Jinja markers in the question are sent as written, through variables
    assert (live["system"], live["turns"], live["vars"]) == (
        "{{ system }}", ["{{ turn1 }}"], {"system": "You answer about {{ weather }}.", "turn1": "Weather in Oslo?"})


def test_existing_files_are_kept_without_force(tmp_path: Path) -> None:
    assert _import(tmp_path).returncode == 0
    (tmp_path / "cases" / "bfcl_parallel.yml").write_text("# mine\n")
    again = _import(tmp_path)
    assert again.returncode == 4
    listed = ", ".join(str(tmp_path / "cases" / f"bfcl_{c}.yml") for c in
                       ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple"))
    assert again.stderr == f"error: {listed} already exist (give --force to replace, or another -o folder)\n"
    assert (tmp_path / "cases" / "bfcl_parallel.yml").read_text() == "# mine\n"
    forced = _import(tmp_path, "--force")
    assert forced.returncode == 0
    assert forced.stdout.splitlines()[2] == f"wrote 1 case to {tmp_path / 'cases' / 'bfcl_parallel.yml'}"
    assert (tmp_path / "cases" / "bfcl_parallel.yml").read_text().startswith(
        "# BFCL parallel, imported by `tooltrial import bfcl` from BFCL_v4_sample.json\ndefaults:\n")


def test_malformed_lines_are_errors_at_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(QUESTIONS[0])
    java = {**QUESTIONS[0], "id": "simple_java_3"}
    typed = {**QUESTIONS[0], "id": "irrelevance_9", "function": [{"name": "f", "parameters": {
        "type": "dict", "properties": {"x": {"type": "HashMap"}}}}]}
    lines = [good, "{not json", "", json.dumps(java), json.dumps(typed), json.dumps({**QUESTIONS[0], "id": "simple_python_7"}),
             json.dumps({"id": "simple_python_8", "question": "hi", "function": []})]
    questions = tmp_path / "q.json"
    questions.write_text("\n".join(lines) + "\n")
    answers = _jsonl(tmp_path / "a.json", ANSWERS[:1])
    done = run_cli("import", "bfcl", str(questions), "--answers", str(answers), "-o", str(tmp_path / "cases"))
    assert done.returncode == 4
    q = str(questions)
    assert done.stderr.splitlines() == [
        f"error: {q}:2:2: not JSON: Expecting property name enclosed in double quotes (each line of a BFCL file is one JSON object)",
        (f"error: {q}:4: id: category 'simple_java' is not imported: its arguments are Java source text, which BFCL's "
         f"checker converts by Java's types (tooltrial imports {IMPORTED})"),
        (f"error: {q}:5: function[0].parameters.properties.x.type: unknown type 'HashMap' (BFCL's Python types: "
         "string, integer, float, boolean, array, tuple, dict, any)"),
        f"error: {q}:6: id: no answer for 'simple_python_7' ({answers} has no line for it)",
        f"error: {q}:7: question: expected a list, got a string",
        f"error: {q}:7: id: no answer for 'simple_python_8' ({answers} has no line for it)",
    ]
    assert not (tmp_path / "cases").exists()


def test_an_entry_s_errors_are_all_listed_its_function_docs_and_question_beside_a_missing_answer(
        tmp_path: Path) -> None:
    typed = {**QUESTIONS[0], "id": "simple_python_9", "function": [
        {"name": "f", "parameters": {"type": "dict", "properties": {"x": {"type": "integr"}}}},
        {"name": "g", "parameters": {"type": "dict", "properties": {"y": {"type": "HashMap"}}}}]}
    asked = {**typed, "id": "simple_python_10", "question": [[{"role": "robot", "content": "Hi"}]]}
    questions = _jsonl(tmp_path / "q.json", [typed, asked])
    answers = _jsonl(tmp_path / "a.json", ANSWERS[:1])
    done = run_cli("import", "bfcl", str(questions), "--answers", str(answers), "-o", str(tmp_path / "cases"))
    q, types = str(questions), "(BFCL's Python types: string, integer, float, boolean, array, tuple, dict, any)"
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr.splitlines() == [
        f"error: {q}:1: function[0].parameters.properties.x.type: unknown type 'integr' {types}",
        f"error: {q}:1: function[1].parameters.properties.y.type: unknown type 'HashMap' {types}",
        f"error: {q}:1: id: no answer for 'simple_python_9' ({answers} has no line for it)",
        f"error: {q}:2: question[0][0].role: unknown role 'robot' (system, user or assistant)",
        f"error: {q}:2: function[0].parameters.properties.x.type: unknown type 'integr' {types}",
        f"error: {q}:2: function[1].parameters.properties.y.type: unknown type 'HashMap' {types}",
        f"error: {q}:2: id: no answer for 'simple_python_10' ({answers} has no line for it)",
    ]
    assert not (tmp_path / "cases").exists()


def test_assistant_messages_are_left_out_with_a_warning(tmp_path: Path) -> None:
    entry = {"id": "live_irrelevance_4-1-0", "function": [ROOTS], "question": [[
        {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}, {"role": "user", "content": "Bye"}]]}
    done = run_cli("import", "bfcl", str(_jsonl(tmp_path / "q.json", [entry])), "-o", str(tmp_path / "out"), "--script")
    assert done.returncode == 0
    assert done.stderr == ("warning: live_irrelevance_4-1-0: 1 assistant message(s) of the question left out: "
                           "the model answers each user message itself\n")
    case = yaml.safe_load((tmp_path / "out" / "bfcl_live_irrelevance.yml").read_text())["cases"][0]
    assert case["turns"] == ["Hi", "Bye"]
    assert case["script"] == [{"content": "Noted."}, {"content": "None of the functions fits this request."}]
    ran = run_cli("run", str(tmp_path / "out"), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert ran.returncode == 0, ran.stdout


TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=TEXT, value=TEXT | st.sampled_from(["1e3", "0o17", "yes", "null", "~", "- x", "a: b", "[x]", "?x", "#"]))
def test_any_question_and_value_read_back_as_written(tmp_path: Path, question: str, value: str) -> None:
    entry = {"id": "live_simple_0-0-0", "question": [[{"role": "user", "content": question}]], "function": [WEATHER]}
    answer = {"id": "live_simple_0-0-0", "ground_truth": [{"get_weather": {"city": [value]}}]}
    imported = import_bfcl(_jsonl(tmp_path / "q.json", [entry]), _jsonl(tmp_path / "a.json", [answer]), script=True)
    path = tmp_path / "bfcl_live_simple.yml"
    path.write_text(case_file_text("live_simple", imported.groups["live_simple"], "q.json"))
    case = load_file(path)[0]
    turn = case.turns[0] if not case.vars else case.vars["turn1"]
    assert turn == question
    assert case.expect.trace.calls[0].args == {"city": {"normalized": value}}
    assert case.script[0]["tool_calls"][0]["arguments"] == {"city": value}


def test_an_enum_an_answer_lies_outside_moves_into_the_description_and_items_take_the_answers_type(tmp_path: Path) -> None:
    doc = {"name": "find", "parameters": {"type": "dict", "required": ["genre", "size", "note"], "properties": {
        "note": {"type": "string"},
        "genre": {"type": "string", "description": "Genre.", "enum": ["Comedy", "Drama"]},
        "size": {"type": "string", "enum": ["S", "M"]}, "ids": {"type": "array", "items": {"type": "integer"}}}}}
    entry = {"id": "live_simple_1-0-0", "question": [[{"role": "user", "content": "A horror film"}]], "function": [doc]}
    answer = {"id": "live_simple_1-0-0", "ground_truth": [{"find": {"genre": ["horror"], "size": ["", "M"], "ids": [["a1"]], "note": [""]}}]}
    done = run_cli("import", "bfcl", str(_jsonl(tmp_path / "q.json", [entry])), "--answers",
                   str(_jsonl(tmp_path / "a.json", [answer])), "-o", str(tmp_path / "out"), "--script")
    assert done.returncode == 0, done.stderr
    case = yaml.safe_load((tmp_path / "out" / "bfcl_live_simple.yml").read_text())["cases"][0]
    assert case["mocks"][0]["parameters"]["properties"] == {
        "note": {"type": "string"},
        "genre": {"type": "string", "description": 'Genre. (one of ["Comedy", "Drama"])'},
        "size": {"type": "string", "enum": ["S", "M"]},
        "ids": {"type": "array", "items": {"type": ["integer", "string"]}}}  # BFCL takes an item of the answer's type
    # "size" and "note" are required: the script sends the first value that is not "", else (a string) "",
    # as BFCL's checker needs them present
    assert case["script"][0]["tool_calls"] == [
        {"name": "find", "arguments": {"genre": "horror", "size": "M", "ids": ["a1"], "note": ""}}]
    ran = run_cli("run", str(tmp_path / "out"), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert ran.returncode == 0, ran.stdout


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
                    | st.sampled_from(["user", "system", "dict", "float", "simple_1", ""]),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["id", "question", "function", "role", "content", "name", "parameters",
                                         "properties", "type", "items", "required", "ground_truth", "f", "x"]),
                        inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entry=JSON, answer=JSON)
def test_any_malformed_entry_is_an_error_never_a_crash(tmp_path: Path, entry: Any, answer: Any) -> None:
    questions = _jsonl(tmp_path / "q.json", [entry, QUESTIONS[2]])
    answers = _jsonl(tmp_path / "a.json", [answer, ANSWERS[2]])
    try:
        imported = import_bfcl(questions, answers, script=True)
    except UserErrors as e:
        assert all(str(error.location).startswith(str(tmp_path)) for error in e.errors)
    else:
        for category, cases in imported.groups.items():
            case_file_text(category, cases, "q.json")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value``."""
    inner = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    return [prefix, *[p for key, item in inner for p in _paths(item, (*prefix, key))]]


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    place = copy
    for key in path[:-1]:
        place = place[key]
    place[path[-1]] = new
    return copy


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_part_of_an_entry_replaced_is_an_error_or_a_case_never_a_crash(tmp_path: Path, data: st.DataObject) -> None:
    entry, answer = QUESTIONS[3], ANSWERS[3]
    if data.draw(st.booleans()):
        entry = _replaced(entry, data.draw(st.sampled_from(_paths(entry))), data.draw(JSON))
    else:
        answer = _replaced(answer, data.draw(st.sampled_from(_paths(answer))), data.draw(JSON))
    try:
        imported = import_bfcl(_jsonl(tmp_path / "q.json", [entry]), _jsonl(tmp_path / "a.json", [answer]), script=True)
    except UserErrors as e:
        assert all(str(error.location).startswith(str(tmp_path)) for error in e.errors)
    else:
        for category, cases in imported.groups.items():
            case_file_text(category, cases, "q.json")
