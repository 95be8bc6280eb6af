"""The ``tooltrial`` process's exit (runner.__main__), which skips the interpreter's module teardown only after
every exit handler ran: its code, output and handlers as before, for a live run and for a mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import ROOT, config, tooltrial

SCRIPTED = """\
- id: hello
  description: Write a file.
  turns: [Write hi.]
  script:
    - tool_calls: [{name: write_file, arguments: {path: hi.txt, content: hi}}]
    - content: Done.
  expect: {files: {hi.txt: {contains: [hi]}}}
"""
UNCONFINED = "commands run unconfined: they can read and write your files and use your network"


def _report(results: Path) -> dict[str, Any]:
    (folder,) = results.iterdir()
    report: dict[str, Any] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return report


# console() with a main that registers an exit handler (after console's own), prints without a newline to a
# pipe (so it sits in stdout's buffer) and leaves a thread that is not a daemon to finish.
_CONSOLE = """\
import atexit, sys, threading, time
import runner.cli.app
from runner import __main__ as entry
def main():
    atexit.register(lambda: open(sys.argv[1], "a").write("handler ran\\n"))
    threading.Thread(target=lambda: (time.sleep(0.2), open(sys.argv[1], "a").write("thread ended\\n"))).start()
    print("bye", end="")
    return 5
runner.cli.app.main = main
entry.console()
"""


def test_the_console_exits_with_the_code_after_the_threads_and_every_exit_handler(tmp_path: Path) -> None:
    log = tmp_path / "log"
    done = subprocess.run([sys.executable, "-c", _CONSOLE, str(log)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (5, "bye", "")
    assert log.read_text(encoding="utf-8") == "thread ended\nhandler ran\n"


@pytest.mark.slow
@pytest.mark.usefixtures("litellm_loaded")  # the suite's rule for modules with a live server (test_suite_layout)
def test_a_live_run_through_python_m_runner_reports_as_before(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yml"
    cases.write_text("- id: first\n  description: Say done.\n  turns: [Say done.]\n"
                     "  expect: {response_contains: [done]}\n", encoding="utf-8")
    with OpenAIServer(fallback=openai_reply("done")) as server:
        path = config(tmp_path, openai_base=server.api_base)
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
               "TOOLTRIAL_TEST_LOCAL_KEY": "sk-test"}
        done = tooltrial("run", str(cases), "-p", "local-openai", "--config", str(path), "--results",
                         str(tmp_path / "r"), "-q", "--output", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["overall"]["passed"] == 1
    (run,) = _report(tmp_path / "r")["runs"]
    assert (run["case"], run["status"], run["requests"]) == ("cases/first", "pass", 1)
    assert [chat.body["messages"][-1]["content"] for chat in server.chats] == ["Say done."]


@pytest.mark.parametrize("entry", [["-m", "runner"], ["-c", "import sys; from runner.cli import main; sys.exit(main())"]])
def test_a_mistake_told_while_litellm_imports_ends_the_process_as_before(tmp_path: Path, entry: list[str]) -> None:
    # the tools file is read after the import started: the process ends with its error, the import left unfinished
    cases, tools = tmp_path / "cases.yml", tmp_path / "tools.yml"
    cases.write_text("- id: first\n  description: Say done.\n  turns: [Say done.]\n"
                     "  expect: {response_contains: [done]}\n", encoding="utf-8")
    tools.write_text("oops: [\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path), "TOOLTRIAL_TEST_LOCAL_KEY": "sk-test"}
    done = subprocess.run([sys.executable, *entry, "run", str(cases), "-p", "local-openai", "--config",
                           str(config(tmp_path)), "-T", str(tools), "--results", str(tmp_path / "r")],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == f"error: {tools}:2:1: invalid YAML: expected the node content, but found '<stream end>'\n"
    assert not (tmp_path / "r").exists()
