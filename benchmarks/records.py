"""Figure (o): the run file of a 30-request run, its size and write time (ResultsWriter.write_run: range check,
``to_dict``, orjson, the atomic write) with and without the conversation record (``messages``, ``message_cuts``,
``tools``), and its decode time per record by pydantic (runner.output.decode.record_from_dict) against a plain
``orjson.loads`` of the same bytes, the floor."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from runner.output.decode import record_from_dict
from runner.output.store import ResultsWriter
from runner.providers.registry import resolve_provider
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import RunRecord
from runner.sandbox.command import Sandbox
from runner.spec.discover import load_cases
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions

REQUESTS = 30
CONVERSATION = ("messages", "message_cuts", "tools")  # the keys of the conversation record
_CALL = ('    - tool_calls: [{{name: write_file, arguments: {{path: "notes/n{i:02d}.txt", content: "{text}"}}}},'
         ' {{name: read_file, arguments: {{path: "notes/n{i:02d}.txt"}}}}]\n')
LONG_CASE = """\
- id: long-run
  description: A run of {requests} model requests, two tool calls each, and a final reply.
  files: {{notes/seed.txt: "seed\\n"}}
  turns: ["Write the notes, read each back, then say done."]
  expect:
    files:
      notes/n00.txt: {{contains: [note]}}
    response_contains: [done]
    trace: {{must_include: [write_file, read_file], avoid: [bash], max_calls: 80}}
    max_turns: {turns}
  script:
{calls}    - content: "done: every note written and read back"
"""


def long_record(folder: Path, sandbox: Sandbox) -> RunRecord:
    """The record of one scripted run of REQUESTS model requests (2 tool calls each but the last, the reply),
    with its messages, steps, checks and commands as tooltrial keeps them."""
    text = "note " + "lorem ipsum dolor sit amet " * 12
    calls = "".join(_CALL.format(i=i, text=text) for i in range(REQUESTS - 1))
    (folder / "long").mkdir(parents=True, exist_ok=True)
    (folder / "long" / "long.yml").write_text(LONG_CASE.format(requests=REQUESTS, turns=REQUESTS + 5, calls=calls),
                                               encoding="utf-8")
    cases = load_cases([folder / "long"])
    [record] = run_matrix(cases, [Arm(resolve_provider("scripted"), load_prompt(None))],
                          SuiteOptions(RunOptions(sandbox)), 1)
    assert len(record.model_requests) == REQUESTS, record.cause
    return record


def _per_call(times: int, work: Callable[[], object], clock: Callable[[], float] = time.perf_counter) -> float:
    """The best seconds per call of ``work`` over ``times`` calls, in 5 rounds, by ``clock`` (wall-clock, or CPU time:
    steadier on a shared machine)."""
    best = float("inf")
    for _ in range(5):
        started = clock()
        for _ in range(times):
            work()
        best = min(best, (clock() - started) / times)
    return best


def figure_o(folder: Path, sandbox: Sandbox) -> None:
    """Print (o): the run file of a 30-request run before and after the conversation record, and its decoding."""
    record = long_record(folder, sandbox)
    writer = ResultsWriter(folder / "o")
    without = dataclasses.replace(record, messages=[], message_cuts=[], tools=[])

    def before() -> Path:  # as tooltrial wrote it before it kept the conversation: no such keys at all
        data = {key: value for key, value in without.to_dict().items() if key not in CONVERSATION}
        return writer.write_run(without, data=data)

    for name, write in (("before", before), ("after", lambda: writer.write_run(record))):
        seconds = _per_call(50, write)
        size = write().stat().st_size
        print(f"(o) run file of a {REQUESTS}-request run, {name} the conversation record"
              f" ({len(record.messages)} messages): {size:,} bytes, {seconds * 1000:.2f} ms to write")
    text = writer.write_run(record).read_bytes()
    floor = _per_call(200, lambda: orjson.loads(text), time.process_time)
    decode = _per_call(200, lambda: record_from_dict(orjson.loads(text)), time.process_time)
    print(f"(o) decoding it (orjson.loads, then pydantic): {decode * 1000:.2f} ms/record CPU; orjson.loads alone"
          f" {floor * 1000:.2f} ms ({decode / floor:.1f}x the floor)")
