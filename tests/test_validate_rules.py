"""``tooltrial validate`` catches checks that can never pass (errors) and checks that check nothing
(warnings), each where it was written, with a did-you-mean; ``--strict`` makes warnings errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.errors import CaseFileWarning, ExitCode
from runner.spec.case import build_case as build
from runner.spec.casefile import validate_file
from runner.spec.discover import select
from runner.spec.unmatched import why_none_selected
from runner.tools.registry import BUILTIN_NAMES, BUILTINS
from tests.helpers import run_cli

ISSUE = """\
- id: typos
  tools: [read_file, grep]
  turns: [Read a.txt]
  expect:
    trace:
      must_include: [serach, bash]
      avoid: [writ_file]
      args: {nosuchtool: {x: 1}, read_file: {file_path: a.txt}}
  script: [{content: hi}]
"""


def _write(folder: Path, name: str, text: str) -> Path:
    (folder / "cases").mkdir(exist_ok=True)
    path = folder / "cases" / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_issue_s_case_gives_one_positioned_error_per_check_that_can_never_pass(tmp_path: Path) -> None:
    _write(tmp_path, "t.yml", ISSUE)
    done = run_cli("validate", "cases/t.yml", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr.splitlines() == [
        ("error: cases/t.yml:6:22: expect.trace.must_include[0]: unknown tool 'serach' "
         "(known tools: read_file, write_file, edit_file, list_dir, glob, grep, bash)"),
        ("error: cases/t.yml:6:30: expect.trace.must_include[1]: tool 'bash' is not offered by the case "
         "(a call of it is refused and never counts; add it to tools (offered: read_file, grep))"),
        "error: cases/t.yml:7:15: expect.trace.avoid[0]: unknown tool 'writ_file' (did you mean 'write_file'?)",
        ("error: cases/t.yml:8:14: expect.trace.args: unknown tool 'nosuchtool' "
         "(known tools: read_file, write_file, edit_file, list_dir, glob, grep, bash)"),
        ("error: cases/t.yml:8:46: expect.trace.args.read_file: read_file has no parameter 'file_path' "
         "(its schema allows no other), so no call can match (did you mean 'path'?)"),
    ]


DENIED = """\
defaults:
  deny: [bash]
cases:
  - id: denied
    turns:
      - content: Count the lines.
        expect: {trace: {order: [read_file, bash]}}
    expect:
      verify: ["test -f a.txt", "  "]
      trace: {exact: [bash], args: {bash: {command: wc -l a.txt}}, expected: [bash]}
    script: [{content: hi}]
  - id: empty-verify
    turns: [Hi.]
    expect: {verify: ""}
    script: [{content: hi}]
"""


def test_a_denied_tool_in_a_check_that_counts_only_calls_that_ran_is_an_error_and_so_is_an_empty_verify(
        tmp_path: Path) -> None:
    _write(tmp_path, "d.yml", DENIED)
    done = run_cli("validate", "cases", cwd=tmp_path)
    refused = "is denied by the case (a call of it is refused and never counts; remove it from deny)"
    empty = "empty verify command: it passes whatever the agent did" \
            " (write a shell command that exits 0 only when the task is done, or remove verify)"
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.splitlines() == [
        f"error: cases/d.yml:7:45: turns[0].expect.trace.order[1]: tool 'bash' {refused}",
        f"error: cases/d.yml:9:33: expect.verify[1]: {empty}",
        f"error: cases/d.yml:10:23: expect.trace.exact[0]: tool 'bash' {refused}",
        f"error: cases/d.yml:10:37: expect.trace.args: tool 'bash' {refused}",
        f"error: cases/d.yml:10:79: expect.trace.expected[0]: tool 'bash' {refused}",  # accuracy counts calls that ran
        f"error: cases/d.yml:14:22: expect.verify: {empty}",
    ]


WARNED = """\
- id: warned
  tools: [read_file, lookup]
  deny: [bash]
  turns: [Look it up.]
  mocks:
    - name: lookup
      description: Looks a word up.
      parameters:
        type: object
        properties:
          word: {type: string}
          options: {type: object, properties: {lang: {type: string}}, additionalProperties: false}
      responses: [{result: found}]
  expect:
    response_contains: [found]
    trace:
      must_include: [lookup]
      avoid: [write_file]
      args:
        lookup: {wrd: x, options: {language: en}}
        read_file: {limit: {absent: true}, lines: {absent: true}}
  script:
    - tool_calls: [{name: lookup, arguments: {word: x}}]
    - content: found
"""


def test_checks_that_check_nothing_are_warnings_that_stop_nothing_and_strict_makes_them_errors(tmp_path: Path) -> None:
    _write(tmp_path, "w.yml", WARNED)
    lines = [
        ("cases/w.yml:3:10: deny[0]: tool 'bash' is not offered by the case, so denying it changes nothing"
         " (remove it, or add it to tools (offered: read_file, lookup))"),
        ("cases/w.yml:18:15: expect.trace.avoid[0]: tool 'write_file' is not offered by the case, so avoiding it"
         " checks nothing (remove it, or add it to tools (offered: read_file, lookup))"),
        ("cases/w.yml:20:18: expect.trace.args.lookup: lookup's schema does not declare the parameter 'wrd':"
         " the model is never told of it (did you mean 'word'?)"),
        ("cases/w.yml:20:36: expect.trace.args.lookup.options: lookup has no parameter 'language' (its schema allows"
         " no other), so no call can match (did you mean 'lang'?)"),
        ("cases/w.yml:21:44: expect.trace.args.read_file: read_file has no parameter 'lines', so {absent: true}"
         " always holds (read_file's parameters here: path, offset, limit)"),
    ]
    done = run_cli("validate", "cases", cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE  # the nested closed object is an error
    assert done.stderr.splitlines() == [f"{'error' if 'allows no other' in line else 'warning'}: {line}"
                                        for line in lines]
    _write(tmp_path, "w.yml", WARNED.replace("language: en", "lang: en"))
    done = run_cli("validate", "cases", cwd=tmp_path)
    kept = [line for line in lines if "allows no other" not in line]
    assert (done.returncode, done.stdout) == (ExitCode.OK, "1 case in 1 file is valid (4 warnings)\n")
    assert done.stderr.splitlines() == [f"warning: {line}" for line in kept]
    strict = run_cli("validate", "cases", "--strict", cwd=tmp_path)
    assert (strict.returncode, strict.stdout) == (ExitCode.USAGE, "")
    assert strict.stderr.splitlines() == [f"error: {line}" for line in kept]
    ran = run_cli("run", "cases", "--results", str(tmp_path / "results"), cwd=tmp_path)
    # a warning stops no run: the case runs as written (and fails its args check: wrd is never sent)
    assert (ran.returncode, ran.stdout.splitlines()[0]) == (ExitCode.FAILED, "FAIL w/warned")
    assert "warning" not in ran.stderr


def test_a_mock_without_properties_has_no_parameter_rule_and_a_mock_named_like_a_builtin_replaces_its_schema(
        tmp_path: Path) -> None:
    path = _write(tmp_path, "m.yml", """\
- id: mocked
  turns: [Go.]
  mocks:
    - {name: free, description: Anything., parameters: {type: object}, responses: [{result: ok}]}
    - name: read_file
      description: A read_file of the case's own.
      parameters: {type: object, properties: {file_path: {type: string}}, additionalProperties: false}
      responses: [{result: ok}]
  expect:
    trace: {args: {free: {anything: 1}, read_file: {file_path: a.txt}}}
""")
    assert validate_file(path) == []


def test_every_builtin_schema_is_closed_as_the_rules_read_it() -> None:
    # a parameter a builtin does not declare is an error only because no builtin accepts another
    assert all(tool.parameters["additionalProperties"] is False for tool in BUILTINS.values())


def test_a_schema_error_is_reported_for_every_case_that_repeats_the_schema(tmp_path: Path) -> None:
    mock = "  mocks: [{name: m, description: d, parameters: {type: object, required: x}, responses: [{result: r}]}]\n"
    path = _write(tmp_path, "s.yml", "".join(f"- id: c{n}\n  turns: [Go.]\n{mock}" for n in range(3)))
    assert [e.render() for e in validate_file(path)] == [
        f"{path}:{line}:49: mocks[0].parameters: invalid JSON Schema at 'required': 'x' is not of type 'array'" for line in (3, 6, 9)]


@settings(max_examples=40, deadline=None)
@given(offered=st.lists(st.sampled_from(BUILTIN_NAMES), min_size=1, max_size=4, unique=True),
       named=st.sampled_from(BUILTIN_NAMES), key=st.sampled_from(["must_include", "exact", "order", "avoid"]))
def test_a_builtin_a_trace_check_names_is_reported_exactly_when_the_case_does_not_offer_it(
        tmp_path_factory, offered: list[str], named: str, key: str) -> None:
    folder = tmp_path_factory.mktemp("offered")
    path = folder / "p.yml"
    path.write_text(f"- id: p\n  tools: [{', '.join(offered)}]\n  turns: [Go.]\n"
                    f"  expect: {{trace: {{{key}: [{named}]}}}}\n", encoding="utf-8")
    found = validate_file(path)
    if named in offered:
        assert found == []
    else:
        (one,) = found
        assert isinstance(one, CaseFileWarning) == (key == "avoid")
        assert (one.location.line, one.location.column, one.path) == (4, 23 + len(key), f"expect.trace.{key}[0]")


PROMPTED = """\
- id: with-repo
  vars: {repo: calc}
  tools: [read_file, lookup]
  mocks: [{name: lookup, description: Looks a word up., responses: [{result: found}]}]
  turns: [Hi.]
- id: no-repo
  tags: [shell]
  turns: [Hi.]
- id: own-prompt
  system: Own prompt.
  turns: [Hi.]
"""
TEMPLATE = "In {{ workspace }} on {{ case.full_id }} ({{ case.tags | join(',') }}).\n" \
           "Tools: {% for t in tools %}{{ t.name }}={{ t.description[:5] }} {% endfor %}\nRepo: {{ vars.repo }}\n"


def test_validate_p_renders_the_template_against_each_selected_case_and_names_where_it_fails(tmp_path: Path) -> None:
    _write(tmp_path, "p.yml", PROMPTED)
    (tmp_path / "mine.j2").write_text(TEMPLATE, encoding="utf-8")
    done = run_cli("validate", "cases", "-P", "mine.j2", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == ("error: mine.j2:3: vars has no attribute 'repo', for p/no-repo"
                           " (define it under the case's vars:, or check its spelling)\n")
    kept = run_cli("validate", "cases", "-P", "mine.j2", "-c", "p/with-repo", "-c", "p/own-prompt", cwd=tmp_path)
    assert (kept.returncode, kept.stderr) == (ExitCode.OK, "")
    assert kept.stdout.splitlines() == ["2 of 3 cases in 1 file selected; all are valid",
                                        "mine.j2 renders for 1 case (1 more use their own system:)"]
    (tmp_path / "bad.j2").write_text("{{ tools[0].name }}\n{% if %}\n", encoding="utf-8")
    bad = run_cli("validate", "cases", "-P", "bad.j2", cwd=tmp_path)
    assert bad.stderr == ("error: bad.j2:2: Expected an expression, got 'end of statement block', for all 2 cases"
                          " (close each {{ with }} and each {% with %}; write {{ '{{' }} for literal braces)\n")


def test_the_template_sees_the_tools_the_case_offers_in_order_with_their_descriptions() -> None:
    from runner.run.prompts import context_for, render
    from runner.run.templatecheck import WORKSPACE, offered_specs
    from runner.spec.case import build_case

    case = build_case(Path("p.yml"), "p", 1, {"id": "c", "vars": {"repo": "calc"}, "tools": ["lookup", "read_file"],
                                              "mocks": [{"name": "lookup", "description": "Looks a word up.",
                                                         "responses": [{"result": "x"}]}],
                                              "turns": ["Hi."], "tags": ["a"]}, Path("fixtures"))
    text = render(TEMPLATE, context_for(case, offered_specs(case), WORKSPACE), "mine.j2")
    assert text == "In /workspace on p/c (a).\nTools: lookup=Looks read_file=Read  \nRepo: calc"


SELECTABLE = """\
- {id: fix-one, tags: [python], turns: [Hi.], script: [{content: hi}]}
- {id: other, tags: [shell], turns: [Hi.], script: [{content: hi}]}
"""


def test_a_selection_of_no_case_names_the_filter_that_matched_nothing_and_the_nearest_ids_or_tags(
        tmp_path: Path) -> None:
    _write(tmp_path, "mine.yml", SELECTABLE)

    def why(*argv: str) -> list[str]:
        done = run_cli("list", "cases", *argv, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (ExitCode.NO_CASES, "")
        return done.stderr.splitlines()

    assert why("-c", "fix-*") == [("no case selected: -c fix-* is matched against group/id, not the id alone"
                                   " (did you mean -c mine/fix-one, or -c '*/fix-*' for every group?)")]
    assert why("--tag", "PYTHON") == [("no case selected: --tag PYTHON: no case has this tag"
                                       " (tags match exactly, case too: did you mean --tag python?)")]
    assert why("--tag", "shel") == ["no case selected: --tag shel: no case has this tag (did you mean --tag shell?)"]
    assert why("--tag", "zzz") == ["no case selected: --tag zzz: no case has this tag (the cases' tags: python, shell)"]
    assert why("-c", "mine/fix-on") == [("no case selected: -c mine/fix-on matches no case's group/id"
                                         " (did you mean -c mine/fix-one?)")]
    assert why("-c", "fxi-one", "--tag", "nope") == [
        ("no case selected: -c fxi-one is matched against group/id, and no case's id matches it either"
         " (did you mean -c mine/fix-one?)"),
        "no case selected: --tag nope: no case has this tag (the cases' tags: python, shell)"]
    assert why("-c", "mine/fix*", "--tag", "shell") == [
        "no case selected: -c mine/fix* matches 1 case and --tag shell 1, but no case both (the tags of the 1: python)"]


@pytest.mark.parametrize(("glob", "why"), [
    ("search", "-c search is matched against group/id, not the group alone (did you mean -c 'search/*'?)"),
    ("serch/*", "-c serch/* matches no case's group/id (did you mean -c 'search/*'?)"),
    ("serch", "-c serch is matched against group/id, and no case's id matches it either (did you mean -c 'search/*'?)"),
    ("serch/find-*", "-c serch/find-* matches no case's group/id (did you mean -c 'search/find-*'?)"),
])
@pytest.mark.parametrize("command", ["list", "run", "validate"])
def test_a_group_named_alone_or_misspelt_suggests_the_group_s_glob(tmp_path: Path, glob: str, why: str,
                                                                   command: str) -> None:
    _write(tmp_path, "search.yml", "- {id: find-usages, turns: [Hi.], script: [{content: hi}]}\n")
    _write(tmp_path, "other.yml", "- {id: one, turns: [Hi.], script: [{content: hi}]}\n")
    done = run_cli(command, "cases", "-c", glob, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (ExitCode.NO_CASES, "", f"no case selected: {why}\n")


def test_validate_chooses_cases_as_list_does_and_an_empty_selection_exits_5_saying_why(tmp_path: Path) -> None:
    _write(tmp_path, "mine.yml", SELECTABLE)
    for extra in ([], ["--baseline"]):
        done = run_cli("validate", "cases", "-c", "nosuch/*", *extra, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (ExitCode.NO_CASES, "")
        assert done.stderr == "no case selected: -c nosuch/* matches no case's group/id ('tooltrial list' shows them)\n"
    tagged = run_cli("validate", "cases", "--tag", "shel", cwd=tmp_path)
    assert (tagged.returncode, tagged.stderr) == (ExitCode.NO_CASES, ("no case selected: --tag shel: no case has this"
                                                                      " tag (did you mean --tag shell?)\n"))
    kept = run_cli("validate", "cases", "--tag", "shell", "--baseline", cwd=tmp_path)
    assert (kept.returncode, kept.stderr) == (ExitCode.FAILED, "")
    assert kept.stdout.splitlines() == [
        "1 of 2 cases in 1 file selected; all are valid",
        "error: cases/mine.yml:2: mine/other passes with the do-nothing agent: its checks do not test the task",
        "warning: cases/mine.yml:2: mine/other passes with the random-tools agent: its checks do not test the task",
        "baseline: 1 of 1 cases pass without doing the task"]


def test_without_a_path_the_project_s_cases_folder_replaces_the_bundled_suite(tmp_path: Path) -> None:
    _write(tmp_path, "mine.yml", SELECTABLE)
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": None}
    listed = run_cli("list", cwd=tmp_path, env=env)
    assert (listed.returncode, listed.stdout.split()) == (ExitCode.OK, ["mine/fix-one", "mine/other"])
    sources = run_cli("list", "--sources", cwd=tmp_path, env=env)
    assert sources.stdout.splitlines()[0].split() == ["mine/fix-one", "cases", "cases/mine.yml:1"]
    validated = run_cli("validate", cwd=tmp_path, env=env)
    assert validated.stdout == "2 cases in 1 file are valid\n"
    ran = run_cli("run", "-c", "mine/other", "--results", str(tmp_path / "results"), cwd=tmp_path, env=env)
    assert (ran.returncode, ran.stdout.splitlines()[0]) == (ExitCode.OK, "PASS mine/other")
    (tmp_path / "cases" / "mine.yml").unlink()
    (tmp_path / "cases").rmdir()
    bundled = run_cli("list", "--sources", cwd=tmp_path, env=env)
    assert bundled.stdout.splitlines()[0].split()[1] == "bundled"


_CASES = [build(Path("g.yml"), group, 1, {"id": case_id, "tags": tags, "turns": ["Hi."]}, Path("fixtures"))
          for group, case_id, tags in (("fs", "read-one", ["smoke", "fs"]), ("fix", "fix-one", ["python"]),
                                       ("fix", "fix-two", []))]


@settings(max_examples=200, deadline=None)
@given(globs=st.lists(st.sampled_from(["fs/*", "*/fix-*", "fix-*", "fs/read-on", "nothing", "fix/fix-two", "*"]),
                      max_size=2),
       tags=st.lists(st.sampled_from(["smoke", "SMOKE", "python", "pyth", "zzz"]), max_size=2))
def test_a_reason_is_given_exactly_when_the_filters_select_nothing(globs: list[str], tags: list[str]) -> None:
    reasons = why_none_selected(_CASES, globs, tags)
    assert bool(reasons) == (not select(_CASES, globs, tags))
    unmatched = [g for g in globs if not select(_CASES, [g])] + [t for t in tags if not select(_CASES, tags=[t])]
    if reasons:  # one line per filter that matched nothing, else one saying no case matches both
        assert len(reasons) == (len(unmatched) or 1)


def test_new_appends_to_a_file_whose_cases_have_warnings(tmp_path: Path) -> None:
    _write(tmp_path, "mine.yml", "- {id: old, tools: [read_file], turns: [Hi.], expect: {trace: {avoid: [bash]}}}\n")
    done = run_cli("new", "mine/fresh", cwd=tmp_path)
    assert (done.returncode, done.stdout.splitlines()[0]) == (ExitCode.OK, "wrote mine/fresh to cases/mine.yml:3")


CALLS = """\
- id: calls
  tools: [read_file, lookup]
  mocks:
    - name: lookup
      description: Looks a word up.
      parameters: {type: object, properties: {word: {type: string}}, additionalProperties: false}
      responses: [{result: found}]
  turns: [Look it up.]
  expect:
    trace:
      calls:
        - {name: lookup, args: {wrod: x}}
        - {name: bash}
        - {name: read_file, args: {exact: {pth: a.txt}}}
      args: {read_file: {exact: {path: a.txt, lmit: 2}}}
"""


def test_calls_items_and_exact_specs_are_held_to_the_offered_tools_and_their_parameters(tmp_path: Path) -> None:
    _write(tmp_path, "c.yml", CALLS)
    done = run_cli("validate", "cases", cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.splitlines() == [
        ("error: cases/c.yml:12:33: expect.trace.calls[0].args: lookup has no parameter 'wrod' (its schema allows"
         " no other), so no call can match (did you mean 'word'?)"),
        ("error: cases/c.yml:13:18: expect.trace.calls[1].name: tool 'bash' is not offered by the case"
         " (a call of it is refused and never counts; add it to tools (offered: read_file, lookup))"),
        ("error: cases/c.yml:14:44: expect.trace.calls[2].args.exact: read_file has no parameter 'pth' (its schema"
         " allows no other), so no call can match (did you mean 'path'?)"),
        ("error: cases/c.yml:15:47: expect.trace.args.read_file.exact: read_file has no parameter 'lmit' (its schema"
         " allows no other), so no call can match (did you mean 'limit'?)"),
    ]


MISSPELT = """\
- id: weather
  tools: [get_weather, read_file]
  mocks:
    - name: get_weather
      description: The weather in a city.
      parameters:
        type: object
        properties: {city: {type: string}, unit: {type: string}, where: {}, near: {type: object, properties: {types: {}}}}
      responses: [{result: sunny}]
  turns: [Weather in Paris?]
  expect:
    trace:
      args: {get_weather: {city: {normalised: Paris}, unit: {optinal: celsius}, where: {any_off: [a, b]}}}
      calls:
        - {name: get_weather, args: {city: {any_of: [{normalised: Paris}, {contains: Par}]}, near: {types: 1}}}
        - {name: read_file, args: {exact: {path: {optinal: a.txt}}}}
"""


def test_a_misspelt_matcher_name_is_an_error_where_the_schema_types_the_value_else_a_warning(tmp_path: Path) -> None:
    _write(tmp_path, "w.yml", MISSPELT)
    done = run_cli("validate", "cases", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    never = "is not a matcher name, so this asks for an object, and the schema says string: no call can match"
    assert done.stderr.splitlines() == [
        f"error: cases/w.yml:13:35: expect.trace.args.get_weather.city: 'normalised' {never} (did you mean 'normalized'?)",
        f"error: cases/w.yml:13:62: expect.trace.args.get_weather.unit: 'optinal' {never} (did you mean 'optional'?)",
        ("warning: cases/w.yml:13:89: expect.trace.args.get_weather.where: 'any_off' is not a matcher name, so this"
         " asks for an object with a key 'any_off' (did you mean 'any_of'?)"),
        (f"error: cases/w.yml:15:55: expect.trace.calls[0].args.city.any_of[0]: 'normalised' {never}"
         " (did you mean 'normalized'?)"),
        # a builtin's parameter typed string, as a mock's: read_file's path
        f"error: cases/w.yml:16:51: expect.trace.calls[1].args.exact.path: 'optinal' {never} (did you mean 'optional'?)",
    ]
    fixed = MISSPELT.replace("normalised", "normalized").replace("optinal", "optional").replace("any_off", "any_of")
    _write(tmp_path, "w.yml", fixed)
    clean = run_cli("validate", "cases", "--strict", cwd=tmp_path)
    assert (clean.returncode, clean.stderr, clean.stdout) == (ExitCode.OK, "", "1 case in 1 file is valid\n")


@settings(max_examples=100, deadline=None)
@given(key=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12))
def test_only_a_key_close_to_a_matcher_name_is_taken_for_a_misspelt_matcher(key: str) -> None:
    import difflib

    from runner.spec.matchers import MATCHERS, is_matcher
    from runner.spec.positions import Spot
    from runner.spec.tracerules import misspelt_matchers

    spot = Spot("f.yml", None, ("c",))
    found = misspelt_matchers({"p": {key: 1}}, {"properties": {"p": {"type": "string"}}}, ["args"], spot, None, top=True)
    close = not is_matcher({key: 1}) and bool(difflib.get_close_matches(key, MATCHERS, n=1, cutoff=0.75))
    assert len(found) == int(close)
    assert all(not isinstance(f, CaseFileWarning) for f in found)


MISSPELT_BUILTIN_AND_JSON = """\
- id: grep
  turns: [Find x.]
  expect:
    trace: {args: {grep: {pattern: {normalised: x}}}}
- id: city
  turns: [The capital of France as JSON?]
  expect:
    response_json:
      paths: {city: {normalised: paris}}
- id: typed
  turns: [The capital of France as JSON?]
  expect:
    response_json:
      schema: {type: object, properties: {trip: {type: object, properties: {city: {type: string}}}}}
      paths: {trip.city: {any_of: [{normalised: paris}]}, "length(trip)": {typ: number}}
"""


def test_a_misspelt_matcher_on_a_builtin_s_string_parameter_or_in_response_json_paths_is_told(tmp_path: Path) -> None:
    _write(tmp_path, "m.yml", MISSPELT_BUILTIN_AND_JSON)
    done = run_cli("validate", "cases", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr.splitlines() == [
        ("error: cases/m.yml:4:37: expect.trace.args.grep.pattern: 'normalised' is not a matcher name, so this asks"
         " for an object, and the schema says string: no call can match (did you mean 'normalized'?)"),
        ("warning: cases/m.yml:9:22: expect.response_json.paths.city: 'normalised' is not a matcher name, so this"
         " asks for an object with a key 'normalised' (did you mean 'normalized'?)"),
        ("error: cases/m.yml:15:37: expect.response_json.paths.trip.city.any_of[0]: 'normalised' is not a matcher"
         " name, so this asks for an object, and the schema says string: no reply can match (did you mean 'normalized'?)"),
        ("warning: cases/m.yml:15:76: expect.response_json.paths.length(trip): 'typ' is not a matcher name, so this"
         " asks for an object with a key 'typ' (did you mean 'type'?)"),
    ]
    fixed = MISSPELT_BUILTIN_AND_JSON.replace("normalised", "normalized").replace("typ:", "type:")
    _write(tmp_path, "m.yml", fixed)
    clean = run_cli("validate", "cases", "--strict", cwd=tmp_path)
    assert (clean.returncode, clean.stderr, clean.stdout) == (ExitCode.OK, "", "3 cases in 1 file are valid\n")


SCRIPT_TYPO = """\
- id: find
  tools: [grep, read_file]
  deny: [read_file]
  mocks: [{name: lookup, responses: [{result: ok}]}]
  turns: [Find TODO.]
  script:
    - tool_calls: [{name: grepp, arguments: {pattern: TODO}}, {name: read_file, arguments: {path: a}}]
    - tool_calls: [{name: lookup, arguments: {}}]
    - content: Found it.
"""


def test_a_script_call_of_a_tool_the_case_does_not_offer_is_a_warning_with_the_nearest_name(tmp_path: Path) -> None:
    _write(tmp_path, "s.yml", SCRIPT_TYPO)
    done = run_cli("validate", "cases", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (ExitCode.OK, "1 case in 1 file is valid (2 warnings)\n")
    assert done.stderr.splitlines() == [  # a denied tool is offered: its refusal is what such a script tests
        ("warning: cases/s.yml:7:27: script[0].tool_calls[0].name: tool 'grepp' is not offered by the case, so this"
         " scripted call is refused (did you mean 'grep'?)"),
        ("warning: cases/s.yml:8:27: script[1].tool_calls[0].name: tool 'lookup' is not offered by the case, so this"
         " scripted call is refused (offered: grep, read_file)"),
    ]
    fixed = SCRIPT_TYPO.replace("grepp", "grep").replace("tools: [grep, read_file]", "tools: [grep, read_file, lookup]")
    _write(tmp_path, "s.yml", fixed)
    clean = run_cli("validate", "cases", "--strict", cwd=tmp_path)
    assert (clean.returncode, clean.stderr, clean.stdout) == (ExitCode.OK, "", "1 case in 1 file is valid\n")
