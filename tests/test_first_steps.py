"""What a new user meets following the README: the example tooltrial.yml copied as it is, ``doctor`` saying
what ``run`` will say of a provider, a judge that cannot judge refused up front, an output hint of the right kind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import ROOT, config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

NO_KEYS = {"OPENAI_API_KEY": None, "ANTHROPIC_API_KEY": None}
EXPORT = "(export the variable in the shell that runs tooltrial; agent commands never see it)"
NOT_A_JUDGE = ("the scripted provider cannot judge: it replies with the case's script, never with a verdict "
               "(name a live model or an alias, e.g. openai/gpt-4o-mini; a case run with -p scripted can still be judged by one)")
JUDGED = """\
- id: judged
  turns: [Say hello.]
  expect:
    judge: {rubric: The reply greets the user.}
  script:
    - content: Hello.
"""


def _example(tmp_path: Path) -> Path:
    """examples/tooltrial.yml copied to tmp_path/tooltrial.yml, as docs/providers.md says to."""
    return Path(shutil.copy(ROOT / "examples" / "tooltrial.yml", tmp_path / "tooltrial.yml"))


def test_the_example_config_runs_unjudged_cases_without_the_judges_key(tmp_path: Path) -> None:
    _example(tmp_path)
    done = run_cli("run", str(ROOT / "cases" / "fix.yml"), "-c", "fix/fix-failing-test", "-p", "scripted",
                   "--results", str(tmp_path / "r"), "--report", str(tmp_path / "report.json"), cwd=tmp_path, env=NO_KEYS)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert (report["overall"]["runs"], report["overall"]["passed"]) == (1, 1)
    [folder] = (tmp_path / "r").iterdir()
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("runs/*.json")]
    assert [(r["case"], r["provider"], r["status"]) for r in runs] == [("fix/fix-failing-test", "scripted", "pass")]


def test_a_judged_case_still_needs_the_judges_key_before_any_run(tmp_path: Path) -> None:
    path = _example(tmp_path)
    (tmp_path / "judged.yml").write_text(JUDGED, encoding="utf-8")
    done = run_cli("run", "judged.yml", "-p", "scripted", "--results", str(tmp_path / "r"), cwd=tmp_path, env=NO_KEYS)
    assert (done.returncode, done.stderr) == (
        4, f"error: {path}:29:18: providers.gpt.api_key_env: environment variable OPENAI_API_KEY is not set {EXPORT}\n")
    assert not (tmp_path / "r").exists()


def test_a_misspelt_judge_is_told_only_where_a_case_is_judged(tmp_path: Path) -> None:
    (tmp_path / "judged.yml").write_text(JUDGED, encoding="utf-8")
    argv = ("--judge", "sripted", "--results", str(tmp_path / "r"))
    judged = run_cli("run", "judged.yml", *argv, cwd=tmp_path)
    assert (judged.returncode, judged.stderr) == (4, "error: unknown provider 'sripted' (did you mean 'scripted'?)\n")
    unjudged = run_cli("run", str(ROOT / "cases" / "fix.yml"), "-c", "fix/fix-failing-test", *argv, cwd=tmp_path)
    assert unjudged.returncode == 0, unjudged.stderr


def test_scripted_is_refused_as_a_judge_wherever_it_is_named(tmp_path: Path) -> None:
    (tmp_path / "judged.yml").write_text(JUDGED, encoding="utf-8")
    flag = run_cli("run", "judged.yml", "--judge", "scripted", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert (flag.returncode, flag.stderr) == (4, f"error: --judge scripted: {NOT_A_JUDGE}\n")
    baseline = run_cli("validate", "judged.yml", "--baseline", "--judge", "scripted", cwd=tmp_path)
    assert (baseline.returncode, baseline.stderr) == (4, f"error: --judge scripted: {NOT_A_JUDGE}\n")
    (tmp_path / "tooltrial.yml").write_text("jobs: 2\njudge: scripted\n", encoding="utf-8")
    configured = run_cli("run", "judged.yml", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert (configured.returncode, configured.stderr) == (4, f"error: {tmp_path / 'tooltrial.yml'}:2:8: judge: {NOT_A_JUDGE}\n")
    (tmp_path / "tooltrial.yml").unlink()
    (tmp_path / "own.yml").write_text(JUDGED.replace("judge: {rubric", "judge: {model: scripted, rubric"), encoding="utf-8")
    named = run_cli("run", "own.yml", "--judge", "openai/gpt-4o", "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert (named.returncode, named.stderr) == (4, f"error: own.yml:1: expect.judge.model: {NOT_A_JUDGE}\n")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("name", "with_config", "error"), [
    ("local-opena", False, ("error: cannot use provider 'local-opena': litellm knows no provider for model 'local-opena' "
                            "(name a model as provider/model, e.g. -p ollama/qwen3 or -p openai/gpt-4o, or an alias from tooltrial.yml)")),
    ("local-opena", True, "error: unknown provider 'local-opena' (did you mean 'local-openai'?)"),
    ("ollama", False, ("error: provider 'ollama' needs a model "
                       "(use -p ollama/<model>, or add an alias 'ollama' under providers: in tooltrial.yml)")),
])
def test_doctor_refuses_the_names_run_refuses_with_runs_message(tmp_path: Path, name: str, with_config: bool,
                                                                 error: str) -> None:
    if with_config:
        config(tmp_path)
    doctor = run_cli("doctor", "-p", name, cwd=tmp_path)
    run = run_cli("run", str(ROOT / "cases" / "fix.yml"), "-p", name, "--results", str(tmp_path / "r"), cwd=tmp_path)
    assert (doctor.returncode, doctor.stdout, doctor.stderr) == (4, "", error + "\n")
    assert (run.returncode, run.stderr) == (4, error + "\n")


@pytest.mark.parametrize(("name", "said"), [
    ("gpt-4o", "cannot use provider 'gpt-4o': OPENAI_API_KEY is not set"),
    ("openai/gpt-4o", "cannot use provider 'openai/gpt-4o': OPENAI_API_KEY is not set"),
])
def test_doctor_fails_the_row_of_a_provider_whose_key_run_finds_unset(tmp_path: Path, name: str, said: str) -> None:
    doctor = run_cli("doctor", "-p", name, "-p", "scripted", "--output", "json", cwd=tmp_path, env=NO_KEYS)
    found = json.loads(doctor.stdout)
    assert (doctor.returncode, [(d["name"], d["ok"]) for d in found]) == (6, [(name, False), ("scripted", True)])
    assert found[0]["findings"] == [{"check": "key", "status": "fail", "detail": said}]
    table = run_cli("doctor", "-p", name, cwd=tmp_path, env=NO_KEYS)
    assert (table.returncode, table.stdout.splitlines()[-1]) == (6, f"0 of 1 provider ready; not ready: {name}")
    run = run_cli("run", str(ROOT / "cases" / "fix.yml"), "-p", name, "--results", str(tmp_path / "r"), cwd=tmp_path, env=NO_KEYS)
    assert (run.returncode, run.stderr) == (4, f"error: {said} {EXPORT}\n")


def test_a_folder_given_to_otel_is_told_with_a_traces_file(tmp_path: Path) -> None:
    done = run_cli("run", str(ROOT / "cases" / "fix.yml"), "--otel", str(tmp_path), "--results", str(tmp_path / "r"))
    assert (done.returncode, done.stderr) == (
        4, f"error: --otel {tmp_path} is a folder (give a file path, e.g. {tmp_path / 'traces.jsonl'})\n")
