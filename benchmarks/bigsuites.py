"""Figure (q) of benchmarks/run.py: big suites, ``list`` and ``validate`` as whole commands.

Each command is a fresh ``tooltrial`` process (interpreter start-up and imports included), best of 3,
its wall-clock and CPU seconds (user and system, from the child's rusage); the suites are 10,000
generated cases (run.py's plain case, and the one with three mocks) and, when BFCL's data folder is
given, BFCL's 11 single-turn categories imported with ``--script``. The goal is stated per size: 4.6 MB
of case files loaded and validated in under 2 s, so each line also gives the seconds per 4.6 MB.

    .venv/bin/python benchmarks/run.py --only q [--bfcl /tmp/bfcl/src/bfcl_eval/data]
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

from bfcl import CATEGORIES

GOAL_MB = 4.6


def whole_command(argv: list[str], times: int = 3) -> tuple[float, float]:
    """The least wall-clock and CPU seconds of ``times`` runs of ``tooltrial argv`` as a fresh process."""
    wall = cpu = float("inf")
    for _ in range(times):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "runner", *argv], check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = min(wall, time.perf_counter() - started)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return wall, cpu


def imported_bfcl(data: Path, folder: Path) -> list[Path]:
    """BFCL's single-turn categories imported with ``--script`` into ``folder``: the case files."""
    for category in CATEGORIES:
        questions = data / f"BFCL_v4_{category}.json"
        answers = data / "possible_answer" / questions.name
        extra = ["--answers", str(answers)] if answers.exists() else []
        subprocess.run([sys.executable, "-m", "runner", "import", "bfcl", str(questions), *extra,
                        "-o", str(folder), "--script", "--force"], check=True, capture_output=True)
    return sorted(folder.glob("*.yml"))


def figure_q(folder: Path, generated: dict[str, Path], bfcl_data: Path | None) -> None:
    """Print ``list`` and ``validate`` of each suite in ``generated`` (label -> folder) and of BFCL's
    imported suite when ``bfcl_data`` is given."""
    suites = {label: sorted(path.glob("*.yml")) for label, path in generated.items()}
    if bfcl_data is not None:
        suites["BFCL imported, 11 categories"] = imported_bfcl(bfcl_data, folder / "bfcl")
    for label, files in suites.items():
        size = sum(f.stat().st_size for f in files) / 1e6
        for command in ("list", "validate"):
            wall, cpu = whole_command([command, *map(str, files)])
            print(f"(q) {command} {label} ({size:.1f} MB, {len(files)} files), whole command: {wall:.2f} s wall, "
                  f"{cpu:.2f} s CPU; per {GOAL_MB} MB {wall / size * GOAL_MB:.2f} s wall   target < 2 s")
