"""(m) ``run --executor ray`` on a two-node local Ray cluster (tests/raycluster.py: a head and a worker
node on loopback, ``--cpus`` CPUs each): the bundled suite (scripted), local against Ray, then the agent
workload of benchmarks/executors.py (N cases x 2 requests through litellm against the loopback server
answering after ``delay`` seconds, the default sandbox) over Ray at each -j. Wall-clock, CPU of the
driver's process tree and of the cluster's processes (its raylets, GCS and Ray workers, sampled from
/proc), and for the agent workload the ratio to the physical limit, N x 2 x delay / runs in flight, where
runs in flight is the smaller of -j and the cluster's task slots (2 x ``--cpus`` / TASK_CPUS).
Not a test; the cluster is stopped (every process of its sessions killed) even when a run fails.

    .venv/bin/python benchmarks/ray_cluster.py [--cases 1000] [--jobs 16 64] [--delay 0.1] [--cpus 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from executors import TreeSampler, agent_suite, measure
from fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.suite.rayexec import TASK_CPUS
from tests.raycluster import Cluster, start_cluster


def timed(argv: list[str], env: dict[str, str], cluster: Cluster) -> tuple[float, float, float, int]:
    """``tooltrial ARGV`` in a fresh interpreter: (wall s, CPU s of its tree, CPU s the cluster's processes
    spent meanwhile, exit)."""
    with ExitStack() as stack:
        nodes = [stack.enter_context(TreeSampler(session)) for session in cluster.sessions]
        before = [dict(node.cpu) for node in nodes]
        wall, cpu, _, _, code = measure(argv, env)
    spent = sum(seconds - start.get(pid, 0.0) for node, start in zip(nodes, before) for pid, seconds in node.cpu.items())
    return wall, cpu, spent, code


def figure_k(folder: Path, counts: list[int], jobs: list[int], delay: float, cpus: int) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    cluster = start_cluster(folder / "r", env, cpus)
    slots = int(2 * cpus / TASK_CPUS)
    try:
        print(f"(m) two-node local Ray cluster, {cpus} CPU(s) a node ({slots} task slots); load average "
              f"{os.getloadavg()[0]:.1f}")
        ray = ["--executor", "ray", "--ray-address", cluster.address]
        for label, more in (("local", []), ("ray  ", ray)):
            argv = ["run", str(ROOT / "cases"), "-q", "-j", "4", "--results", str(folder / "results"), *more]
            wall, cpu, spent, code = timed(argv, env, cluster)
            assert code == 0, f"tooltrial run exited {code}"
            print(f"    bundled suite -j 4 {label}: {wall:6.1f} s wall, {cpu:5.1f} s CPU (driver), "
                  f"{spent:5.1f} s CPU (cluster)   load {os.getloadavg()[0]:.1f}")
        env = {**env, "TOOLTRIAL_BENCH_KEY": "sk-bench"}
        with FakeOpenAI(delay, calls=1) as server:
            for count in counts:
                config, suite = agent_suite(folder, server.url, count)
                for j in jobs:
                    limit = count * 2 * delay / min(j, slots)
                    argv = ["run", str(suite), "-p", "bench", "--config", str(config), "-q", "-j", str(j),
                            "--results", str(folder / "results"), *ray]
                    wall, cpu, spent, code = timed(argv, env, cluster)
                    assert code == 0, f"tooltrial run exited {code}"
                    print(f"    agent N={count:>5} -j {j:>3} ray: {wall:6.1f} s wall, {cpu:5.1f} s CPU (driver), "
                          f"{spent:6.1f} s CPU (cluster), {wall / limit:5.1f}x the limit ({limit:.1f} s)"
                          f"   load {os.getloadavg()[0]:.1f}")
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, nargs="+", default=[1000])
    parser.add_argument("--jobs", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--cpus", type=int, default=1, help="CPUs each node offers Ray (default 1)")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="tt-bench-") as folder:
        figure_k(Path(folder), args.cases, args.jobs, args.delay, args.cpus)


if __name__ == "__main__":
    main()
