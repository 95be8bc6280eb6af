"""(k) Threads against worker processes on the agent workload; (l) where ``--workers auto`` starts paying.

(k) N generated cases of 2 model requests each (write ``out.txt``, then reply) against the loopback
    OpenAI-compatible server (benchmarks/fake_openai.py) answering after ``delay`` seconds, through
    tooltrial's litellm provider, real workspaces, the default sandbox, the whole CLI (``tooltrial run``
    in a fresh interpreter) at -j 16 / 64 / 128, ``--workers 1`` (threads) against ``--workers`` the
    CPU count: wall-clock, CPU and peak RSS of tooltrial's process tree (the CLI, its fork server and
    workers: CPU sampled from /proc every 50 ms, memory as the sum of their PSS every 0.5 s, as reading a large
    process's page tables for it costs the machine enough to slow the run; the CLI's own CPU from wait4), the ratio to the physical
    limit, N x 2 x delay / -j, the ratio to the floor (benchmarks/floor.py: the same requests by a bare ``http.client``
    thread pool with keep-alive, against the same server in this invocation; goal: at most 1.5x) and the CPU per request.
(l) The scripted suite of N generated cases (benchmarks/run.py's CASE) at -j 4, threads against 2
    workers, for growing N: the smallest N where processes win is runner.suite.executors.AUTO_MIN_RUNS's
    ground.

    .venv/bin/python benchmarks/executors.py [--cases 200 1000] [--jobs 16 64 128] [--delay 0.1] [--crossover]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

from fake_openai import FakeOpenAI
from floor import floor_seconds

ROOT = Path(__file__).resolve().parent.parent
AGENT_CASE = """\
- id: agent-{n:04d}
  description: Generated case {n}; write a file, then say done.
  turns: ["Write hello to out.txt, then say done."]
  expect:
    files:
      out.txt: {{contains: [hello]}}
    response_contains: [done]
    trace: {{must_include: [write_file], max_calls: 2}}
"""
CONFIG = """\
providers:
  bench:
    model: openai/gpt-4o-mini
    api_base: {url}
    api_key_env: TOOLTRIAL_BENCH_KEY
    max_concurrency: 1000
"""


def agent_suite(folder: Path, url: str, count: int) -> tuple[Path, Path]:
    """The agent workload's config (the alias ``bench`` at ``url``) and ``count`` AGENT_CASE cases, in ``folder``."""
    config = folder / "tooltrial.yml"
    config.write_text(CONFIG.format(url=url), encoding="utf-8")
    return config, write_suite(folder / f"agent-{count}", count, lambda n: AGENT_CASE.format(n=n))


def write_suite(folder: Path, count: int, case: Callable[[int], str], per_file: int = 100) -> Path:
    """``count`` cases, ``per_file`` to a file, in ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, count, per_file):
        text = "".join(case(n) for n in range(start, min(start + per_file, count)))
        (folder / f"g{start // per_file:02d}.yml").write_text(text, encoding="utf-8")
    return folder


class TreeSampler:
    """CPU seconds and peak memory (MB, the sum of PSS) of a process tree, from /proc: ``session`` is the
    tree's session id (its root was started in a session of its own). CPU is each process's last sample
    (utime + stime), taken every ``every`` seconds; memory, and a look for processes new to the tree,
    every ``memory_every`` samples (a process that lives less than that is missed)."""

    def __init__(self, session: int, every: float = 0.05, memory_every: int = 10) -> None:
        self.session, self.every, self.memory_every = session, every, memory_every
        self.cpu: dict[int, float] = {}
        self.peak_rss = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._tick = os.sysconf("SC_CLK_TCK")

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        count, tree = 0, set()
        while not self._stop.is_set():
            rss, count = 0, count + 1
            memory = count % self.memory_every == 1
            if memory:  # look for new processes of the tree; in between only at those known
                tree |= {int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit()}
            for pid in list(tree):
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                except (OSError, IndexError):
                    tree.discard(pid)
                    continue
                if int(fields[3]) != self.session:
                    tree.discard(pid)
                    continue
                self.cpu[pid] = (int(fields[11]) + int(fields[12])) / self._tick
                rss += _pss_kb(f"/proc/{pid}") if memory else 0
            self.peak_rss = max(self.peak_rss, rss / 1024)
            self._stop.wait(self.every)


def _pss_kb(proc: str) -> int:
    """A process's proportional set size in kB: its RSS with each page shared with others (a fork server's
    imports, copy-on-write in its workers) split between them, so a tree's sum counts each page once."""
    try:
        text = Path(proc, "smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0)


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, float, int]:
    """Run ``tooltrial ARGV`` in a fresh interpreter: (wall s, CPU s of its tree, of the CLI's own process,
    peak PSS MB of its tree, exit)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", *argv], cwd=ROOT, env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with TreeSampler(proc.pid) as tree:
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    own = usage.ru_utime + usage.ru_stime
    own = max(own, tree.cpu.get(proc.pid, 0.0))
    cpu = sum(seconds for pid, seconds in tree.cpu.items() if pid != proc.pid) + own
    return wall, cpu, own, tree.peak_rss, proc.returncode


def figure_k(folder: Path, counts: list[int], jobs: list[int], delay: float, workers: int) -> None:
    env = {**os.environ, "TOOLTRIAL_BENCH_KEY": "sk-bench"}
    print(f"(k) agent workload: N cases x 2 requests at {delay * 1000:.0f} ms, litellm, default sandbox, "
          f"threads (--workers 1) against --workers {workers}; load average {os.getloadavg()[0]:.1f}")
    with FakeOpenAI(delay, calls=1) as server:
        for count in counts:
            config, suite = agent_suite(folder, server.url, count)
            for j in jobs:
                limit = count * 2 * delay / j
                floor = floor_seconds(server.url, count, j)
                print(f"    N={count:>5} -j {j:>3} floor (http.client, keep-alive): {floor:6.1f} s wall")
                walls = {}
                for w in (1, workers):
                    argv = ["run", str(suite), "-p", "bench", "--config", str(config), "-q", "-j", str(j),
                            "--workers", str(w), "--results", str(folder / "results")]
                    wall, cpu, own, rss, code = measure(argv, env)
                    assert code == 0, f"tooltrial run exited {code}"
                    walls[w] = wall
                    kind = "threads  " if w == 1 else f"{w} workers"
                    print(f"    N={count:>5} -j {j:>3} {kind}: {wall:6.1f} s wall, {cpu:6.1f} s CPU ({own:.1f} s the CLI's), "
                          f"{rss:5.0f} MB peak PSS, {wall / limit:5.1f}x the limit ({limit:.1f} s), "
                          f"{wall / floor:4.2f}x the floor (goal <= 1.5x), {cpu / (count * 2) * 1000:.1f} ms CPU a request"
                          f"   load {os.getloadavg()[0]:.1f}")
                print(f"    N={count:>5} -j {j:>3} processes {walls[1] / walls[workers]:.2f}x faster than threads"
                      + (f"; {31 / walls[workers]:.2f}x faster than the issue's 31 s (target >= 1.8x)"
                         if (count, j) == (1000, 64) else ""))


def figure_l(folder: Path, counts: list[int]) -> None:
    from run import plain_case

    print(f"(l) scripted suite at -j 4, threads against 2 workers; load average {os.getloadavg()[0]:.1f}")
    for count in counts:
        suite = write_suite(folder / f"scripted-{count}", count, plain_case)
        walls = {}
        for w in (1, 2):
            wall, _, _, _, code = measure(["run", str(suite), "-p", "scripted", "-q", "-j", "4", "--workers", str(w),
                                          "--results", str(folder / "results")], dict(os.environ))
            assert code == 0, f"tooltrial run exited {code}"
            walls[w] = wall
        print(f"    N={count:>5}: threads {walls[1]:5.1f} s, 2 workers {walls[2]:5.1f} s "
              f"({walls[1] / walls[2]:.2f}x)   load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--jobs", type=int, nargs="+", default=[16, 64, 128])
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--crossover", type=int, nargs="*", help="(l) only, at these N (default 50 100 200 400)")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
        if args.crossover is not None:
            figure_l(Path(folder), args.crossover or [50, 100, 200, 400])
        else:
            figure_k(Path(folder), args.cases, args.jobs, args.delay, args.workers)


if __name__ == "__main__":
    main()
