"""``tooltrial import bfcl``: the rules of BFCL's checker that the import writes into the mocks, the
expected calls and the scripts, each pinned on the written YAML and on the verdict of a run through the CLI.

- an enum is held to strings as BFCL compares them (``"OPEN"`` passes for ``[open, closed, all]``), in
  imported mocks only (``enum_match: normalized``); a case's own mock keeps JSON Schema's rule;
- a relevance entry counts every call attempted, refused or not (``min_attempts``);
- ``[]`` passes for an optional array parameter (BFCL's list checks read ``""`` as ``[]``);
- a dict whose only key is a matcher name is written ``{exact: ...}``, never read as a matcher;
- ``--script`` sends no parameter the function doc lacks;
- every single-turn Python category imports, live ones too; a category tooltrial refuses says why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from runner.spec.foreign.bfclfile import IMPORTED
from tests.helpers import run_cli

ISSUES = {"name": "list_issues", "description": "List a repository's issues.", "parameters": {
    "type": "dict", "required": ["state"], "properties": {
        "state": {"type": "string", "enum": ["open", "closed", "all"]},
        "labels": {"type": "array", "items": {"type": "string", "enum": ["bug", "docs"]}},
        "sort": {"type": "string", "enum": ["Created", "Updated"]}}}}
SEARCH = {"name": "search_media", "parameters": {"type": "dict", "required": ["query"], "properties": {
    "query": {"type": "string"},
    "filter": {"type": "array", "items": {"type": "dict"}},
    "kind": {"type": "dict", "properties": {"type": {"type": "string"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "ids": {"type": "array", "items": {"type": "integer"}}}}}


def _jsonl(path: Path, entries: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def _entry(entry_id: str, *functions: dict[str, Any], text: str = "Do it.") -> dict[str, Any]:
    return {"id": entry_id, "question": [[{"role": "user", "content": text}]], "function": list(functions)}


def _import(tmp_path: Path, entries: list[dict[str, Any]], answers: list[dict[str, Any]] | None = None) -> Path:
    """The cases folder of ``entries`` imported with ``--script``."""
    argv = ["import", "bfcl", str(_jsonl(tmp_path / "q.json", entries)), "-o", str(tmp_path / "cases"), "--script"]
    if answers is not None:
        argv += ["--answers", str(_jsonl(tmp_path / "a.json", answers))]
    done = run_cli(*argv)
    assert done.returncode == 0, done.stderr
    return tmp_path / "cases"


def _case(cases: Path, category: str) -> dict[str, Any]:
    return yaml.safe_load((cases / f"bfcl_{category}.yml").read_text())["cases"][0]


def _variants(tmp_path: Path, category: str, scripts: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Variant name -> its run record: the imported case of ``category`` (its file's defaults merged) run with
    each script through the CLI and the scripted provider."""
    data = yaml.safe_load((tmp_path / "cases" / f"bfcl_{category}.yml").read_text())
    case = data["cases"][0]
    trace = {**data["defaults"].get("expect", {}).get("trace", {}), **case["expect"]["trace"]}
    variants = [{**case, "id": name, "tags": data["defaults"]["tags"], "expect": {"trace": trace}, "script": script}
                for name, script in scripts.items()]
    (tmp_path / "variants.yml").write_text(yaml.safe_dump(variants, sort_keys=False))
    run_cli("run", str(tmp_path / "variants.yml"), "-p", "scripted", "--results", str(tmp_path / "runs"))
    runs = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/runs/*.json")]
    return {run["case"].removeprefix("variants/"): run for run in runs}


def _calls(*calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"name": name, "arguments": args} for name, args in calls]}, {"content": "Done."}]


def _verdict(run: dict[str, Any]) -> tuple[str, list[tuple[str, bool, str]], list[tuple[str, str]]]:
    """(status, each check's (name, passed, message), each step's (status, result))."""
    return (run["status"], [(c["check"], c["passed"], c["message"]) for c in run["checks"]],
            [(s["status"], s["result"]) for s in run["steps"]])


def test_an_imported_mock_holds_an_enum_to_strings_as_bfcl_compares_them(tmp_path: Path) -> None:
    answer = {"id": "live_simple_0-0-0", "ground_truth": [{"list_issues": {"state": ["open"], "labels": ["", ["bug"]],
                                                                          "sort": ["", "created"]}}]}
    cases = _import(tmp_path, [_entry("live_simple_0-0-0", ISSUES)], [answer])
    mock = _case(cases, "live_simple")["mocks"][0]
    # "created" is "Created" once normalised: the enum stays as BFCL shows it, and the mock matches it so
    assert mock == {"name": "list_issues", "description": "List a repository's issues.", "parameters": {
        "type": "object", "required": ["state"], "properties": {
            "state": {"type": "string", "enum": ["open", "closed", "all"]},
            "labels": {"type": "array", "items": {"type": "string", "enum": ["bug", "docs"]}},
            "sort": {"type": "string", "enum": ["Created", "Updated"]}}},
        "enum_match": "normalized", "responses": [{"result": "ok"}]}
    runs = _variants(tmp_path, "live_simple", {
        "upper": _calls(("list_issues", {"state": "OPEN", "labels": ["Bug"], "sort": "created"})),
        "other-member": _calls(("list_issues", {"state": "closed"})),
        "outside": _calls(("list_issues", {"state": "shut"}))})
    assert _verdict(runs["upper"]) == ("pass", [
        ("trace.calls", True, "1 expected call(s) paired one to one: #1 list_issues = call #1")], [("executed", "ok")])
    assert _verdict(runs["other-member"]) == ("fail", [
        ("trace.calls", False, ('expected call #1 list_issues {"labels": {"optional": {"any_of": [[{"normalized": '
                                '"bug"}], []]}}, "sort": {"optional": {"any_of": [{"normalized": "created"}, '
                                '{"normalized": ""}]}}, "state... found no partner: nearest call #1 {"state": "closed"} '
                                '(state: expected "open" (normalized), got "closed")'))], [("executed", "ok")])
    refused = "Error: invalid arguments for list_issues: state: 'shut' is not one of ['open', 'closed', 'all']"
    assert _verdict(runs["outside"])[2] == [("refused", refused)]


def test_a_case_s_own_mock_keeps_json_schema_s_enum(tmp_path: Path) -> None:
    own = {"name": "list_issues", "parameters": {"type": "object", "properties": {
        "state": {"type": "string", "enum": ["open", "closed"]}}}, "responses": [{"result": "ok"}]}
    case = {"id": "own", "turns": ["List them"], "tools": ["list_issues"], "mocks": [own],
            "script": _calls(("list_issues", {"state": "OPEN"})), "expect": {"trace": {"min_calls": 1}}}
    loose = {**case, "id": "loose", "mocks": [{**own, "enum_match": "normalized"}]}
    (tmp_path / "own.yml").write_text(json.dumps([case, loose]))
    run_cli("run", str(tmp_path / "own.yml"), "-p", "scripted", "--results", str(tmp_path / "runs"))
    runs = {r["case"]: r for r in (json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/runs/*.json"))}
    refused = "Error: invalid arguments for list_issues: state: 'OPEN' is not one of ['open', 'closed']"
    assert _verdict(runs["own/own"]) == ("fail", [
        ("trace.min_calls", False, (f"0 tool calls, at least 1 required (not counted: 1 refused call of list_issues: "
                                    f"{refused.removeprefix('Error: ')})"))], [("refused", refused)])
    assert _verdict(runs["own/loose"]) == ("pass", [
        ("trace.min_calls", True, "1 tool call, meeting the minimum of 1")], [("executed", "ok")])


def test_a_relevance_entry_counts_every_call_attempted(tmp_path: Path) -> None:
    cases = _import(tmp_path, [_entry("live_relevance_0-0-0", ISSUES)])
    case = _case(cases, "live_relevance")
    assert case["expect"] == {"trace": {"min_attempts": 1}}
    assert case["script"] == _calls(("list_issues", {"state": "open"}))
    runs = _variants(tmp_path, "live_relevance", {
        "refused": _calls(("list_issues", {"state": 3})),
        "unknown-tool": _calls(("close_issue", {"number": 3})),
        "no-call": [{"content": "None fits."}]})
    assert _verdict(runs["refused"]) == ("pass", [
        ("trace.min_attempts", True, "1 tool call attempted, meeting the minimum of 1")],
        [("refused", "Error: invalid arguments for list_issues: state: 3 is not of type 'string'")])
    assert _verdict(runs["unknown-tool"])[:2] == ("pass", [
        ("trace.min_attempts", True, "1 tool call attempted, meeting the minimum of 1")])
    assert _verdict(runs["no-call"]) == ("fail", [
        ("trace.min_attempts", False, "0 tool calls attempted, at least 1 required")], [])
    assert runs["no-call"]["failure"] == "no_tools"


def test_an_optional_array_parameter_takes_an_empty_list(tmp_path: Path) -> None:
    answer = {"id": "simple_python_0", "ground_truth": [{"search_media": {
        "query": ["cats"], "tags": [["funny"], ""], "ids": [""], "filter": [[{"kind": ["video"]}], ""]}}]}
    cases = _import(tmp_path, [_entry("simple_python_0", SEARCH)], [answer])
    assert _case(cases, "simple_python")["expect"]["trace"]["calls"] == [{"name": "search_media", "args": {
        "query": {"normalized": "cats"},
        "tags": {"optional": {"any_of": [[{"normalized": "funny"}], []]}},
        "ids": {"optional": []},
        "filter": {"optional": {"any_of": [[{"kind": {"normalized": "video"}}], []]}}}}]
    runs = _variants(tmp_path, "simple_python", {
        "empty": _calls(("search_media", {"query": "Cats", "tags": [], "ids": [], "filter": []})),
        "not-empty": _calls(("search_media", {"query": "cats", "ids": [1]}))})
    assert _verdict(runs["empty"])[:2] == ("pass", [
        ("trace.calls", True, "1 expected call(s) paired one to one: #1 search_media = call #1")])
    assert _verdict(runs["not-empty"])[1][0][2].endswith(
        'nearest call #1 {"ids": [1], "query": "cats"} (ids: expected [], got [1])')


def test_a_required_array_whose_only_value_is_optional_is_scripted_empty(tmp_path: Path) -> None:
    doc = {"name": "record", "parameters": {"type": "dict", "required": ["done", "note"], "properties": {
        "done": {"type": "array", "items": {"type": "string"}}, "note": {"type": "string"}}}}
    answer = {"id": "live_simple_1-0-0", "ground_truth": [{"record": {"done": [""], "note": [""]}}]}
    cases = _import(tmp_path, [_entry("live_simple_1-0-0", doc)], [answer])
    case = _case(cases, "live_simple")
    assert case["script"] == _calls(("record", {"done": [], "note": ""}))
    assert run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "runs")).returncode == 0


def test_a_dict_answer_whose_only_key_is_a_matcher_name_is_written_exact(tmp_path: Path) -> None:
    answer = {"id": "multiple_0", "ground_truth": [{"search_media": {
        "query": ["cats"], "filter": [[{"type": ["video"]}]], "kind": [{"type": ["clip", ""]}],
        "tags": [[{"exact": "x"}]]}}]}
    cases = _import(tmp_path, [_entry("multiple_0", SEARCH, ISSUES)], [answer])
    case = _case(cases, "multiple")
    assert case["expect"]["trace"]["calls"] == [{"name": "search_media", "args": {
        "query": {"normalized": "cats"},
        "filter": [{"exact": {"type": {"normalized": "video"}}}],
        "kind": {"exact": {"type": {"optional": {"any_of": [{"normalized": "clip"}, {"normalized": ""}]}}}},
        "tags": [{"exact": {"exact": "x"}}]}}]
    assert case["script"] == _calls(("search_media", {"query": "cats", "filter": [{"type": "video"}],
                                                      "kind": {"type": "clip"}, "tags": [{"exact": "x"}]}))
    runs = _variants(tmp_path, "multiple", {
        "first": case["script"],
        "other-type": _calls(("search_media", {"query": "cats", "filter": [{"type": "audio"}], "kind": {},
                                               "tags": [{"exact": "x"}]}))})
    assert _verdict(runs["first"])[:2] == ("pass", [
        ("trace.calls", True, "1 expected call(s) paired one to one: #1 search_media = call #1")])
    assert _verdict(runs["other-type"])[1][0][2].endswith(
        '(filter[0].type: expected "video" (normalized), got "audio")')


def test_the_script_sends_no_parameter_the_function_doc_lacks(tmp_path: Path) -> None:
    answer = {"id": "parallel_0", "ground_truth": [{"search_media": {"query": ["cats"], "type": ["video", ""]}},
                                                  {"search_media": {"query": ["dogs"], "page": [2]}}]}
    cases = _import(tmp_path, [_entry("parallel_0", SEARCH)], [answer])
    case = _case(cases, "parallel")
    assert case["script"] == _calls(("search_media", {"query": "cats"}), ("search_media", {"query": "dogs"}))
    assert [call["args"] for call in case["expect"]["trace"]["calls"]] == [
        {"query": {"normalized": "cats"}, "type": {"absent": True}}, {"query": {"normalized": "dogs"}, "page": 2}]
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "runs"))
    [run] = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/runs/*.json")]
    # "page" is no parameter of the doc: BFCL's checker rejects it sent and misses it left out, so no call passes
    assert (done.returncode, _verdict(run)[1]) == (1, [("trace.calls", False,
        ('expected call #2 search_media {"page": 2, "query": {"normalized": "dogs"}} found no partner: nearest '
         'call #2 {"query": "dogs"} (page: missing)'))])


def test_every_single_turn_python_category_imports_and_its_script_passes(tmp_path: Path) -> None:
    ast = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
           "live_parallel", "live_parallel_multiple")
    ids = {category: f"{category}_0" if category in ast[:4] else f"{category}_0-0-0" for category in ast}
    relevance = {"irrelevance": "irrelevance_0", "live_irrelevance": "live_irrelevance_0-0-0",
                 "live_relevance": "live_relevance_0-0-0"}
    entries = [_entry(entry_id, ISSUES) for entry_id in [*ids.values(), *relevance.values()]]
    answers = [{"id": entry_id, "ground_truth": [{"list_issues": {"state": ["all"]}}]} for entry_id in ids.values()]
    cases = _import(tmp_path, entries, answers)
    assert sorted(p.name for p in cases.iterdir()) == sorted(f"bfcl_{c}.yml" for c in [*ast, *relevance])
    assert {c: _case(cases, c)["expect"] for c in relevance} == {
        "irrelevance": {"trace": {"max_calls": 0}}, "live_irrelevance": {"trace": {"max_calls": 0}},
        "live_relevance": {"trace": {"min_attempts": 1}}}
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "runs"))
    assert (done.returncode, "11/11 passed" in done.stdout) == (0, True), done.stdout


def test_a_category_tooltrial_does_not_import_says_why(tmp_path: Path) -> None:
    turns = _jsonl(tmp_path / "q.json", [_entry("multi_turn_base_0", ISSUES), _entry("web_search_3", ISSUES),
                                         _entry("simple_javascript_1", ISSUES), _entry("exec_simple_2", ISSUES)])
    done = run_cli("import", "bfcl", str(turns), "-o", str(tmp_path / "cases"))
    q, hint = str(turns), f"(tooltrial imports {IMPORTED})"
    assert (done.returncode, done.stderr.splitlines()) == (4, [
        (f"error: {q}:1: id: category 'multi_turn_base' is not imported: its turns call BFCL's stateful Python "
         f"classes and are checked by the state and results they leave {hint}"),
        (f"error: {q}:2: id: category 'web_search' is not imported: the model searches the live web and is checked "
         f"by its final answer {hint}"),
        (f"error: {q}:3: id: category 'simple_javascript' is not imported: its arguments are JavaScript source text, "
         f"which BFCL's checker converts by JavaScript's types {hint}"),
        (f"error: {q}:4: id: category 'exec_simple' is not imported: its answers are calls BFCL runs to compare "
         f"their results, a category BFCL no longer scores {hint}")])
    # memory ids (memory_0-customer-0) and format_sensitivity (one JSON object, not lines) are known by their file
    for category, why in (("memory", "it needs BFCL's memory backends, filled by conversations before each question"),
                          ("format_sensitivity", ("it asks other categories' entries again in the prompt formats of "
                                                  "models that write calls as text"))):
        path = tmp_path / f"BFCL_v4_{category}.json"
        path.write_text('{\n  "simple_python": ["simple_python_58"]\n}\n')
        done = run_cli("import", "bfcl", str(path), "-o", str(tmp_path / "cases"))
        assert (done.returncode, done.stderr) == (4, f"error: {path}: category {category!r} is not imported: {why} {hint}\n")
    assert not (tmp_path / "cases").exists()
