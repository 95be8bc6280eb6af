"""Figure (o): the run file of a 30-request run, its size and write time with and without the conversation
(``messages``, ``message_cuts``, ``tools``), and its decode time per record by msgspec against a plain
``orjson.loads`` of the same bytes (the floor)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import orjson

from runner.output.decode import record_from_dict
from runner.output.store import SCHEMA_VERSION, to_json
from runner.providers.registry import resolve_provider
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import RunRecord
from runner.sandbox.command import Sandbox
from runner.spec.discover import load_cases
from runner.suite.engine import run_matrix
from runner.suite.options import SuiteOptions

REQUESTS = 30
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


def _per_call(times: int, work: object) -> float:
    """The best seconds per call of ``work`` (a callable of no arguments) over ``times`` calls, in 5 rounds."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(times):
            work()  # type: ignore[operator]
        best = min(best, (time.perf_counter() - started) / times)
    return best


def figure_o(folder: Path, sandbox: Sandbox) -> None:
    """Print (o): the run file of a 30-request run before and after the conversation record, and its decoding."""
    record = long_record(folder, sandbox)
    before = dataclasses.replace(record, messages=[], message_cuts=[], tools=[])
    written = {}
    for name, one in (("before", before), ("after", record)):
        document = {"schema_version": SCHEMA_VERSION, "run_id": "bench", **one.to_dict()}
        if name == "before":
            for key in ("messages", "message_cuts", "tools"):
                document.pop(key)
        seconds = _per_call(50, lambda: (folder / "o.json").write_text(to_json(document), encoding="utf-8"))
        written[name] = to_json(document).encode()
        print(f"(o) run file of a {REQUESTS}-request run, {name} the conversation record"
              f" ({len(record.messages)} messages): {len(written[name]):,} bytes, {seconds * 1000:.2f} ms to encode and write")
    data = written["after"]
    floor = _per_call(200, lambda: orjson.loads(data))
    decode = _per_call(200, lambda: record_from_dict(orjson.loads(data)))
    print(f"(o) decoding it (orjson.loads + msgspec): {decode * 1000:.3f} ms/record; orjson.loads alone"
          f" {floor * 1000:.3f} ms ({decode / floor:.1f}x the floor)")
