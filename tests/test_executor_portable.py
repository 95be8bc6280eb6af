"""The executors' seam (runner.suite.portable): a run pickled into a fresh process gives the record the
thread executor gives; a live arm pickles as its settings and makes its providers in the process."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys

from runner.providers.registry import resolve_provider
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.spec.config import load_config
from runner.spec.discover import discover, load_cases
from runner.suite.portable import Runner, RunTask, WorkerSetup, run_task
from tests.executors import comparable
from tests.helpers import ROOT, config
from tests.sandboxes import BWRAP, make_sandbox

_IN_A_FRESH_PROCESS = """\
import pickle, sys
from runner.suite.portable import run_task
task, setup = pickle.loads(sys.stdin.buffer.read())
sys.stdout.buffer.write(pickle.dumps(run_task(task, setup)))
"""


def test_a_task_run_in_a_fresh_process_gives_the_thread_executors_record() -> None:
    cases = {c.full_id: c for c in load_cases(discover([ROOT / "cases" / "calc.yml", ROOT / "cases" / "git.yml"]))}
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    options = RunOptions(make_sandbox("bwrap" if BWRAP else "none"), timeout=60.0)
    setup = WorkerSetup.from_options(options, [arm], 2)
    here = Runner(options, [arm], 2)
    for full_id in ("calc/arithmetic", "git/revert-bad-commit"):
        task = RunTask(cases[full_id], arm, 2)
        done = subprocess.run([sys.executable, "-c", _IN_A_FRESH_PROCESS], input=pickle.dumps((task, setup)),
                              capture_output=True, check=True, cwd=ROOT)
        there = pickle.loads(done.stdout)
        record = here.run(task)
        assert (there.case, there.run, there.status, there.sandbox) == (full_id, 2, record.status, options.sandbox.confinement)
        assert comparable(dataclasses.asdict(there)) == comparable(dataclasses.asdict(record))
        assert there.steps and there.checks
    assert there.commands  # git/revert-bad-commit's verify ran in the fresh process's sandbox


def test_a_live_arm_pickles_as_its_settings_and_each_process_makes_one_provider(tmp_path, litellm_loaded) -> None:
    spec = resolve_provider("local-ollama", load_config(config(tmp_path)))
    copy = pickle.loads(pickle.dumps(spec))
    case = next(iter(load_cases(discover([ROOT / "cases" / "calc.yml"]))))
    assert (copy.name, copy.cache_identity, copy.max_concurrency) == (spec.name, spec.cache_identity, spec.max_concurrency)
    made = copy.create(case)
    assert made is copy.create(case) and made is not spec.create(case)
    assert made.settings == spec.create(case).settings


def test_run_task_builds_a_suites_runner_once_a_process() -> None:
    cases = load_cases(discover([ROOT / "cases" / "calc.yml"]))
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    setup = pickle.loads(pickle.dumps(WorkerSetup.from_options(RunOptions(make_sandbox("none")), [arm])))
    first, second = (run_task(RunTask(case, arm, 1), setup) for case in cases[:2])
    assert (first.case, second.case, first.status, second.status) == (cases[0].full_id, cases[1].full_id, "pass", "pass")
    from runner.suite.portable import _runner
    assert _runner(setup) is _runner(pickle.loads(pickle.dumps(setup)))
    assert not _runner(setup).options.cancel.is_set()
