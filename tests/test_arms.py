"""Arms on the command line: a provider or prompt file given twice is refused before any run, prompt files
with one name in different folders get labels that tell them apart, and no two arms ever share a label."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.errors import ExitCode, UserError
from runner.providers.kind import ProviderSpec
from runner.providers.registry import resolve_provider
from runner.run.prompts import PromptTemplate, prompt_labels
from runner.suite.options import make_arms
from tests.helpers import GOOD, run_cli


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "good.yml").write_text(GOOD)
    for folder in ("prompts", "other", "v1", "v2"):
        (tmp_path / folder).mkdir()
    (tmp_path / "prompts" / "terse.j2").write_text("Be brief.")
    (tmp_path / "other" / "terse.j2").write_text("Be brief.")  # the same text, another file
    (tmp_path / "v1" / "system.j2").write_text("You are careful.")
    (tmp_path / "v2" / "system.j2").write_text("You are quick.")
    return tmp_path


RUNS_HINT = "to run each case more often, use --runs N"


def test_a_provider_given_twice_is_refused_before_any_run(suite: Path) -> None:
    done = run_cli("run", "cases/good.yml", "-p", "scripted", "-p", "scripted", "-j", "1", "--results", "results", cwd=suite)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == f"error: provider 'scripted' is given twice with -p (give each -p once; {RUNS_HINT})\n"
    assert not (suite / "results").exists()


@pytest.mark.parametrize(("second", "spelled"), [
    ("prompts/terse.j2", ""),
    ("./prompts/../prompts/terse.j2", " (as prompts/terse.j2 and ./prompts/../prompts/terse.j2)"),
    ("link.j2", " (as prompts/terse.j2 and link.j2)"),
])
def test_a_prompt_file_given_twice_is_refused_before_any_run(suite: Path, second: str, spelled: str) -> None:
    os.link(suite / "prompts" / "terse.j2", suite / "link.j2")  # a hard link is the same file too
    done = run_cli("run", "cases/good.yml", "-P", "prompts/terse.j2", "-P", second, "--results", "results", cwd=suite)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == (f"error: prompt template prompts/terse.j2 is given twice with -P{spelled} "
                           f"(give each -P file once; {RUNS_HINT})\n")
    assert not (suite / "results").exists()


@pytest.mark.parametrize(("first", "second", "labels"), [
    ("v1/system.j2", "v2/system.j2", ["v1/system", "v2/system"]),
    ("prompts/terse.j2", "other/terse.j2", ["prompts/terse", "other/terse"]),
    ("prompts/terse.j2", "v1/system.j2", ["terse", "system"]),
])
def test_prompt_files_named_alike_get_labels_that_tell_them_apart(suite: Path, first: str, second: str,
                                                                    labels: list[str]) -> None:
    done = run_cli("run", "cases/good.yml", "-P", first, "-P", second, "-j", "1", "--results", "results", cwd=suite)
    assert done.returncode == ExitCode.OK, done.stderr
    arms = [f"scripted · {label}" for label in labels]
    assert done.stdout.splitlines()[:5] == [f"PASS good/{case} [{arm}]" for arm in arms
                                            for case in ("write-hello", "count-lines")] + ["4/4 passed"]
    (folder,) = (suite / "results").iterdir()
    report = json.loads((folder / "report.json").read_text())
    assert [(a["arm"], a["prompt"], a["passed"]) for a in report["arms"]] == [(arm, label, 2) for arm, label in zip(arms, labels)]
    assert "unfinished" not in report
    slugs = [arm.replace(" · ", "-").replace("/", "-") for arm in arms]
    names = [f"{n:04d}-good-{case}-{slug}-r1.json" for n, (slug, case) in
             enumerate(((s, c) for s in slugs for c in ("write-hello", "count-lines")), start=1)]
    assert sorted(p.name for p in (folder / "runs").iterdir()) == names
    written = [json.loads((folder / "runs" / name).read_text()) for name in names]
    assert [(r["prompt"], r["status"]) for r in written] == [(label, "pass") for label in labels for _ in range(2)]

    again = run_cli("run", "cases/good.yml", "-P", first, "-P", second, "--resume", str(folder), "--results", "results", cwd=suite)
    assert again.returncode == ExitCode.OK, again.stderr
    assert again.stdout.splitlines()[0] == "resuming: 4 of 4 runs are done already"


def test_bundled_prompts_are_named_from_any_folder_and_a_local_file_of_that_name_wins(suite: Path) -> None:
    done = run_cli("run", "cases/good.yml", "-c", "good/count-lines", "-P", "default", "-P", "terse.j2", "-j", "1",
                   "--results", "results", cwd=suite)
    assert done.returncode == ExitCode.OK, done.stderr
    assert done.stdout.splitlines()[:3] == ["PASS good/count-lines [scripted · default]",
                                            "PASS good/count-lines [scripted · terse]", "2/2 passed"]
    (folder,) = (suite / "results").iterdir()
    report = json.loads((folder / "report.json").read_text())
    assert [(a["arm"], a["prompt"]) for a in report["arms"]] == [("scripted · default", "default"),
                                                                 ("scripted · terse", "terse")]
    (suite / "terse").write_text("A file of that name.")
    validated = run_cli("validate", "cases/good.yml", "-P", "terse", cwd=suite)
    assert validated.stdout.splitlines()[1:] == ["terse renders for 2 cases"]


@pytest.mark.parametrize(("name", "hint"), [("nope", "the bundled prompts: default, terse"),
                                            ("trse", "did you mean 'terse'?")])
def test_a_prompt_that_is_no_file_and_no_bundled_prompt_names_the_bundled_ones(suite: Path, name: str,
                                                                                hint: str) -> None:
    done = run_cli("run", "cases/good.yml", "-P", name, "--results", "results", cwd=suite)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    assert done.stderr == f"error: {name}: no such file, and no bundled prompt of that name ({hint})\n"
    assert not (suite / "results").exists()


# Folders and file names that collide: one stem in many folders, one folder holding a stem under two extensions.
_PART = st.sampled_from(["a", "b", "v1", "x.d"])
_FILE = st.sampled_from(["system.j2", "system", "system.txt", "system.j2.j2", "terse.j2"])
_PATHS = st.lists(st.tuples(st.lists(_PART, max_size=3), _FILE).map(lambda t: os.path.join(*t[0], t[1])),
                  min_size=1, max_size=8, unique_by=lambda p: os.path.abspath(p))


@given(_PATHS)
def test_different_prompt_files_always_get_different_labels(paths: list[str]) -> None:
    labels = prompt_labels(paths)
    assert len(set(labels)) == len(paths)
    for path, label in zip(paths, labels):  # an ending of the path, with or without its extension
        whole = os.path.abspath(path)
        assert whole.endswith(label) or whole.removesuffix(Path(path).suffix).endswith(label)
    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems) and not set(stems) & {Path(p).name for p in paths if Path(p).suffix}:
        assert labels == stems  # nothing to tell apart: each file is its stem

def test_names_that_read_alike_once_joined_are_refused() -> None:
    def spec(name: str) -> ProviderSpec:
        return ProviderSpec(name, resolve_provider("scripted").create)

    with pytest.raises(UserError) as caught:
        make_arms([spec("m · a"), spec("m")], [PromptTemplate("b", "b.j2", ""), PromptTemplate("a · b", "x.j2", "")])
    assert caught.value.render() == "two arms would both be labelled 'm · a · b' (rename a prompt file or an alias)"


def test_a_case_pattern_without_a_group_says_that_c_matches_group_and_id(suite: Path) -> None:
    (suite / "cases" / "more.yml").write_text(GOOD)
    done = run_cli("run", "cases", "-c", "count-lines", "-c", "nothing*", "--results", "results", cwd=suite)
    assert (done.returncode, done.stdout) == (ExitCode.NO_CASES, "")
    assert done.stderr.splitlines() == [
        ("no case selected: -c count-lines is matched against group/id, not the id alone "
         "(did you mean -c good/count-lines or -c more/count-lines, or -c '*/count-lines' for every group?)"),
        ("no case selected: -c nothing* is matched against group/id, and no case's id matches it either "
         "('tooltrial list' shows them)"),
    ]
    listed = run_cli("list", "cases/good.yml", "-c", "count-*", cwd=suite)
    assert (listed.returncode, listed.stdout) == (ExitCode.NO_CASES, "")
    assert listed.stderr == ("no case selected: -c count-* is matched against group/id, not the id alone "
                             "(did you mean -c good/count-lines, or -c '*/count-*' for every group?)\n")


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--foo"], "error: unrecognized arguments: --foo (see 'tooltrial run --help')"),
    (["list", "cases", "--bar=1"], "error: unrecognized arguments: --bar=1 (see 'tooltrial list --help')"),
    (["runn", "cases"], "error: unknown command 'runn' (did you mean 'run'? see 'tooltrial --help')"),
    (["xyzzy"], ("error: unknown command 'xyzzy' (choose from run, list, validate, report, rescore, merge, export, plan, schema, new, import, doctor, cache; "
                 "see 'tooltrial --help')")),
])
def test_usage_errors_point_at_the_help_of_the_subcommand_they_were_given_to(suite: Path, argv: list[str],
                                                                               message: str) -> None:
    done = run_cli(*argv, cwd=suite)
    assert (done.returncode, done.stdout, done.stderr) == (ExitCode.USAGE, "", message + "\n")


def test_tooltrial_alone_prints_its_usage_and_subcommands(suite: Path) -> None:
    done = run_cli(cwd=suite)
    assert (done.returncode, done.stdout) == (ExitCode.USAGE, "")
    lines = done.stderr.splitlines()
    usage = " ".join(line.strip() for line in lines[:lines.index("")])  # argparse wraps it at 80 columns
    assert usage == "usage: tooltrial [-h] [--version] {run,list,validate,report,rescore,merge,export,plan,schema,new,import,doctor,cache} ..."
    below = lines[lines.index("  {run,list,validate,report,rescore,merge,export,plan,schema,new,import,doctor,cache}") + 1:]
    assert [line.split()[0] for line in below if line[4:5].strip()][:13] == [  # not a wrapped help line
        "run", "list", "validate", "report", "rescore", "merge", "export", "plan", "schema", "new", "import", "doctor", "cache"]
