"""Text that UTF-8, JSON, XML or a terminal cannot take as it is, followed to every place tooltrial writes it.

A file name that is not UTF-8 (``touch $'bad\\xff'``: Python holds it as ``'bad\\udcff'``) and a lone
surrogate in a model's tool-call arguments (``"\\ud800"``) once made writing the run record raise
UnicodeEncodeError and lose the suite; control sequences in a reply or a file reached the terminal
raw and made the JUnit file not well-formed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from runner.spec.discover import load_cases
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import ROOT, cli_output, config

pytestmark = pytest.mark.usefixtures("litellm_loaded")  # litellm's log handlers follow run_cli's streams

# Raw: YAML reads "\ud800" as a lone surrogate, and bash gets $'bad\xff'.
TEXT = r"""
- id: names
  setup: ["touch $'bad\\xff'"]
  turns: [List the folder.]
  expect: {response_contains: [listed]}
  script:
    - tool_calls:
        - {name: list_dir, arguments: {}}
        - {name: glob, arguments: {pattern: "bad*"}}
        - {name: bash, arguments: {command: "touch $'new\\xfe'"}}
    - content: listed
- id: surrogate
  turns: [Write out.txt.]
  expect:
    trace: {args: {write_file: {path: out.txt}}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: "x\ud800.txt", content: "a\udcff"}}]
    - content: "done \ud800"
- id: plain
  turns: [Say hi.]
  expect: {response_contains: [hi]}
  script: [{content: hi}]
"""

SURROGATE_CHECK = ('  no write_file call has arguments matching {"path": "out.txt"}: '
                   '#1 {"content": "a\\xff", "path": "x\\ud800.txt"} (path: expected "out.txt", got "x\\ud800.txt")')


def _schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((ROOT / "schemas" / name).read_text()))


def test_names_and_surrogates_reach_every_output_and_read_back(tmp_path: Path) -> None:
    (tmp_path / "text.yml").write_text(TEXT, encoding="utf-8")
    report, junit, record = tmp_path / "report.json", tmp_path / "junit.xml", tmp_path / "rec"
    code, out, err = cli_output(["run", str(tmp_path / "text.yml"), "--results", str(tmp_path / "r"), "--output", "json",
                                 "--report", str(report), "--junit", str(junit), "--record", str(record)])
    assert code == 1, err  # the surrogate case fails its check; nothing is lost
    assert err.splitlines()[:5] == ["PASS text/names", "FAIL text/surrogate", SURROGATE_CHECK, "PASS text/plain", "2/3 passed"]
    (folder,) = (tmp_path / "r").iterdir()
    names, surrogate, plain = (json.loads(p.read_bytes().decode("utf-8")) for p in sorted((folder / "runs").iterdir()))
    for run in (names, surrogate, plain):
        _schema("run.schema.json").validate(run)
    assert [s["result"] for s in names["steps"]] == ["bad\\xff", "bad\\xff", "[exit code 0]"]  # what the model saw
    assert names["changes"]["added"] == ["new\udcfe"]  # the name as os.fsdecode holds it, exactly
    assert surrogate["steps"][0]["arguments"] == {"path": "x\ud800.txt", "content": "a\udcff"}
    assert surrogate["final_reply"] == "done \ud800"
    assert "\\udcfe" in (folder / "runs" / "0001-text-names-scripted-default-r1.json").read_text()  # a JSON escape
    document = json.loads((folder / "report.json").read_bytes().decode("utf-8"))
    _schema("report.schema.json").validate(document)
    assert json.loads(out) == document == json.loads(report.read_text(encoding="utf-8"))
    assert [r["final_reply"] for r in document["runs"]] == ["listed", "done \ud800", "hi"]
    failure = ET.parse(junit).getroot().find(".//testcase[@name='surrogate']/failure")
    assert failure is not None and failure.text == "run 1: FAIL\n" + SURROGATE_CHECK
    # --record wrote YAML that reads back as the same script, and --resume reads the run files back
    (replayed,) = [c for c in load_cases([record / "cases"]) if c.id == "surrogate"]
    assert replayed.script[0]["tool_calls"][0]["arguments"] == {"path": "x\ud800.txt", "content": "a\udcff"}
    code, out, err = cli_output(["run", str(tmp_path / "text.yml"), "--resume", str(folder), "--results", str(tmp_path / "r2")])
    assert code == 1 and out.splitlines()[0] == "resuming: 3 of 3 runs are done already"
    code, out, err = cli_output(["report", str(folder)])
    assert code == 0 and out.splitlines()[2] == SURROGATE_CHECK


def test_what_goes_back_to_the_model_is_utf8(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "names.yml").write_text("- id: names\n  setup: [\"touch $'bad\\\\xff'\"]\n  turns: [List the folder.]\n")
    monkeypatch.setenv("TOOLTRIAL_TEST_LOCAL_KEY", "sk-test")
    with OpenAIServer() as server:
        calls = [("list_dir", {}), ("write_file", '{"path": "x\ud800.txt", "content": "a"}')]  # "\ud800" in the JSON sent
        server.push(openai_reply(tool_calls=calls), openai_reply("done"))
        code, out, err = cli_output(["run", str(tmp_path / "names.yml"), "-p", "local-openai", "--config",
                                     str(config(tmp_path, server.api_base)), "--results", str(tmp_path / "r"), "--output", "json"])
    assert code == 0, err
    listing, written = server.chats[1].body["messages"][-2:]
    assert listing == {"role": "tool", "tool_call_id": "call_0", "name": "list_dir", "content": "bad\\xff"}
    assert written["content"].startswith("Error: ") and "\ud800" not in written["content"]
    (run,) = json.loads(out)["runs"]
    assert run["status"] == "pass" and run["trace"][1]["arguments"] == {"path": "x\ud800.txt", "content": "a"}


ESCAPES = r"""
- id: escapes
  turns: [Write out.txt.]
  expect:
    files: {out.txt: {equals: "hello\n"}}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: "\e]0;pwned\a\e[2J\x00\x01\x08\x1f\x7f\x9b\u202e [bold]b[/bold]"}}]
    - content: done
- id: setup
  setup: ["exit 3 # \e]0;pwned\a\e[2J"]
  turns: [Hi.]
  script: [{content: hi}]
"""

SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x00\\x01\\x08\\x1f\\x7f\\x9b\\u202e [bold]b[/bold]"


def test_control_sequences_are_shown_escaped_and_junit_stays_xml(tmp_path: Path) -> None:
    (tmp_path / "esc.yml").write_text(ESCAPES, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    code, out, err = cli_output(["run", str(tmp_path / "esc.yml"), "--results", str(tmp_path / "r"), "--junit", str(junit)])
    assert code == 1, err
    assert out.splitlines()[:3] == [
        "FAIL esc/escapes",
        f"  out.txt differs from the expected content: -hello | +{SHOWN}",
        "ERROR esc/setup: setup command failed (exit 3): exit 3 # \\x1b]0;pwned\\x07\\x1b[2J",
    ]
    assert "\x1b" not in out + err and "\u202e" not in out
    root = ET.fromstring(junit.read_bytes())  # expat: a control character would make it not well-formed
    failure = root.find(".//testcase[@name='escapes']/failure")
    error = root.find(".//testcase[@name='setup']/error")
    assert failure is not None and failure.text == f"run 1: FAIL\n  out.txt differs from the expected content: -hello | +{SHOWN}"
    assert error is not None and error.get("message") == (
        "0/1 runs passed (needs 100%): setup command failed (exit 3): exit 3 # \\x1b]0;pwned\\x07\\x1b[2J")
