"""``tooltrial rescore``: a run made over HTTP against a loopback OpenAI-compatible server, its case's ``expect``
edited, then scored again through the CLI with the server still listening: the verdicts flip as the new checks
say, and the server gets no request."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from runner.run import savedfiles
from runner.run.savedfiles import SavedFile, restore, saved_files
from tests.fake_servers import OpenAIServer, Reply, openai_reply
from tests.helpers import config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

NOTE = "hello world\n"
CASE = """\
cases:
  - id: note
    turns: [Write the note]
    files: {{seed.txt: "seed\\n"}}
    expect:
{expect}
"""


def _case_file(tmp_path: Path, expect: str, turns: str = "[Write the note]") -> Path:
    path = tmp_path / "cases" / "rs.yml"
    path.parent.mkdir(exist_ok=True)
    text = CASE.format(expect="\n".join(f"      {line}" for line in expect.strip().splitlines()))
    path.write_text(text.replace("[Write the note]", turns), encoding="utf-8")
    return path


def _run(tmp_path: Path, server: OpenAIServer, expect: str, *judged: Reply) -> Path:
    """One run of rs/note through the server: write note.txt, then reply (then the ``judged`` replies); its
    results folder."""
    server.push(openai_reply(None, [("write_file", {"path": "note.txt", "content": NOTE})]),
                openai_reply("done: the note is written"), *judged)
    done = run_cli("run", str(_case_file(tmp_path, expect)), "-p", "local-openai", "--sandbox", "none",
                   "--config", str(config(tmp_path, server.api_base)), "--results", str(tmp_path / "results"))
    assert len(server.chats) == 2 + len(judged), done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    return folder


def _rescore(tmp_path: Path, source: Path, *more: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """``rescore SOURCE CASES -o OUT``: the finished call, the new report and its one run file."""
    out = tmp_path / "out"
    made = set(out.iterdir()) if out.exists() else set()
    done = run_cli("rescore", str(source), str(tmp_path / "cases" / "rs.yml"), "-o", str(out), *more)
    if not out.exists():
        return done, {}, {}
    (folder,) = set(out.iterdir()) - made
    report = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    (run_file,) = (folder / "runs").iterdir()
    return done, report, json.loads(run_file.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("before", "after", "flip"), [
    ("response_contains: [done]", "response_contains: [finished]",
     ("pass", "fail", "response_contains", "pass", "fail", 'response missing "finished"')),
    ("trace: {must_include: [read_file]}", "trace: {must_include: [write_file]}",
     ("fail", "pass", "trace.must_include", "fail", "pass", "called write_file 1 time(s)")),
    ("files: {note.txt: {contains: [goodbye]}}", "files: {note.txt: {contains: [hello]}}",
     ("fail", "pass", "files", "fail", "pass", 'note.txt contains "hello"')),
    ("verify: grep -q hello note.txt", "verify: grep -q goodbye note.txt",
     ("pass", "fail", "verify", "pass", "fail", "verify failed (exit 1): grep -q goodbye note.txt")),
    ("check: {run: grep -q hello note.txt, name: note}", "check: {run: grep -q goodbye note.txt, name: note}",
     ("pass", "fail", "check", "pass", "fail", "check note: failed (exit 1)")),
], ids=["reply", "trace", "file", "verify", "check"])
def test_an_edited_expect_flips_exactly_its_verdict_with_no_request(
        tmp_path: Path, before: str, after: str, flip: tuple[str, ...]) -> None:
    with OpenAIServer() as server:
        source = _run(tmp_path, server, before)
        original = json.loads(next((source / "runs").iterdir()).read_text(encoding="utf-8"))
        assert original["files"] == {"note.txt": {"size": 12, "sha256": _sha(NOTE), "text": NOTE, "base64": None,
                                                  "cut": False}}
        _case_file(tmp_path, after)
        asked = len(server.requests)
        done, report, run = _rescore(tmp_path, source)
        assert len(server.requests) == asked == 2  # rescore sent the provider nothing
    old_status, new_status, check, was, now, message = flip
    assert original["status"] == old_status and run["status"] == new_status
    assert done.returncode == (0 if new_status == "pass" else 1), done.stderr
    assert report["rescored"] == {"source": str(source), "changed": [{
        "case": "rs/note", "arm": "local-openai · default", "run": 1, "before": old_status, "after": new_status,
        "checks": [{"check": check, "before": was, "after": now, "message": message}]}]}
    assert run["steps"] == original["steps"] and run["final_reply"] == "done: the note is written"
    assert f"rs/note [local-openai · default] #1: {old_status} -> {new_status}" in done.stdout
    assert f"    {check}: {was} -> {now}: {message}" in done.stdout


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_case_whose_turns_changed_is_refused_naming_it(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        source = _run(tmp_path, server, "response_contains: [done]")
        _case_file(tmp_path, "response_contains: [done]", turns="[Write another note]")
        done, _, _ = _rescore(tmp_path, source)
        assert len(server.requests) == 2
    assert done.returncode == 4
    assert f"{tmp_path / 'cases' / 'rs.yml'}:2: case rs/note changed since its run in {source}: turns; " \
           "only expect may change" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_file_kept_by_its_hash_only_cannot_be_rescored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(savedfiles, "FILE_LIMIT", 4)
    with OpenAIServer() as server:
        source = _run(tmp_path, server, "files: {note.txt: {contains: [hello]}}")
        done, report, run = _rescore(tmp_path, source)
    assert done.returncode == 4  # the case's data to fix, as a workspace error of a run is
    assert run["status"] == "error" and run["error_kind"] == "workspace"
    assert run["cause"] == "note.txt: cannot be re-scored: the run kept only its hash (over the record's bound: " \
                           "runner.run.savedfiles)"
    assert report["rescored"]["changed"][0]["after"] == "error"


def test_saved_files_keep_text_bytes_and_hashes_and_restore_them(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("é\n", encoding="utf-8")
    (tmp_path / "b.bin").write_bytes(b"\xff\x00")
    (tmp_path / "link").symlink_to("a.txt")
    (tmp_path / os.fsdecode(b"c\xfe")).write_text("x", encoding="utf-8")  # a name JSON keys cannot hold
    kept = saved_files(tmp_path, ["b.bin", "a.txt", "link", "gone", os.fsdecode(b"c\xfe")])
    assert kept == {"a.txt": SavedFile(3, _sha("é\n"), text="é\n"),
                    "b.bin": SavedFile(2, hashlib.sha256(b"\xff\x00").hexdigest(), base64="/wA=")}
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "old.txt").write_text("x", encoding="utf-8")
    unkept = restore(tmp_path / "ws", {"added": ["a.txt", "b.bin", "../out.txt"], "deleted": ["old.txt"]}, kept)
    assert unkept == ["../out.txt"]
    assert (tmp_path / "ws" / "b.bin").read_bytes() == b"\xff\x00"
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["a.txt", "b.bin"]


JUDGED = "judge: {{rubric: The reply says the note is written., model: local-openai, threshold: {threshold}}}"


def test_a_judge_is_kept_unless_asked_again_with_judge(tmp_path: Path) -> None:
    verdict = openai_reply('{"score": 0.9, "reasoning": "it says so"}')
    with OpenAIServer() as server:
        source = _run(tmp_path, server, JUDGED.format(threshold=0.5), verdict)
        _case_file(tmp_path, JUDGED.format(threshold=0.95))
        done, report, run = _rescore(tmp_path, source)
        assert len(server.requests) == 3  # the judge's result kept: no request
        assert report["rescored"]["changed"] == [] and run["status"] == "pass", done.stderr
        assert [c["message"] for c in run["checks"]] == ["judge score 0.90 reached 0.50: it says so"]
        assert run["warnings"][-1] == ("expect.judge changed since the run, and its result is kept as the run's judge "
                                       "gave it; rescore with --judge to ask again")
        server.push(verdict)
        done, report, run = _rescore(tmp_path, source, "--judge", "--config", str(tmp_path / "tooltrial.yml"))
        assert len(server.requests) == 4  # the judge only
        assert "The reply says the note is written." in json.dumps(server.chats[-1].body)
    assert run["status"] == "fail" and done.returncode == 1
    assert report["rescored"]["changed"][0]["checks"] == [
        {"check": "judge", "before": "pass", "after": "fail", "message": "judge score 0.90 is below 0.95: it says so"}]


TURNS = """\
cases:
  - id: note
    turns:
      - {{content: Write the note, expect: {{response_contains: [{first}]}}}}
      - {{content: And then?, expect: {{response_contains: [second]}}}}
"""


def test_per_turn_checks_read_each_turn_reply_from_the_saved_messages(tmp_path: Path) -> None:
    case = tmp_path / "cases" / "rs.yml"
    case.parent.mkdir()
    case.write_text(TURNS.format(first="first"), encoding="utf-8")
    with OpenAIServer() as server:
        server.push(openai_reply(None, [("write_file", {"path": "note.txt", "content": NOTE})]),
                    openai_reply("first turn done"), openai_reply("second turn done"))
        run_cli("run", str(case), "-p", "local-openai", "--config", str(config(tmp_path, server.api_base)),
                "--results", str(tmp_path / "results"))
        (source,) = (tmp_path / "results").iterdir()
        case.write_text(TURNS.format(first="second"), encoding="utf-8")
        done, report, run = _rescore(tmp_path, source)
        assert len(server.requests) == 3
    assert [(c["check"], c["passed"], c["message"]) for c in run["checks"]] == [
        ("turns[0].response_contains", False, 'turn 1: response missing "second"'),
        ("turns[1].response_contains", True, 'turn 2: response contains "second"')]
    assert report["rescored"]["changed"][0]["before"] == "pass" and done.returncode == 1


def test_the_rescored_folder_takes_every_output_and_reads_back(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        source = _run(tmp_path, server, "response_contains: [done]")
        _case_file(tmp_path, "response_contains: [finished]")
        html, junit, summary = tmp_path / "r.html", tmp_path / "j.xml", tmp_path / "s.md"
        done, report, _ = _rescore(tmp_path, source, "--html", str(html), "--junit", str(junit),
                                   "--summary-md", str(summary), "--output", "json")
        assert len(server.requests) == 2
    assert done.returncode == 1 and json.loads(done.stdout)["rescored"] == report["rescored"]
    assert "finished" in html.read_text(encoding="utf-8")  # the failed check's needle, in the page's data
    assert '<testcase classname="rs" name="note"' in junit.read_text(encoding="utf-8")
    assert "0/1" in summary.read_text(encoding="utf-8")
    (folder,) = (tmp_path / "out").iterdir()
    shown = run_cli("report", str(folder), "--output", "json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["rescored"]["source"] == str(source)


def test_a_run_without_provenance_is_refused(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        source = _run(tmp_path, server, "response_contains: [done]")
    (path,) = (source / "runs").iterdir()
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, "provenance": None}), encoding="utf-8")
    done, _, _ = _rescore(tmp_path, source)
    assert done.returncode == 4
    assert f"{tmp_path / 'cases' / 'rs.yml'}:2: case rs/note: its run in {source} kept no fingerprints" in done.stderr


SCRIPTED = """\
- id: one
  turns: [Write the note]
  expect: {EXPECT}
  script:
    - tool_calls: [{name: write_file, arguments: {path: note.txt, content: hello}}]
    - content: written
- id: two
  turns: [Say hi]
  expect: {response_contains: [hi]}
  script: [{content: hi}]
"""


def _scripted(tmp_path: Path) -> Path:
    """Two scripted cases (group ``g``) run twice each: their results folder."""
    (tmp_path / "g.yml").write_text(SCRIPTED.replace("{EXPECT}", "{response_contains: [written]}"), encoding="utf-8")
    done = run_cli("run", str(tmp_path / "g.yml"), "--runs", "2", "--sandbox", "none", "--results",
                   str(tmp_path / "results"), "-q")
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "results").iterdir()
    return folder


def test_a_selection_that_matches_no_run_is_refused_before_writing(tmp_path: Path) -> None:
    source = _scripted(tmp_path)
    (tmp_path / "other.yml").write_text("- {id: x, turns: [Hi], script: [{content: hi}]}\n", encoding="utf-8")
    done = run_cli("rescore", str(source), str(tmp_path / "other.yml"), "-o", str(tmp_path / "out"))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr == (f"error: none of the 4 runs in {source} is of a selected case (1 case selected, none of "
                           "them ran there) (give the case files the runs were made from: the runs are of g/one, "
                           "g/two)\n")
    assert not (tmp_path / "out").exists()


def test_a_run_whose_checks_changed_but_not_its_status_reads_still_pass(tmp_path: Path) -> None:
    source = _scripted(tmp_path)
    (tmp_path / "g.yml").write_text(
        SCRIPTED.replace("{EXPECT}", "{response_contains: [written], verify: test -f note.txt}"), encoding="utf-8")
    done = run_cli("rescore", str(source), str(tmp_path / "g.yml"), "-o", str(tmp_path / "out"), "-q")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index(f"rescored 4 of 4 runs from {source}: 2 runs whose checks changed, 0 whose status changed")
    assert lines[start + 1:] == [
        "  g/one [scripted · default] #1: still pass", "    verify: none -> pass: verify passed: test -f note.txt",
        "  g/one [scripted · default] #2: still pass", "    verify: none -> pass: verify passed: test -f note.txt"]
