"""tooltrial's benchmark: prints its figures against their targets. Not a test.

    .venv/bin/python benchmarks/run.py [--http-cases 200] [--delay 0.1] [--litellm] [--executors] [--only LETTERS]

(a) ``list`` and ``validate`` of 1,000 generated cases (10 files): the command's own
    wall-clock and CPU time in this process (best of 3), and the whole CLI with
    interpreter start-up; then the same for 1,000 cases that each define three mocks
    with JSON-Schema parameters (each mock's schema its own, as generated suites write
    them), ``validate`` checking every schema, every tool name and parameter a trace
    check names, and rendering every template; both again at 5,000 cases (best of 2).
(b) The bundled suite with the scripted provider, 5 runs of each case at -j 1:
    harness time per run, the time spent in setup, verify and bash subprocesses left out;
    also the CPU time of this process per run (steadier on a shared machine).
(c) N generated cases of 3 model requests each against a loopback OpenAI-compatible
    server answering after ``delay`` seconds, at -j 1 and -j 16: the speed-up. The
    model is a minimal urllib provider; with ``--litellm``, also tooltrial's litellm
    provider, which costs CPU per request that a small machine feels at -j 16.
(d) Peak memory (RSS, the process's VmHWM) of ``tooltrial run`` on the bundled suite at
    -j 16, 4 runs a case, in a fresh interpreter; then generated suites of 100, 1,000 and 10,000
    scripted cases (one run each, -j 4): the run's wall-clock and CPU time and peak RSS, the peak RSS
    of ``tooltrial report`` of its results folder, and how much each peak grew from 100 to 10,000.
(e) The HTML report of 10,000 runs (the bundled suite's runs repeated): the CPU time to make the
    page from the report document, its size, and in headless Chromium (Debian's, through playwright) the first paint, the load event,
    the run list ready and one transcript opened; skipped with a message without chromium.
(f) The OpenTelemetry export (``--otel``) of 1,000 run records, (b)'s repeated: the spans made
    with the SDK and written as OTLP JSON lines, per run, and the file's size; then the same with ``--otel-content``.
(g) What follows the matrix for 1,000 run records, (b)'s repeated, with ``--report FILE --output json``:
    the CPU time of ``conclude`` and ``finish`` (the report encoded once, a run at a time read
    back from its run file, for report.json; the --report file and stdout copied from it), best of 3.
(h) Start-up: ``tooltrial run`` of one live case through an alias at the loopback server, in a fresh
    interpreter (median of 3); and the CPU per model request through tooltrial's litellm provider
    against the minimal urllib provider in this process (benchmarks/startup.py).
(i) A forwarded port under bubblewrap (``Access(forward=PORT)``): a command's start without
    and with one, and the relay's throughput (benchmarks/forward.py).
(j) An external agent's endpoint: its start and stop, a request in each wire format as JSON and as a
    stream, and the bundled examples/agents case's run beside its agent command (benchmarks/agents.py).
(k) With ``--executors``: threads against worker processes (``--workers``) on the agent workload, 200 and
    1,000 cases x 2 requests at -j 16 / 64 / 128 through the whole CLI, with wall, CPU, peak memory of the
    process tree and the ratio to the physical limit (benchmarks/executors.py, which also measures
    (l), where ``--workers auto`` starts paying, with ``--crossover``).
(m) A two-node local Ray cluster (``--executor ray``): the bundled suite and the agent workload
    (benchmarks/ray_cluster.py).
(n) Command start: ``bash -c true`` through ``Sandbox.run`` in plain mode and under bwrap, against the
    same programs started directly (bash; prlimit + setpriv + bash; each mode's whole command line),
    median of 100 interleaved tries (benchmarks/commands.py).
(o) A run file of a 30-request scripted run (90 messages, 58 tool calls): its size and the time to write it, before
    and after the conversation record (without and with ``messages``, ``message_cuts`` and ``tools``), and the
    time to decode it (orjson, then pydantic) against orjson's parse alone (benchmarks/records.py).
(p) A case naming a 10,000-row CSV dataset, its turn, files and expect rendered from each row:
    ``list`` and ``validate`` of it in this process, wall-clock and CPU time, best of 3
    (benchmarks/dataset_cases.py). Measured on a busy 2-core machine, two passes: list 1.52 to 1.75 s CPU
    (1.9 to 3.9 s wall), validate 1.86 to 2.16 s CPU (3.1 to 4.2 s wall): about 150 to 220 us a row.
(q) Big suites: ``list`` and ``validate`` of 10,000 generated cases (without and with three mocks each) and,
    with ``--bfcl DATA``, of BFCL's imported single-turn suite, each a whole command (benchmarks/bigsuites.py).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agents import figure_j
from bigsuites import figure_q
from commands import figure_n
from dataset_cases import figure_p
from executors import figure_k
from fake_openai import FakeOpenAI, HttpProvider
from forward import figure_i
from records import figure_o
from startup import figure_h

from runner.cli.app import main
from runner.output.html import html_page
from runner.output.report import report_document
from runner.providers.kind import ProviderSpec
from runner.providers.registry import resolve_provider
from runner.providers.settings import ModelSettings
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import PASS, RunRecord
from runner.sandbox.choose import choose_sandbox
from runner.sandbox.command import CommandResult, Sandbox
from runner.scoring.aggregate import aggregate
from runner.spec.config import Config
from runner.spec.discover import load_cases
from runner.spec.schemacheck import forget_schema_checks
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions

ROOT = Path(__file__).resolve().parent.parent
CASE = """\
- id: case-{n:04d}
  description: Generated case {n}; write a file, read it back, say done.
  tags: [bench, generated]
  files: {{notes.txt: "alpha\\nbeta\\n"}}
  turns: ["Write hello to out.txt, read it back, then say done."]
  expect:
    files:
      out.txt: {{contains: [hello], not_contains: [goodbye]}}
    response_contains: [done]
    trace: {{must_include: [write_file, read_file], avoid: [bash], max_calls: 4}}
    max_turns: 5
  script:
    - tool_calls: [{{name: write_file, arguments: {{path: out.txt, content: "hello\\n"}}}}]
    - tool_calls: [{{name: read_file, arguments: {{path: out.txt}}}}]
    - content: "done: out.txt says hello"
"""


MOCK = """\
    - name: {tool}
      description: Generated mock {tool} of case {n}.
      parameters:
        type: object
        properties:
          city: {{type: string, description: "City name, e.g. Paris{suffix}."}}
          days: {{type: integer, minimum: 1, maximum: 14}}
          units: {{type: string, enum: [metric, imperial]}}
        required: [city]
        additionalProperties: false
      responses:
        - when: {{city: Paris}}
          result: {{sky: sunny, celsius: {n}}}
        - error: unknown city
"""
MOCKED_CASE = """\
- id: mocked-{n:04d}
  description: Generated case {n} with three mock tools.
  tags: [bench, mocks]
  turns: ["What is the weather in Paris?"]
  mocks:
{mocks}  expect:
    response_contains: [sunny]
    trace: {{must_include: [weather_{n}], avoid: [forecast_{n}], args: {{weather_{n}: {{city: Paris}}}}, max_calls: 2}}
  script:
    - tool_calls: [{{name: weather_{n}, arguments: {{city: Paris}}}}]
    - content: It is sunny.
"""


def plain_case(n: int) -> str:
    """Case ``n`` of the plain suite: ``CASE``."""
    return CASE.format(n=n)


def mocked_case(n: int, distinct: bool = False) -> str:
    """A case with three mocks, ``weather_N``, ``forecast_N`` and ``alerts_N``, written out in the
    case; their ``parameters`` are the same in every case unless ``distinct``."""
    mocks = "".join(MOCK.format(tool=f"{kind}_{n}", n=n, suffix=f" {n} {kind}" if distinct else "")
                    for kind in ("weather", "forecast", "alerts"))
    return MOCKED_CASE.format(n=n, mocks=mocks)


def generate(folder: Path, count: int, per_file: int = 100, case: Callable[[int], str] = plain_case) -> Path:
    """Write ``count`` cases, ``per_file`` to a file (``g00.yml``...), into ``folder``; return it.
    ``case(n)`` is the text of case ``n``."""
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, count, per_file):
        cases = "".join(case(n) for n in range(start, min(start + per_file, count)))
        (folder / f"g{start // per_file:02d}.yml").write_text(cases, encoding="utf-8")
    return folder


def best_of(times: int, work: Callable[[], Any]) -> tuple[float, float]:
    """The shortest wall-clock and CPU seconds (this process) of ``times`` calls of ``work``."""
    wall = cpu = float("inf")
    for _ in range(times):
        started, used = time.perf_counter(), time.process_time()
        work()
        wall, cpu = min(wall, time.perf_counter() - started), min(cpu, time.process_time() - used)
    return wall, cpu


def cli_seconds(*args: str) -> float:
    """Wall-clock seconds of the ``tooltrial`` command with ``args``, best of 3."""
    command = [sys.executable, "-m", "runner", *args]
    return best_of(3, lambda: subprocess.run(command, check=True, capture_output=True))[0]


def quiet_main(argv: Sequence[str]) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(list(argv)) == 0, argv


def fresh_main(argv: Sequence[str]) -> None:
    """``quiet_main`` with the per-schema cache emptied first, so no repetition reuses another's checks."""
    forget_schema_checks()
    quiet_main(argv)


def figure_a(folder: Path) -> None:
    plain = generate(folder / "cases", 1000)
    mocked = generate(folder / "mocked", 1000, case=mocked_case)
    for cases, label in ((plain, "1,000 cases"), (mocked, "1,000 cases x 3 mocks")):
        for command in ("list", "validate"):
            wall, cpu = best_of(3, functools.partial(fresh_main, [command, str(cases)]))
            whole = cli_seconds(command, str(cases))
            print(f"(a) {command} {label}: {wall:.2f} s wall, {cpu:.2f} s CPU"
                  f" (whole command with interpreter start-up: {whole:.2f} s)   target < 0.5 s CPU")
    for count in (5000,):  # the cost per case must not grow with the suite
        for case, label in ((plain_case, "cases"), (mocked_case, "cases x 3 mocks")):
            many = generate(folder / f"many-{label[:5]}", count, case=case)
            for command in ("list", "validate"):
                wall, cpu = best_of(2, functools.partial(fresh_main, [command, str(many)]))
                print(f"    {command} {count:,} {label}: {wall:.2f} s wall, {cpu:.2f} s CPU"
                      f" ({cpu / count * 1000:.2f} s per 1,000)")
    distinct = generate(folder / "distinct", 1000, case=lambda n: mocked_case(n, distinct=True))
    wall, cpu = best_of(3, lambda: fresh_main(["validate", str(distinct)]))
    print(f"    validate 1,000 cases x 3 mocks, every schema its own (3,000 checks): {wall:.2f} s wall, {cpu:.2f} s CPU")


class TimedSandbox(Sandbox):
    """A Sandbox that adds up the wall-clock seconds its commands take."""

    def __init__(self, base: Sandbox) -> None:
        super().__init__(base.mode, base.binary, base.hide, base.hardened)
        self.seconds = 0.0
        self._sum = threading.Lock()

    def run(self, *args: Any, **kwargs: Any) -> CommandResult:
        result = super().run(*args, **kwargs)
        with self._sum:
            self.seconds += result.duration
        return result


def figure_b(sandbox: Sandbox, repeats: int = 5) -> list[RunRecord]:
    cases = load_cases([ROOT / "cases"])
    timed = TimedSandbox(sandbox)
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    started, cpu = time.perf_counter(), time.process_time()
    records = run_matrix(cases, [arm], SuiteOptions(RunOptions(timed)), repeats)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    _all_pass(records)
    runs = len(records)
    print(f"(b) harness overhead: {(wall - timed.seconds) / runs * 1000:.1f} ms/run wall,"
          f" {cpu / runs * 1000:.1f} ms/run CPU, over {runs} runs ({sandbox.mode} sandbox; time in"
          f" subprocesses, left out: {timed.seconds / runs * 1000:.0f} ms/run)   target < 10 ms")
    return records


def figure_f(records: Sequence[RunRecord], count: int = 1000) -> None:
    from runner.output.otel import OtelTarget, run_spans
    from runner.output.otlp import json_lines

    many = [records[i % len(records)] for i in range(count)]
    spans = sum(len(r.model_requests) + len(r.steps) + 1 for r in many)
    for content, flag in ((False, ""), (True, " --otel-content")):
        started = time.perf_counter()
        lines = json_lines(run_spans(many, OtelTarget(content=content)))
        wall = time.perf_counter() - started
        print(f"(f) --otel{flag} export of {count:,} runs ({spans:,} spans): {wall / count * 1000:.2f} ms/run,"
              f" {len(lines.encode()) / 1e6:.1f} MB of OTLP JSON lines   target < 5 ms/run")


def figure_g(folder: Path, records: Sequence[RunRecord], count: int = 1000) -> None:
    from runner.output.finish import Conclusion, View, conclude, finish
    from runner.output.scan import Runs
    from runner.output.store import ResultsWriter
    from runner.scoring.summary import summarize
    from runner.terminal.console import make_console
    from runner.terminal.lines import RunPrinter

    many = [dataclasses.replace(records[i % len(records)], run=i // len(records) + 1) for i in range(count)]
    saved = ResultsWriter(folder / "g")  # the run files, written as the runs end: not part of the figure
    runs = Runs([summarize(r) for r in many], [saved.write_run(r, place) for place, r in enumerate(many, start=1)])

    def end() -> None:
        ending = conclude(runs, {}, ResultsWriter(folder / "g"), "bench", Conclusion())
        view = View(RunPrinter(make_console(io.StringIO()), False, True), as_json=True, stdout=io.StringIO())
        with contextlib.redirect_stderr(io.StringIO()):
            finish(ending, {"report": folder / "g.json"}, view)

    _, cpu = best_of(3, end)
    print(f"(g) the report of {count:,} runs written to report.json and --report and printed (--output json):"
          f" {cpu:.2f} s CPU ({cpu / count * 1000:.2f} ms/run)   target < 1.5 ms/run")


def urllib_arm(url: str) -> Arm:
    return Arm(ProviderSpec("urllib", lambda case: HttpProvider(url)), load_prompt(None))


def litellm_arm(url: str) -> Arm:
    os.environ["TOOLTRIAL_BENCH_KEY"] = "sk-bench"  # the fake server takes any key
    settings = ModelSettings(model="openai/gpt-4o-mini", api_base=url, api_key_env="TOOLTRIAL_BENCH_KEY",
                             max_concurrency=16)  # a loopback alias's default is one run at a time
    return Arm(resolve_provider("litellm", Config(providers={"litellm": settings})), load_prompt(None))


def figure_c(folder: Path, sandbox: Sandbox, count: int, delay: float, make_arm: Callable[[str], Arm]) -> None:
    cases = load_cases([generate(folder / "http", count)])
    seconds = {}
    with FakeOpenAI(delay) as server:
        arm = make_arm(server.url)
        for jobs in (1, 16):
            started = time.perf_counter()
            records = run_matrix(cases, [arm], SuiteOptions(RunOptions(sandbox), jobs=jobs))
            seconds[jobs] = time.perf_counter() - started
            _all_pass(records)
            assert all(r.requests == 3 for r in records)
    print(f"(c) {count} cases x 3 requests at {delay * 1000:.0f} ms, {arm.provider.name} provider:"
          f" -j 1 {seconds[1]:.1f} s, -j 16 {seconds[16]:.1f} s, speed-up {seconds[1] / seconds[16]:.1f}x"
          "   target >= 12x")


_MEASURED_RUN = """
import contextlib, io, resource, sys, time
from runner.cli.app import main
started = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])
wall = time.perf_counter() - started
used = resource.getrusage(resource.RUSAGE_SELF)
peak = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, int(peak.split()[1]), "litellm" in sys.modules, wall, used.ru_utime + used.ru_stime)
"""


def measured(*argv: str) -> tuple[int, float, bool, float, float]:
    """``tooltrial ARGV`` in a fresh interpreter: its exit code, peak RSS (MB, the child's own VmHWM:
    ru_maxrss from wait4 would include this process's memory at fork), whether it loaded litellm, and
    its wall-clock and CPU seconds (start-up included)."""
    done = subprocess.run([sys.executable, "-c", _MEASURED_RUN, *argv], capture_output=True, text=True, check=True)
    code, peak_kb, litellm, wall, cpu = done.stdout.split()
    return int(code), int(peak_kb) / 1024, litellm == "True", float(wall), float(cpu)


def figure_d(folder: Path, sizes: Sequence[int] = (100, 1000, 10_000)) -> None:
    code, peak, litellm, _, _ = measured("run", str(ROOT / "cases"), "-j", "16", "--runs", "4",
                                         "--results", str(folder / "bundled"))
    assert code == 0 and not litellm
    print(f"(d) peak RSS of tooltrial run (bundled suite x 4, -j 16, litellm not loaded): {peak:.0f} MB   target < 150 MB")
    peaks: dict[str, list[float]] = {"run": [], "report": []}
    for count in sizes:
        cases, results = generate(folder / f"d{count}", count), folder / f"d{count}-results"
        code, run_peak, _, wall, cpu = measured("run", str(cases), "-p", "scripted", "-j", "4", "--results", str(results))
        assert code == 0
        code, report_peak, _, report_wall, _ = measured("report", str(results))
        assert code == 0
        peaks["run"].append(run_peak)
        peaks["report"].append(report_peak)
        print(f"    {count:>6,} scripted cases: run {wall:6.1f} s wall, {cpu:6.1f} s CPU ({cpu / count * 1000:.1f} ms/case), "
              f"peak RSS {run_peak:.0f} MB; report {report_wall:5.1f} s, peak RSS {report_peak:.0f} MB")
        shutil.rmtree(results)
    growth = ", ".join(f"{name} x{values[-1] / values[0]:.2f}" for name, values in peaks.items())
    print(f"    peak RSS from {sizes[0]:,} to {sizes[-1]:,} cases: {growth}   target: each < 150 MB")


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
_PAINT = """() => {
    const at = name => performance.getEntriesByName(name)[0];
    return [at('first-contentful-paint').startTime, performance.getEntriesByType('navigation')[0].loadEventEnd,
            at('tooltrial-runs-ready').startTime]; }"""


def figure_e(folder: Path, sandbox: Sandbox, count: int = 10_000) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("(e) skipped: playwright is not installed (pip install -e '.[test]')")
        return
    if not shutil.which(CHROMIUM):
        print(f"(e) skipped: no {CHROMIUM} (apt-get install chromium)")
        return
    arm = Arm(resolve_provider("scripted"), load_prompt(None))
    suite = run_matrix(load_cases([ROOT / "cases"]), [arm], SuiteOptions(RunOptions(sandbox), jobs=4))
    records = [dataclasses.replace(suite[i % len(suite)], run=i // len(suite)) for i in range(count)]
    meta = {"run_id": "bench", "results": str(folder), "started": None, "finished": None}
    document = report_document(aggregate(records), [], records, 0, meta)  # report.json's, made anyway
    page = folder / "report.html"
    cpu = time.process_time()
    page.write_text(html_page(document, records), encoding="ascii")
    written = time.process_time() - cpu
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tab = browser.new_page()
        tab.goto(page.as_uri())
        tab.wait_for_selector("body[data-ready=true]", state="attached", timeout=60_000)
        paint, load, ready = (ms / 1000 for ms in tab.evaluate(_PAINT))
        opened = time.perf_counter()
        tab.click("#run-list tr[data-index='0'] a")
        tab.wait_for_selector("#transcript-title")
        transcript = time.perf_counter() - opened
        browser.close()
    print(f"(e) HTML report of {count:,} runs: page made from the report in {written:.1f} s CPU, {page.stat().st_size / 1e6:.0f} MB;"
          f" Chromium: first paint {paint:.2f} s, load event {load:.2f} s, run list ready {ready:.2f} s,"
          f" a transcript opened in {transcript:.2f} s   target: first paint < 3 s")


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (VmHWM)."""
    peak = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:"))
    return int(peak.split()[1]) / 1024


def _all_pass(records: Sequence[RunRecord]) -> None:
    failed = [f"{r.case}: {r.status} {r.cause or ''}" for r in records if r.status != PASS]
    assert not failed, failed[:3]


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http-cases", type=int, default=200, help="cases for (c) (default 200)")
    parser.add_argument("--delay", type=float, default=0.1, help="seconds the fake server waits (default 0.1)")
    parser.add_argument("--litellm", action="store_true", help="measure (c) through the litellm provider too")
    parser.add_argument("--executors", action="store_true", help="measure (k), threads against worker processes")
    parser.add_argument("--bfcl", metavar="DATA", type=Path,
                        help="(q) also imports BFCL's data folder (bfcl_eval/data of the bfcl-eval wheel)")
    parser.add_argument("--only", metavar="LETTERS", default="abcdefghijnopq",
                        help="measure only these figures, e.g. 'o' or 'bg' (default: all but k; f and g run b)")
    args = parser.parse_args()
    want = set(args.only) | ({"k"} if args.executors else set())
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    sandbox = choose_sandbox("auto")
    with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
        if "a" in want:
            figure_a(Path(folder))
        if want & set("bfg"):
            records = figure_b(sandbox)
            if "f" in want:
                figure_f(records)
            if "g" in want:
                figure_g(Path(folder), records)
        if "c" in want:
            figure_c(Path(folder), sandbox, args.http_cases, args.delay, urllib_arm)
        if "c" in want and args.litellm:
            figure_c(Path(folder), sandbox, args.http_cases, args.delay, litellm_arm)
            print(f"    (this process's peak RSS after the litellm runs: {peak_rss_mb():.0f} MB)")
        if "h" in want:
            figure_h(Path(folder), load_cases([generate(Path(folder) / "h", 100)]), sandbox, [urllib_arm, litellm_arm])
        if "i" in want:
            figure_i(Path(folder).resolve())
        if "j" in want:
            figure_j(Path(folder).resolve())
        if "o" in want:
            figure_o(Path(folder), sandbox)
    if "d" in want:
        with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
            figure_d(Path(folder))
    if "n" in want:
        figure_n()
    if "p" in want:
        with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
            figure_p(Path(folder))
    if "q" in want:
        with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
            generated = {"10,000 cases": generate(Path(folder) / "plain", 10_000),
                         "10,000 cases x 3 mocks": generate(Path(folder) / "mocked", 10_000, case=mocked_case)}
            figure_q(Path(folder), generated, args.bfcl)
    if "e" in want:
        with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
            figure_e(Path(folder), sandbox)
    if "k" in want:
        with tempfile.TemporaryDirectory(prefix="tooltrial-bench-") as folder:
            figure_k(Path(folder), [200, 1000], [16, 64, 128], args.delay, len(os.sched_getaffinity(0)))

if __name__ == "__main__":
    main_benchmark()
