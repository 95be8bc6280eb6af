"""Provenance: each run records fingerprints of what it ran on, and ``report A B`` names what changed between two
results folders and leaves changed cells out of the paired analysis."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path

from jsonschema import Draft202012Validator

import runner
from runner.run.provenance import Provenance, checkout_commit
from runner.scoring.pairs import comparisons
from runner.scoring.regression import regression
from runner.spec.case import Case
from runner.spec.fingerprint import CASE_PARTS, JUDGE_PART, NOT_FINGERPRINTED, case_parts, digest, fixture_digest
from tests.helpers import ROOT, run_cli
from tests.records import runs

CASES = """\
- id: hello
  turns: [Say hello]
  script:
    - content: hello there
  expect:
    response_contains: [hello]
- id: write
  fixture: tree
  turns: [Write the file]
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: hi}}]
    - content: done
  expect:
    files: {out.txt: {contains: [hi]}}
"""
PROMPT_A = "You are careful. {{ case.id }}"
PROMPT_B = "You are quick."


def _suite(tmp_path: Path, cases: str = CASES) -> Path:
    (tmp_path / "cases").mkdir(exist_ok=True)
    (tmp_path / "cases" / "g.yml").write_text(cases)
    tree = tmp_path / "fixtures" / "tree"
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "readme.txt").write_text("a fixture\n")
    (tmp_path / "a.j2").write_text(PROMPT_A)
    (tmp_path / "b.j2").write_text(PROMPT_B)
    return tmp_path


def _run(suite: Path, name: str, *prompts: str) -> Path:
    chosen = [arg for prompt in prompts or ("a", "b") for arg in ("-P", str(suite / f"{prompt}.j2"))]
    done = run_cli("run", str(suite / "cases" / "g.yml"), "-p", "scripted", *chosen, "--sandbox", "none",
                   "--results", str(suite / name))
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = (suite / name).iterdir()
    return folder


def _run_file(folder: Path, case: str, prompt: str) -> dict:
    (found,) = [json.loads(p.read_text()) for p in folder.rglob("*.json") if p.name != "report.json"
                and json.loads(p.read_text()).get("case") == case and json.loads(p.read_text())["prompt"] == prompt]
    return found


def _tail(stdout: str) -> list[str]:
    """The lines from ``changed inputs`` on, less the differences under the verdict (tests/test_comparing_stats.py)."""
    lines = stdout.splitlines()
    tail = lines[next(i for i, line in enumerate(lines) if line.startswith("changed inputs")):]
    return [line for line in tail if not line.startswith(("  pass rate: ", "  outcome mean: ", "  process mean: "))]


def test_a_run_records_the_fingerprints_of_its_inputs_and_the_report_carries_them_per_arm(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    folder = _run(suite, "results")
    record = _run_file(folder, "g/write", "a")
    inputs = record["provenance"]
    assert inputs["prompt"] == hashlib.sha256(json.dumps(PROMPT_A).encode()).hexdigest()  # the template's text, as canonical JSON
    assert inputs["model"] == "scripted" and inputs["params"] == {} and inputs["sandbox"] == "none"
    assert inputs["tooltrial"] == runner.__version__ and inputs["commit"] == checkout_commit()
    assert inputs["litellm"] == (version("litellm") if "litellm" in sys.modules else None)  # never imported for it
    assert inputs["persona"] is None and inputs["rubric"] is None
    assert sorted(inputs["case_parts"]) == sorted(CASE_PARTS.keys() - {"faults"})  # a case without faults
    assert inputs["case"] == digest(inputs["case_parts"])
    readme = hashlib.sha256(b"a fixture\n").hexdigest()
    assert inputs["fixture"] == hashlib.sha256(f"readme.txt\0{0o644:o}\0file\0{readme}\n".encode()).hexdigest()
    assert _run_file(folder, "g/hello", "a")["provenance"]["fixture"] is None
    report = json.loads((folder / "report.json").read_text())
    arm = report["arms"][0]["provenance"]
    assert {k: arm[k] for k in ("model", "sandbox", "prompt")} == {"model": "scripted", "sandbox": "none",
                                                                    "prompt": inputs["prompt"]}
    assert arm["cases"]["g/write"] == {k: inputs[k] for k in ("case", "case_parts", "fixture", "tools", "persona",
                                                              "rubric")}
    for name, document in (("run", record), ("report", report)):
        schema = json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())
        assert list(Draft202012Validator(schema).iter_errors(document)) == []


def test_an_identical_rerun_flags_nothing(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    before, after = _run(suite, "before"), _run(suite, "after")
    done = run_cli("report", str(before), str(after))
    assert done.returncode == 0, done.stderr
    assert "changed inputs" not in done.stdout
    document = json.loads(run_cli("report", str(before), str(after), "--output", "json").stdout)
    assert (document["changed"], document["left_out"]) == ([], [])
    assert document["paired"]["pairs"] == 4


def test_an_edited_prompt_template_flags_its_arm_and_leaves_it_out_of_the_paired_analysis(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    before = _run(suite, "before")
    (suite / "a.j2").write_text(PROMPT_A + " Think first.")
    after = _run(suite, "after")
    done = run_cli("report", str(before), str(after))
    assert done.returncode == 0, done.stderr
    assert _tail(done.stdout) == [
        "changed inputs (2 cases left out of the paired analysis; --allow-changed keeps them):",
        "  scripted · a: prompt a changed",
        "after vs before: same result on all 2 paired runs: no difference",
    ]
    document = json.loads(run_cli("report", str(before), str(after), "--output", "json").stdout)
    assert document["changed"] == [{"name": "scripted · a", "change": "prompt a changed"}]
    assert document["left_out"] == ["g/hello [scripted · a]", "g/write [scripted · a]"]
    assert document["paired"]["pairs"] == 2
    schema = json.loads((ROOT / "schemas" / "report.schema.json").read_text())
    assert list(Draft202012Validator(schema).iter_errors(document)) == []
    kept = run_cli("report", str(before), str(after), "--allow-changed")
    assert _tail(kept.stdout) == [
        "changed inputs (kept in the paired analysis: --allow-changed):",
        "  scripted · a: prompt a changed",
        "after vs before: same result on all 4 paired runs: no difference",
    ]


def test_a_case_edit_is_named_by_the_parts_it_changed(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    before = _run(suite, "before")
    (suite / "cases" / "g.yml").write_text(CASES.replace("response_contains: [hello]", "response_contains: [there]")
                                 .replace("Write the file", "Write the file now"))
    (suite / "fixtures" / "tree" / "readme.txt").write_text("another fixture\n")
    after = _run(suite, "after")
    document = json.loads(run_cli("report", str(before), str(after), "--output", "json").stdout)
    assert document["changed"] == [
        {"name": "g/hello", "change": "case g/hello changed: expect only"},
        {"name": "g/write", "change": "case g/write changed: turns only"},
        {"name": "g/write", "change": "case g/write: fixture contents changed"},
    ]
    assert document["left_out"] == ["g/hello [scripted · a]", "g/write [scripted · a]", "g/hello [scripted · b]",
                                    "g/write [scripted · b]"]
    assert document["paired"]["pairs"] == 0


def _case(**changes: object) -> Case:
    return dataclasses.replace(Case(group="g", id="x", source=Path("g.yml"), line=1, turns=("hi",)), **changes)


def test_every_case_field_is_in_one_part_or_named_as_changing_nothing() -> None:
    fields = [f.name for f in dataclasses.fields(Case)]
    parted = [name for names in CASE_PARTS.values() for name in names]
    assert sorted(parted + sorted(NOT_FINGERPRINTED)) == sorted(fields)


def test_where_a_case_is_written_changes_no_fingerprint_and_a_rubric_is_a_part_of_its_own() -> None:
    from runner.spec.expect import expect_of

    plain = case_parts(_case())
    assert case_parts(_case(source=Path("elsewhere/g.yml"), line=40, description="new", tags=("t",))) == plain
    judged = case_parts(_case(expect=expect_of({"judge": {"rubric": "Polite?"}})))
    assert judged[JUDGE_PART] == digest({"rubric": "Polite?", "model": None, "threshold": None})
    assert judged["expect"] == plain["expect"]
    assert fixture_digest(_case()) is None


def _inputs(case: str = "c" * 64, **changes: object) -> Provenance:
    made = Provenance(case=case, case_parts={"turns": "1" * 64, "expect": case}, prompt="p" * 64, tools="t" * 64,
                      tooltrial="0.1.0", model="scripted", sandbox="none")
    return dataclasses.replace(made, **changes)


def test_two_arms_of_one_folder_leave_out_a_case_whose_inputs_differ_between_them() -> None:
    same, edited = _inputs(), _inputs(case="d" * 64)
    records = [*runs("g/x", "PP", "a", provenance=same), *runs("g/y", "PP", "a", provenance=same),
               *runs("g/x", "FF", "b", provenance=edited), *runs("g/y", "PF", "b", provenance=same)]
    (paired,) = comparisons(records)
    assert (paired.pairs, paired.pass_to_fail, paired.changed) == (2, 1, ["g/x"])
    assert paired.verdict == ("scripted · b vs scripted · a: -50 pts pass rate over 2 paired runs (0 fail→pass, "
                              "1 pass→fail); exact McNemar p = 1: not significant at 0.05, the difference may be "
                              "chance; left out, their inputs differ between the arms: g/x")


def test_arm_settings_are_compared_only_between_arms_of_one_label() -> None:
    before = runs("g/x", "P", "a", provenance=_inputs())
    after = runs("g/x", "P", "a", provenance=_inputs(model="other", params={"temperature": 0.5}, sandbox="bwrap",
                                                       tooltrial="0.2.0"))
    assert [c.change for c in regression(before, after).changed] == [
        "model changed: scripted → other", "request parameters changed: temperature", "sandbox changed: none → bwrap"]
    renamed = [dataclasses.replace(r, provider="other") for r in after]
    assert regression(before, renamed).changed == []  # the only arms, matched though named apart: the model is compared
    assert regression(before, runs("g/x", "P", "a")).changed == []  # a run without provenance is not compared


def test_resume_refuses_a_folder_whose_runs_were_made_from_other_inputs(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    first = _run(suite, "first")
    (suite / "b.j2").write_text(PROMPT_B + " Be brief.")
    done = run_cli("run", str(suite / "cases" / "g.yml"), "-p", "scripted", "-P", str(suite / "a.j2"), "-P",
                   str(suite / "b.j2"), "--sandbox", "none", "--results", str(suite / "second"), "--resume", str(first))
    assert done.returncode == 4
    assert [line for line in done.stderr.splitlines() if line.startswith("error")] == [(f"error: --resume {first}: its runs of g/hello [scripted · b] were made "
                                           "from other inputs: prompt b changed (run the suite afresh (without --resume), or put "
                                            "back what changed)")]
    assert not (suite / "second").exists()
    (suite / "b.j2").write_text(PROMPT_B)
    again = run_cli("run", str(suite / "cases" / "g.yml"), "-p", "scripted", "-P", str(suite / "a.j2"), "-P",
                    str(suite / "b.j2"), "--sandbox", "none", "--results", str(suite / "second"), "--resume", str(first))
    assert again.returncode == 0, again.stderr
    assert "resuming: 4 of 4 runs are done already" in again.stdout + again.stderr


def test_merge_refuses_runs_of_one_case_made_from_different_inputs(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    before = _run(suite, "before", "a")
    (suite / "cases" / "g.yml").write_text(CASES.replace("response_contains: [hello]", "response_contains: [there]"))
    after = _run(suite, "after", "b")
    done = run_cli("merge", str(before), str(after), "-o", str(suite / "merged"))
    assert done.returncode == 4
    assert done.stderr.splitlines()[0] == (f"error: {before} and {after} hold runs of g/hello [scripted · b] made "
                                           "from different inputs: case g/hello changed: expect only (merge results of the same "
                                           "cases, prompts and settings; compare the two with 'tooltrial report A B')")


@dataclasses.dataclass
class _NoFields:
    pass


@dataclasses.dataclass
class _Holder:
    here: Path
    inner: _NoFields
    count: int


def test_a_digest_reads_a_dataclass_as_its_fields_without_here_and_a_field_less_one_as_an_empty_object() -> None:
    value = _Holder(Path("/somewhere"), _NoFields(), 3)
    assert digest(value) == digest({"inner": {}, "count": 3}) == digest(_Holder(Path("/elsewhere"), _NoFields(), 3))
    assert digest(_NoFields()) == hashlib.sha256(b"{}").hexdigest()
