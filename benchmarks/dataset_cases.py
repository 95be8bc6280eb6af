"""Figure (p) of benchmarks/run.py: a case naming a 10,000-row CSV dataset, expanded.

The case renders a row's fields in its turn, its ``expect`` (so each expanded case is validated
again) and its ``files``; ``list`` and ``validate`` of it in this process, wall-clock and CPU time,
best of 3. The data file is read once a command.

    .venv/bin/python benchmarks/dataset_cases.py   # this figure alone
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path

from runner.cli.app import main

CASE = """\
- id: sum
  dataset: {file: rows.csv, id: name}
  turns: ["What is {{ a }} + {{ b }}? Write it to out.txt."]
  files: {"in.txt": "{{ a }} {{ b }}"}
  expect:
    response_contains: "{{ total }}"
    files: {out.txt: {contains: "{{ total }}"}}
"""


def figure_p(folder: Path, rows: int = 10_000) -> None:
    """Print the time to expand a ``rows``-row CSV dataset case through ``list`` and ``validate``."""
    (folder / "rows.csv").write_text("name,a,b,total\n" + "".join(f"r{n},{n},{n + 1},{2 * n + 1}\n" for n in range(rows)))
    (folder / "sums.yml").write_text(CASE)
    for command in ("list", "validate"):
        wall = cpu = float("inf")
        for _ in range(3):
            started, used = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                code = main([command, str(folder / "sums.yml")])
            assert code == 0, code
            wall, cpu = min(wall, time.perf_counter() - started), min(cpu, time.process_time() - used)
        print(f"(p) {command} a case of a {rows:,}-row CSV dataset: {wall:.2f} s wall, {cpu:.2f} s CPU"
              f" ({cpu / rows * 1e6:.0f} us per row)")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
        figure_p(Path(folder))
