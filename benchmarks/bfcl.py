"""tooltrial on BFCL's own data: each single-turn category imported with ``--script``, then run with the
scripted provider, so every case replays its first acceptable answer. Not a test.

    pip download --no-deps bfcl-eval -d /tmp/bfcl && unzip -q /tmp/bfcl/*.whl -d /tmp/bfcl/src
    .venv/bin/python benchmarks/bfcl.py /tmp/bfcl/src/bfcl_eval/data [CATEGORY...]

Prints per category: entries, the import's wall-clock seconds, and how many cases passed (every one
should: a case its own first acceptable answer fails is a translation that loses something), but for
the entries BFCL's own checker fails whatever the call: an answer that requires a parameter the doc
lacks, or gives no acceptable value for one the doc requires (BFCL v4: live_simple_106-63-0,
live_simple_112-68-0, live_multiple_862-181-3, live_multiple_964-207-0). Then the imported suite's
size, and the CPU seconds of ``list`` and ``validate`` of all its files in this process (best of 3).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

from runner.cli.app import main

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance", "live_simple",
              "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance")


def quiet(argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def measure(data: Path, category: str, work: Path) -> tuple[int, float, int]:
    """(entries, import seconds, passed runs) of one category."""
    questions = data / f"BFCL_v4_{category}.json"
    answers = data / "possible_answer" / questions.name
    extra = ["--answers", str(answers)] if answers.exists() else []
    started = time.perf_counter()
    code = quiet(["import", "bfcl", str(questions), *extra, "-o", str(work / "cases"), "--script", "--force"])
    seconds = time.perf_counter() - started
    assert code == 0, f"import of {category} exited {code}"
    results = work / "results" / category
    quiet(["run", str(work / "cases" / f"bfcl_{category}.yml"), "-p", "scripted", "-j", "4", "--results", str(results)])
    runs = [json.loads(p.read_text()) for p in results.glob("*/runs/*.json")]
    return len(runs), seconds, sum(r["status"] == "pass" for r in runs)


def main_benchmark() -> None:
    data = Path(sys.argv[1])
    chosen = sys.argv[2:] or list(CATEGORIES)
    print(f"{'category':<24}{'entries':>8}{'import':>9}{'passed':>8}")
    with tempfile.TemporaryDirectory() as folder:
        for category in chosen:
            entries, seconds, passed = measure(data, category, Path(folder))
            print(f"{category:<24}{entries:>8}{seconds:>8.2f}s{passed:>8}")
        files = sorted((Path(folder) / "cases").glob("*.yml"))
        size = sum(f.stat().st_size for f in files) / 1e6
        for command in ("list", "validate"):
            print(f"{command} of the imported suite ({size:.1f} MB, {len(files)} files): "
                  f"{cpu_seconds([command, *map(str, files)]):.2f} s CPU (goal: under 2 s for 4.6 MB)")


def cpu_seconds(argv: list[str], times: int = 3) -> float:
    """The least CPU seconds of ``times`` runs of the command ``argv`` in this process."""
    best = float("inf")
    for _ in range(times):
        started = time.process_time()
        quiet(argv)
        best = min(best, time.process_time() - started)
    return best


if __name__ == "__main__":
    main_benchmark()
