"""Tool-definition arms (``run -T``) with fault arms (``run --faults``): every -T file runs with every fault arm, the
labels name the tool definitions, then the fault arm, each comparison varies one of them, and ``--resume`` tells
the four arms apart by their run keys (runner.suite.engine.run_key) and reuses every run."""

from __future__ import annotations

import json
from pathlib import Path

from runner.run.record import RunRecord
from runner.suite.engine import run_key
from tests.helpers import ROOT, cli_output

LABELS = ["scripted · default · a · faults off", "scripted · default · a · faults flaky",
          "scripted · default · b · faults off", "scripted · default · b · faults flaky"]


def _inputs(tmp_path: Path) -> list[str]:
    """The -T files a.yml and b.yml, the fault profile ``flaky``, and the ``run`` arguments of one case with them."""
    for name, text in (("a", "Run one shell command in the workspace."), ("b", "Run a command; read its output.")):
        (tmp_path / f"{name}.yml").write_text(f"tools:\n  bash:\n    description: {text}\n", encoding="utf-8")
    (tmp_path / "profile.yml").write_text('name: flaky\nseed: 3\nfaults:\n  - {tool: "*", kind: slow, seconds: 0.01}\n',
                                          encoding="utf-8")
    return ["run", str(ROOT / "cases" / "fs.yml"), "-c", "fs/find-then-read", "-p", "scripted",
            "-T", str(tmp_path / "a.yml"), "-T", str(tmp_path / "b.yml"), "--faults", str(tmp_path / "profile.yml"),
            "--sandbox", "none"]


def _runs(folder: Path) -> dict[str, dict[str, object]]:
    """Each run of ``folder`` by its arm's label (one run per arm)."""
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return {f"{r['provider']} · {r['prompt']} · {r['tool_defs']} · faults {r['faults']['arm']}": r
            for r in report["runs"]}


def test_tool_definition_arms_times_fault_arms_are_four_arms_that_resume_as_such(tmp_path: Path) -> None:
    argv = [*_inputs(tmp_path), "--results", str(tmp_path / "results")]
    code, out, err = cli_output(argv)
    assert code == 0, err
    assert [line for line in out.splitlines() if line.startswith("PASS ")] == [
        f"PASS fs/find-then-read [{label}]" for label in LABELS]
    (folder,) = (tmp_path / "results").iterdir()
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    assert [arm["arm"] for arm in report["arms"]] == LABELS
    assert [(c["factor"]["name"], c["a"], c["b"]) for c in report["comparisons"]] == [
        ("tools", LABELS[0], LABELS[2]), ("tools", LABELS[1], LABELS[3]),
        ("faults", LABELS[0], LABELS[1]), ("faults", LABELS[2], LABELS[3])]
    first = _runs(folder)
    assert sorted(first) == sorted(LABELS)
    assert [first[label]["faults"]["received"] > 0 for label in LABELS] == [False, True, False, True]

    code, out, err = cli_output([*argv, "--resume", str(folder)])
    assert code == 0, err
    assert "resuming: 4 of 4 runs are done already" in out, out
    (resumed,) = [f for f in (tmp_path / "results").iterdir() if f != folder] or [folder]
    again = _runs(resumed)
    assert {label: run["started"] for label, run in again.items()} == {
        label: run["started"] for label, run in first.items()}  # every run reused as it was


def test_the_run_key_tells_a_fault_arm_apart_and_is_unchanged_without_one() -> None:
    from runner.run.faulted import FaultUse

    plain = RunRecord("fs/x", "scripted", "default", 1)
    tools = RunRecord("fs/x", "scripted", "default", 1, tool_defs="a")
    faulted = RunRecord("fs/x", "scripted", "default", 1, tool_defs="a", faults=FaultUse("flaky", 3))
    case_faults = RunRecord("fs/x", "scripted", "default", 1, faults=FaultUse(None))  # a case's own, no --faults
    assert run_key(plain) == ("fs/x", "scripted", "default", 1, None)
    assert run_key(tools) == ("fs/x", "scripted", "default", 1, "a")
    assert run_key(faulted) == ("fs/x", "scripted", "default · faults flaky", 1, "a")
    assert run_key(case_faults) == run_key(plain)
    assert [r.arm for r in (plain, tools, faulted, case_faults)] == [
        "scripted · default", "scripted · default · a", "scripted · default · a · faults flaky", "scripted · default"]


def test_shards_of_tool_definition_and_fault_arms_merge_into_the_four_arms(tmp_path: Path) -> None:
    argv = [*_inputs(tmp_path), "--runs", "2"]
    for shard in ("1/2", "2/2"):
        code, _, err = cli_output([*argv, "--shard", shard, "--results", str(tmp_path / f"s{shard[0]}")])
        assert code == 0, err
    parts = [next((tmp_path / f"s{n}").iterdir()) for n in (1, 2)]
    code, _, err = cli_output(["merge", *map(str, parts), "-o", str(tmp_path / "merged")])
    assert code == 0, err  # the -T arms offer other tools by design: not a changed case
    (report,) = (tmp_path / "merged").glob("**/report.json")
    document = json.loads(report.read_text(encoding="utf-8"))
    assert [arm["arm"] for arm in document["arms"]] == LABELS
    assert sorted((r["tool_defs"], r["faults"]["arm"], r["run"]) for r in document["runs"]) == [
        (tools, arm, run) for tools in ("a", "b") for arm in ("flaky", "off") for run in (1, 2)]
