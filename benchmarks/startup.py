"""Figure (h) of benchmarks/run.py: start-up of a live run, and CPU per model request.

The start-up is the wall-clock time of ``tooltrial run`` of one case (three model requests) with
``-p fake``, an alias in a ``tooltrial.yml`` whose ``api_base`` is the loopback server of
fake_openai.py answering at once: the interpreter, ``import litellm`` and the run, in a
subprocess, each of ``repeats`` tries, with its CPU time (user and system), which moves less with the
machine's load. Each try is followed by litellm's import alone in a fresh interpreter (``load_litellm``,
as tooltrial imports it): the floor of the start-up that tooltrial cannot lower. CPU per request is this process's CPU time (every
thread) over a matrix of cases run at ``-j 1`` against the same server, divided by the requests
made; the minimal urllib provider (HttpProvider) is the baseline, so the difference between the
two is what tooltrial's litellm provider costs per request.

    .venv/bin/python benchmarks/startup.py   # this figure alone
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from fake_openai import FakeOpenAI

from runner.run.options import Arm, RunOptions
from runner.sandbox.command import Sandbox
from runner.spec.case import Case
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions

CONFIG = """\
providers:
  fake:
    model: openai/gpt-4o-mini
    api_base: {url}
"""
ONE_CASE = """\
- id: one
  description: Write a file, read it back, say done.
  turns: ["Write hello to out.txt, read it back, then say done."]
  expect:
    files: {out.txt: {contains: [hello]}}
    response_contains: [done]
"""


IMPORT_ALONE = "from runner.providers.litellm_load import load_litellm; load_litellm()"


def startup_seconds(folder: Path, url: str, repeats: int = 3) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(wall-clock seconds, CPU seconds: user and system) of each of ``repeats`` ``tooltrial run`` commands of
    one case through the alias ``fake`` at ``url``, and of litellm's import alone after each (``IMPORT_ALONE``),
    in a fresh interpreter each (exit code 0 asserted)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tooltrial.yml").write_text(CONFIG.format(url=url), encoding="utf-8")
    (folder / "one.yml").write_text(ONE_CASE, encoding="utf-8")
    command = [sys.executable, "-m", "runner", "run", "one.yml", "-p", "fake", "--results", "results", "-q"]
    runs, imports = [], []
    for _ in range(repeats):
        runs.append(_timed(command, folder))
        imports.append(_timed([sys.executable, "-c", IMPORT_ALONE], folder))
    return runs, imports


def _timed(command: list[str], folder: Path) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds: user and system) of ``command`` run in ``folder``; exit code 0 asserted."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cpu_per_request(cases: Sequence[Case], arm: Arm, sandbox: Sandbox) -> float:
    """CPU seconds of this process (every thread) per model request over ``cases`` run at ``-j 1``."""
    used = time.process_time()
    records = run_matrix(cases, [arm], SuiteOptions(RunOptions(sandbox)))
    cpu = time.process_time() - used
    assert all(r.status == "pass" for r in records), [(r.case, r.status, r.cause) for r in records[:3]]
    return cpu / sum(r.requests for r in records)


def figure_h(folder: Path, cases: Sequence[Case], sandbox: Sandbox,
             arms: Sequence[Callable[[str], Arm]]) -> None:
    """Print the start-up (median and each try) and the CPU per request of each of ``arms`` (made
    from the server's URL; the first is the baseline), after one warm-up pass of each."""
    with FakeOpenAI(delay=0.0) as server:
        seconds, floor = startup_seconds(folder / "startup", server.url)
        made = [make(server.url) for make in arms]
        for arm in made:
            cpu_per_request(cases[:5], arm, sandbox)  # connections opened, first-use imports done
        per = [cpu_per_request(cases, arm, sandbox) for arm in made]
    tries = ", ".join(f"{wall:.2f}" for wall, _ in seconds)
    cpu = statistics.median(c for _, c in seconds)
    print(f"(h) start-up: tooltrial run of one live case (3 requests, loopback alias): median "
          f"{statistics.median(w for w, _ in seconds):.2f} s ({tries}), CPU median {cpu:.2f} s   target < 2 s")
    print(f"    its floor, litellm's import alone (load_litellm, a fresh interpreter): median "
          f"{statistics.median(w for w, _ in floor):.2f} s, CPU median {statistics.median(c for _, c in floor):.2f} s")
    baseline = per[0]
    for arm, cpu in zip(made, per):
        extra = f", {(cpu - baseline) * 1000:+.2f} ms over {made[0].provider.name}" if arm is not made[0] else ""
        print(f"    CPU per request, {len(cases)} cases x 3 requests at -j 1, {arm.provider.name} provider: "
              f"{cpu * 1000:.2f} ms{extra}")


if __name__ == "__main__":
    import tempfile

    from run import generate, litellm_arm, urllib_arm  # type: ignore[import-not-found]

    from runner.sandbox.choose import choose_sandbox
    from runner.spec.discover import load_cases

    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as top:
        generated = load_cases([generate(Path(top) / "h", int(sys.argv[1]) if len(sys.argv) > 1 else 100)])
        figure_h(Path(top), generated, choose_sandbox("auto"), [urllib_arm, litellm_arm])
