"""Attacks on tooltrial's own process and time, through the CLI (``main``) on real files and commands.

A hard link out of the workspace is refused by the file tools; a glob with
repeated ``**``, the snapshot of huge files and a verify command stay inside the
run's timeout; the first Ctrl-C stops a running command. Each test asserts on
what tooltrial recorded in its results folder.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.cli import main
from tests.sandboxes import none_left


def _run(argv: list[str], within: float = 60.0) -> int:
    """``main(argv)`` in a thread, so a hang fails the test after ``within`` seconds instead of stalling it."""
    codes: list[int] = []
    worker = threading.Thread(target=lambda: codes.append(main(argv)), daemon=True)
    worker.start()
    worker.join(within)
    assert not worker.is_alive(), f"tooltrial run did not end within {within:g} s"
    return codes[0]


def _results(results: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The run records and the report of the one invocation under ``results``."""
    (folder,) = results.iterdir()
    runs = [json.loads(path.read_text()) for path in sorted((folder / "runs").glob("*.json"))]
    return runs, json.loads((folder / "report.json").read_text())


def _suite(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bounds.yml"
    path.write_text(text, encoding="utf-8")
    return path


def _steps(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(step["name"], step["result"]) for step in record["steps"]]


REFUSED = ("has 2 hard links, and the file tools refuse a file whose other names may lie outside the workspace; "
           "delete it to write a new one")


def test_file_tools_refuse_a_hard_link_to_a_file_outside_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    canary, second = outside / "canary.txt", outside / "second.txt"
    canary.write_bytes(b"secret canary\n")
    second.write_bytes(b"second canary\n")
    suite = _suite(tmp_path, f"""\
- id: hardlink
  setup: ["ln {canary} linked.txt"]
  turns: [Change linked.txt]
  expect:
    files: {{linked.txt: {{contains: [secret]}}}}
  script:
    - tool_calls:
        - {{name: write_file, arguments: {{path: linked.txt, content: "written"}}}}
        - {{name: edit_file, arguments: {{path: linked.txt, old_string: secret, new_string: edited}}}}
        - {{name: bash, arguments: {{command: "ln {second} made-by-bash.txt"}}}}
        - {{name: write_file, arguments: {{path: made-by-bash.txt, content: "written"}}}}
        - {{name: edit_file, arguments: {{path: made-by-bash.txt, old_string: second, new_string: edited}}}}
        - {{name: read_file, arguments: {{path: made-by-bash.txt}}}}
    - content: done
""")
    assert _run(["run", str(suite), "--sandbox", "none", "--results", str(tmp_path / "results")]) == 1
    (record,), _ = _results(tmp_path / "results")
    assert [(c["check"], c["passed"], c["message"]) for c in record["checks"]] == [
        ("files", False, ("linked.txt has 2 hard links, and expect.files does not read a file whose other names "
                          "may lie outside the workspace")),
    ]
    assert _steps(record) == [
        ("write_file", f"Error: linked.txt {REFUSED}"),
        ("edit_file", f"Error: linked.txt {REFUSED}"),
        ("bash", "[exit code 0]"),
        ("write_file", f"Error: made-by-bash.txt {REFUSED}"),
        ("edit_file", f"Error: made-by-bash.txt {REFUSED}"),
        ("read_file", f"Error: made-by-bash.txt {REFUSED}"),
    ]
    assert canary.read_bytes() == b"secret canary\n" and second.read_bytes() == b"second canary\n"
    assert sorted(p.name for p in outside.iterdir()) == ["canary.txt", "second.txt"]
    assert os.stat(canary).st_nlink == 1  # the workspace, and its link, are gone


DEEP_TREE = 'p=.; for i in $(seq 1 20); do p=$p/d$i; mkdir $p; touch $p/f.txt; done'
GLOBSTARS = "**/**/**/**/**/**/**/**/*"


def test_a_glob_of_repeated_globstars_on_a_deep_tree_ends_inside_the_run_timeout(tmp_path: Path) -> None:
    suite = _suite(tmp_path, f"""\
- id: deep-glob
  timeout: 3
  setup: ["{DEEP_TREE}"]
  turns: [Find every file]
  expect: {{response_contains: done}}
  script:
    - tool_calls: [{{name: glob, arguments: {{pattern: "{GLOBSTARS}"}}}}]
    - content: done
""")
    assert _run(["run", str(suite), "--sandbox", "none", "--results", str(tmp_path / "results")], within=30) == 0
    (record,), _ = _results(tmp_path / "results")
    expected = "\n".join("/".join(f"d{i}" for i in range(1, depth + 1)) + "/f.txt" for depth in range(1, 21))
    assert _steps(record) == [("glob", "\n".join(sorted(expected.split("\n"))))]
    assert record["status"] == "pass" and record["duration"] < 3


def _interrupt_when(started: Callable[[], bool]) -> threading.Thread:
    """A thread that presses Ctrl-C (SIGINT to this process) once ``started()`` holds."""

    def press() -> None:
        stop = time.monotonic() + 30
        while not started() and time.monotonic() < stop:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGINT)

    return threading.Thread(target=press, daemon=True)


def test_the_first_ctrl_c_stops_a_running_bash_command_and_the_run_counts_as_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "command-started"
    suite = _suite(tmp_path, f"""\
- id: long-command
  timeout: 20
  turns: [Wait]
  script:
    - tool_calls: [{{name: bash, arguments: {{command: "touch {marker}; sleep 67.25"}}}}]
    - content: done
""")
    previous = signal.signal(signal.SIGINT, lambda *_: None)  # a press after tooltrial's handler is gone is lost
    try:
        presser = _interrupt_when(marker.exists)
        presser.start()
        started = time.monotonic()
        code = main(["run", str(suite), "--sandbox", "none", "--results", str(tmp_path / "results")])
        elapsed = time.monotonic() - started
        presser.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 2
    assert elapsed < 10, "the command ran on after the Ctrl-C"  # a hang guard: the run's timeout is 20 s
    assert none_left("sleep 67.25")
    runs, report = _results(tmp_path / "results")
    assert runs == [] and report["runs"] == []
    assert report["unfinished"] == [{"case": "bounds/long-command", "provider": "scripted", "prompt": "default",
                                     "run": 1}]


SPARSE = " ".join(f"f{i}" for i in range(10))


def test_the_snapshot_of_huge_sparse_files_and_the_checks_stay_inside_the_run_timeout(tmp_path: Path) -> None:
    suite = _suite(tmp_path, f"""\
- id: sparse
  timeout: 5
  setup: ["truncate -s 1000M {SPARSE}", "echo small > small.txt"]
  turns: [Touch some files]
  expect:
    files:
      f0: {{contains: [x]}}
      small.txt: {{equals: "small\\n"}}
  script:
    - tool_calls:
        - {{name: bash, arguments: {{command: "printf x >> f0 && printf y | dd of=f1 conv=notrunc status=none"}}}}
        - {{name: bash, arguments: {{command: "touch -r f2 f9.tmp; printf z | dd of=f2 conv=notrunc status=none; touch -r f9.tmp f2; rm f9.tmp"}}}}
    - content: done
""")
    assert _run(["run", str(suite), "--sandbox", "none", "--results", str(tmp_path / "results")], within=60) == 1
    (record,), _ = _results(tmp_path / "results")
    assert record["duration"] < 5
    # f0 grew and f1 got a new mtime: both show; f2 kept its size and mtime, so its change does not
    assert record["changes"] == {"added": [], "changed": ["f0", "f1"], "deleted": []}
    assert [(c["check"], c["passed"], c["message"]) for c in record["checks"]] == [
        ("files", False, ("f0 is 1048576001 bytes, over the 10000000 byte limit of expect.files content checks; "
                          "check it with expect.verify instead")),
        ("files", True, "small.txt equals the expected content"),
    ]
    assert record["status"] == "fail"


def test_verify_commands_count_inside_the_run_timeout(tmp_path: Path) -> None:
    suite = _suite(tmp_path, """\
- id: slow-verify
  timeout: 2
  turns: [Nothing]
  expect: {verify: sleep 30}
  script: [{content: done}]
""")
    assert _run(["run", str(suite), "--sandbox", "none", "--results", str(tmp_path / "results")], within=30) == 1
    (record,), _ = _results(tmp_path / "results")
    assert (record["status"], record["error_kind"], record["cause"]) == (
        "error", "timeout", "run timed out after 2s, in the checks")
    assert record["duration"] < 3
    assert [(c["check"], c["passed"]) for c in record["checks"]] == [("verify", False)]
