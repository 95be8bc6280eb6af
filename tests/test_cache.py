"""The response cache (``run --cache DIR``, ``tooltrial cache info|clear DIR``) through the CLI, against the
loopback OpenAI fake, counting the requests that reached it."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runner.errors import ExitCode
from runner.providers.base import Completion, ToolCall, Usage
from runner.providers.cache import WORKSPACE, request_key
from runner.providers.cacheentry import decode, encode, quoted
from tests.fake_servers import OpenAIServer, Received, Reply, error_reply, openai_reply
from tests.fake_wire import openai_stream
from tests.helpers import run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

CASES = """\
- id: read
  files: {a.txt: "hello there\\n"}
  tools: [read_file]
  turns: [Read a.txt and say what it holds.]
  expect: {response_contains: [hello]}
- id: say
  tools: [read_file]
  turns: [Say hi.]
  expect: {response_contains: [hi]}
"""
CONFIG = """\
providers:
  fake:
    model: {model}
    api_base: {base}
    temperature: {temperature}
    timeout: 10
    retries: {{attempts: 2, backoff: 0.01, max_backoff: 0.02}}
"""
SCRIPTED = "- id: say\n  turns: [Say hi.]\n  script: [{content: hi}]\n"
# What varies between two passes of one request, or is the cache's own
VARIES = {"latency", "duration", "started", "attempts", "cache", "requests", "run_id", "results", "finished"}


def answer(received: Received) -> Reply:
    """The fake model: a read_file call for the case that asks for one, then a reply; ``hi`` otherwise."""
    messages = received.body["messages"]
    if messages[1]["content"].startswith("Read") and len(messages) == 2:
        return openai_reply(tool_calls=[("read_file", {"path": "a.txt"})], usage=(20, 5))
    return openai_reply("It says hello." if messages[1]["content"].startswith("Read") else "hi", usage=(10, 5))


def suite(tmp_path: Path, model: str = "openai/fake", temperature: float = 0, cases: str = CASES,
          base: str = "http://127.0.0.1:9/v1") -> tuple[Path, Path]:
    (tmp_path / "cases.yml").write_text(cases, encoding="utf-8")
    (tmp_path / "tooltrial.yml").write_text(CONFIG.format(model=model, base=base, temperature=temperature),
                                            encoding="utf-8")
    return tmp_path / "cases.yml", tmp_path / "tooltrial.yml"


def run(tmp_path: Path, server: OpenAIServer, name: str, *more: str, **changes: Any) -> tuple[Any, dict[str, Any], int]:
    """One ``tooltrial run --cache tmp_path/cache`` pass: (the CLI's result, its JSON report, requests the server got)."""
    before = len(server.chats)
    cases, config = suite(tmp_path, base=server.api_base, **changes)
    done = run_cli("run", str(cases), "-p", "fake", "--config", str(config), "--cache", str(tmp_path / "cache"),
                   "--output", "json", "--results", str(tmp_path / name), "-j", "1", *more)
    return done, json.loads(done.stdout), len(server.chats) - before


def steady(value: Any) -> Any:
    """``value`` less what differs between a request sent and its reply replayed."""
    if isinstance(value, dict):
        return {k: steady(v) for k, v in value.items() if k not in VARIES}
    if isinstance(value, list):
        return [steady(v) for v in value]
    return value


def test_a_second_pass_replays_every_reply_and_sends_nothing(tmp_path: Path) -> None:
    with OpenAIServer(responder=answer) as server:
        first, report1, sent1 = run(tmp_path, server, "one")
        second, report2, sent2 = run(tmp_path, server, "two")
    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    assert (sent1, sent2) == (3, 0)
    runs1, runs2 = report1["runs"], report2["runs"]
    assert [r["cache"] for r in runs1] == [{"hits": 0, "misses": 2, "tokens": None, "cost": None},
                                           {"hits": 0, "misses": 1, "tokens": None, "cost": None}]
    assert [r["cache"] for r in runs2] == [{"hits": 2, "misses": 0, "tokens": 40, "cost": None},
                                           {"hits": 1, "misses": 0, "tokens": 15, "cost": None}]
    assert [[m["cache"] for m in r["model_requests"]] for r in runs2] == [["hit", "hit"], ["hit"]]
    assert [r["requests"] for r in runs1] == [2, 1] and [r["requests"] for r in runs2] == [0, 0]
    assert all(m["attempts"] == [] for r in runs2 for m in r["model_requests"])
    assert [r["tokens"]["total"] for r in runs2] == [40, 15]  # what the conversation cost, as first made
    assert steady(runs1) == steady(runs2)
    assert report2["cache"] == {"hits": 3, "misses": 0, "tokens": 55, "cost": None}
    assert f"response cache {tmp_path / 'cache'}: 3 hits (55 tokens not spent again), 0 misses" in second.stderr


def test_a_resume_without_the_cache_names_the_runs_it_reused_not_a_folder(tmp_path: Path) -> None:
    with OpenAIServer(responder=answer) as server:
        first, _, _ = run(tmp_path, server, "one")
        (folder,) = (tmp_path / "one").iterdir()
        cases, config = suite(tmp_path, base=server.api_base)
        again = run_cli("run", str(cases), "-p", "fake", "--config", str(config), "--resume", str(folder),
                        "--results", str(tmp_path / "two"))
    assert (first.returncode, again.returncode) == (0, 0), again.stderr
    assert "response cache (of the runs --resume reused): 0 hits, 3 misses" in again.stderr
    assert "response cache None" not in again.stderr


TRACED = """\
- id: read
  files: {a.txt: "hello there\\n"}
  tools: [read_file]
  turns: [Read a.txt and say what it holds.]
  expect: {response_contains: [hello], trace: {must_include: [read_file], minimal_calls: 1}}
  script:
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - content: It says hello.
"""


def test_a_fully_cached_run_scores_process_as_the_live_and_scripted_runs_do(tmp_path: Path) -> None:
    cases, _ = suite(tmp_path, cases=TRACED)
    scripted = run_cli("run", str(cases), "-p", "scripted", "--output", "json", "--results", str(tmp_path / "s"))
    with OpenAIServer(responder=answer) as server:
        _, live, sent1 = run(tmp_path, server, "one", cases=TRACED)
        _, cached, sent2 = run(tmp_path, server, "two", cases=TRACED)
    (by_script,), (sent,), (replayed,) = json.loads(scripted.stdout)["runs"], live["runs"], cached["runs"]
    assert (sent1, sent2, sent["requests"], replayed["requests"]) == (2, 0, 2, 0)
    assert [r["process"] for r in (by_script, sent, replayed)] == [1.0, 1.0, 1.0]
    assert [r["status"] for r in (by_script, sent, replayed)] == ["pass", "pass", "pass"]


def test_each_of_three_runs_is_its_own_draw_and_replays_as_itself(tmp_path: Path) -> None:
    draws = iter(range(1, 100))
    with OpenAIServer(responder=lambda received: openai_reply(f"hi, draw {next(draws)}")) as server:
        _, first, sent1 = run(tmp_path, server, "one", "-c", "*/say", "--runs", "3", "-j", "3")  # at once: threads share it
        bodies = [{**r.body, "messages": r.body["messages"][1:]} for r in server.chats]  # the system prompt names the workspace
        _, second, sent2 = run(tmp_path, server, "two", "-c", "*/say", "--runs", "3", "-j", "3")
    assert (sent1, sent2) == (3, 0)
    assert bodies[0] == bodies[1] == bodies[2]  # the same request (but for the folder), sent once per run
    drawn = {r["run"]: r["final_reply"] for r in first["runs"]}
    assert sorted(drawn.values()) == ["hi, draw 1", "hi, draw 2", "hi, draw 3"]
    assert {r["run"]: r["final_reply"] for r in second["runs"]} == drawn  # each run replays its own draw


def test_a_server_error_is_not_kept_and_the_next_pass_asks_again(tmp_path: Path) -> None:
    with OpenAIServer(responder=answer) as server:
        server.push(error_reply(500, "boom"), error_reply(500, "boom"))
        _, first, sent1 = run(tmp_path, server, "one", "-c", "*/say")
        _, second, sent2 = run(tmp_path, server, "two", "-c", "*/say")
        _, third, sent3 = run(tmp_path, server, "three", "-c", "*/say")
    (failed,), (answered,), (replayed,) = first["runs"], second["runs"], third["runs"]
    assert (failed["status"], failed["error_kind"], failed["requests"]) == ("error", "server_error", 2)
    assert failed["cache"] == {"hits": 0, "misses": 1, "tokens": None, "cost": None}
    assert failed["model_requests"][-1]["cache"] == "miss"
    assert (sent1, sent2, sent3) == (2, 1, 0)
    assert (answered["status"], answered["cache"]["misses"], replayed["cache"]["hits"]) == ("pass", 1, 1)


def test_a_request_asked_again_after_an_empty_reply_is_a_draw_of_its_own(tmp_path: Path) -> None:
    with OpenAIServer(responder=answer) as server:
        server.push(openai_reply("", usage=(10, 0)))  # empty: the loop asks again, the history unchanged
        _, first, sent1 = run(tmp_path, server, "one", "-c", "*/say")
        _, second, sent2 = run(tmp_path, server, "two", "-c", "*/say")
    assert (sent1, sent2) == (2, 0)
    assert server.chats[0].body == server.chats[1].body
    (asked,), (replayed,) = first["runs"], second["runs"]
    assert [(m["outcome"], m["cache"]) for m in asked["model_requests"]] == [("empty", "miss"), ("reply", "miss")]
    assert [(m["outcome"], m["cache"]) for m in replayed["model_requests"]] == [("empty", "hit"), ("reply", "hit")]
    assert (asked["status"], replayed["status"], replayed["final_reply"]) == ("pass", "pass", "hi")


@pytest.mark.parametrize("change", [
    {"cases": CASES.replace("Say hi.", "Say hi now.")},  # the messages
    {"cases": CASES.replace("tools: [read_file]\n  turns: [Say", "tools: [read_file, list_dir]\n  turns: [Say")},
    {"temperature": 0.5},
    {"model": "openai/other"},
])
def test_a_change_in_what_chose_the_reply_is_a_miss(tmp_path: Path, change: dict[str, Any]) -> None:
    with OpenAIServer(responder=answer) as server:
        _, _, sent1 = run(tmp_path, server, "one", "-c", "*/say")
        _, changed, sent2 = run(tmp_path, server, "two", "-c", "*/say", **change)
        _, again, sent3 = run(tmp_path, server, "three", "-c", "*/say", **change)
    assert (sent1, sent2, sent3) == (1, 1, 0)
    assert changed["runs"][0]["model_requests"][0]["cache"] == "miss"
    assert again["runs"][0]["model_requests"][0]["cache"] == "hit"


def test_cache_info_and_clear_empty_it(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with OpenAIServer(responder=answer) as server:
        run(tmp_path, server, "one")
        info = run_cli("cache", "info", str(folder))
        cleared = run_cli("cache", "clear", str(folder))
        empty = run_cli("cache", "info", str(folder))
        _, _, sent = run(tmp_path, server, "two")
    assert (info.returncode, cleared.returncode) == (0, 0)
    assert info.stdout.startswith(f"{folder}: 3 replies, ") and info.stdout.endswith(" KiB\n")
    assert cleared.stdout == f"removed 3 replies from {folder}\n"
    assert empty.stdout.startswith(f"{folder}: 0 replies, ")
    assert sent == 3  # nothing left to replay


def test_cache_commands_refuse_a_folder_that_holds_no_cache(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine\n")
    missing = run_cli("cache", "clear", str(tmp_path / "nothing"))
    assert (missing.returncode, missing.stdout) == (ExitCode.USAGE, "")
    assert missing.stderr == f"error: response cache {tmp_path / 'nothing'}: no cache there (run --cache DIR makes one)\n"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "cache.db").write_text("not SQLite\n")
    broken = run_cli("cache", "info", str(tmp_path / "broken"))
    assert (broken.returncode, broken.stderr) == (ExitCode.USAGE, (
        f"error: response cache {tmp_path / 'broken'}: cache.db is not a cache database "
        "(file is not a database) (delete the folder, or give another)\n"))
    a_file = run_cli("cache", "clear", str(tmp_path / "broken" / "cache.db"))
    assert a_file.stderr == (f"error: response cache {tmp_path / 'broken' / 'cache.db'}: it is a file, not a folder "
                             "(give the cache's folder: run --cache DIR makes it)\n")
    cases, _ = suite(tmp_path, cases=SCRIPTED)
    other = run_cli("run", str(cases), "-p", "scripted", "--cache", str(tmp_path / "notes"),
                    "--results", str(tmp_path / "r"))
    assert other.returncode == ExitCode.USAGE
    assert f"error: response cache {tmp_path / 'notes'}: the folder holds other files and no cache" in other.stderr
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine\n" and not (tmp_path / "notes" / "cache.db").exists()


def test_a_corrupt_entry_is_a_miss_with_a_warning_and_is_replaced(tmp_path: Path) -> None:
    with OpenAIServer(responder=answer) as server:
        run(tmp_path, server, "one", "-c", "*/say")
        with closing(sqlite3.connect(tmp_path / "cache" / "cache.db")) as raw, raw:
            (key,) = [k for (k,) in raw.execute("SELECT key FROM replies")]
            raw.execute("UPDATE replies SET reply = ?", ('{"format": 2, "content": ',))
        done, second, sent2 = run(tmp_path, server, "two", "-c", "*/say")
        _, third, sent3 = run(tmp_path, server, "three", "-c", "*/say")
    (record,) = second["runs"]
    assert (done.returncode, record["status"], sent2, sent3) == (0, "pass", 1, 0)
    assert record["warnings"] == [(f"response cache {tmp_path / 'cache'}: entry {key[:12]} is corrupt (not JSON "
                                   "text, from line 1 column 26); asked the model instead")]
    assert third["runs"][0]["cache"]["hits"] == 1


def test_a_streamed_reply_replays_with_the_ttft_it_was_first_sent_with(tmp_path: Path) -> None:
    def answer(received: Received) -> Reply:
        reply = openai_reply("hi", usage=(10, 5))
        return openai_stream(reply) if received.body.get("stream") else reply

    with OpenAIServer(responder=answer) as server:
        _, first, _ = run(tmp_path, server, "one", "-c", "*/say", "--stream")
        _, second, sent2 = run(tmp_path, server, "two", "-c", "*/say", "--stream")
        _, plain, sent3 = run(tmp_path, server, "three", "-c", "*/say")  # not streamed: another request
    (sent,), (replayed,) = first["runs"][0]["model_requests"], second["runs"][0]["model_requests"]
    assert (sent["cache"], sent["streamed"], replayed["cache"], replayed["streamed"]) == ("miss", True, "hit", True)
    assert sent["ttft"] is not None and replayed["ttft"] == sent["ttft"]
    assert (sent2, sent3) == (0, 1) and plain["runs"][0]["model_requests"][0]["cache"] == "miss"


def test_the_scripted_provider_is_never_cached(tmp_path: Path) -> None:
    cases, _ = suite(tmp_path, cases=SCRIPTED)
    done = run_cli("run", str(cases), "-p", "scripted", "--cache", str(tmp_path / "cache"), "--output", "json",
                   "--results", str(tmp_path / "r"))
    (record,) = json.loads(done.stdout)["runs"]
    assert (done.returncode, record["cache"], record["model_requests"][0]["cache"]) == (0, None, None)
    assert "cache" not in json.loads(done.stdout)
    assert run_cli("cache", "info", str(tmp_path / "cache")).stdout.startswith(f"{tmp_path / 'cache'}: 0 replies")


texts = st.text(max_size=40)


@given(content=texts, argument=texts, workspace=st.sampled_from(["/tmp/tooltrial-abc", '/tmp/odd "q\\ w']),
       elsewhere=st.sampled_from(["/tmp/tooltrial-xyz", "/var/tmp/w"]))
def test_a_reply_kept_in_one_workspace_reads_back_in_another(content: str, argument: str, workspace: str,
                                                             elsewhere: str) -> None:
    call = ToolCall("call_1", "read_file", {"path": f"{workspace}/{argument}"}, raw_arguments=None)
    kept = Completion(f"{content} in {workspace}", (call,), "tool_calls", Usage(3, 4, 7), latency=1.5,
                      message={"role": "assistant", "content": content}, ttft=0.2, streamed=True, cache="miss")
    placeholder = WORKSPACE.encode()
    moved = decode(encode(kept).replace(quoted(workspace), placeholder).replace(placeholder, quoted(elsewhere)))
    assert moved.content == f"{content} in {workspace}".replace(workspace, elsewhere)
    assert moved.tool_calls[0].arguments == {"path": f"{elsewhere}/{argument}".replace(workspace, elsewhere)}
    assert (moved.usage, moved.ttft, moved.streamed, moved.latency, moved.cache) == (Usage(3, 4, 7), 0.2, True, 0.0, None)
    messages = [{"role": "system", "content": f"You work in {workspace}."}, {"role": "user", "content": content}]
    there = [{"role": "system", "content": f"You work in {elsewhere}."}, {"role": "user", "content": content}]
    identity = {"provider": "fake", "model": "openai/fake"}
    assert request_key(identity, messages, [], 1, workspace) == request_key(identity, there, [], 1, elsewhere)
    assert request_key(identity, messages, [], 1, workspace) != request_key(identity, messages, [], 2, workspace)


def test_an_open_cache_pickles_as_its_folder_for_worker_processes(tmp_path: Path) -> None:
    import pickle

    from runner.providers.cache import open_cache

    cache = open_cache(tmp_path / "cache", create=True)
    reply = Completion("hi", usage=Usage(1, 2, 3))
    cache.store("k" * 64, reply, "/w")
    again = pickle.loads(pickle.dumps(cache))
    assert again.lookup("k" * 64, "/elsewhere") == (reply, None)
    assert again.info().entries == 1


def test_the_kept_shape_names_every_field_of_a_reply() -> None:
    from runner.providers.cacheentry import CALL, REPLY, USAGE

    def fields(kind: type) -> set[str]:
        return {f.name for f in dataclasses.fields(kind)}

    assert set(REPLY) == fields(Completion) - {"latency", "attempts", "cache"} | {"format"}  # these are one request's
    assert (set(USAGE), set(CALL)) == (fields(Usage), fields(ToolCall))


def test_past_its_limit_the_file_drops_the_oldest_replies(tmp_path: Path) -> None:
    from runner.providers.cachefile import CacheFile

    file = CacheFile.open(tmp_path, create=True, limit=256 * 1024)
    for number in range(400):
        file.put(f"{number:064x}", "x" * 2000)
    assert 40 < file.count() < 70  # 256 KiB of 4 KiB pages, one reply each
    assert file.get(f"{399:064x}") == ("text", b"x" * 2000) and file.get(f"{0:064x}") is None
    file.close()


def keep_replies(folder: Path, first: int) -> None:
    """Store replies ``first`` to ``first + 39`` in the cache in ``folder`` (run in another process or thread)."""
    from runner.providers.cache import open_cache

    cache = open_cache(folder, create=False)
    for number in range(first, first + 40):
        assert cache.store(f"{number:064x}", Completion(f"reply {number}"), "/w") is None
    cache.close()


def test_processes_and_threads_share_one_folder(tmp_path: Path) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

    from runner.providers.cache import open_cache

    folder = tmp_path / "cache"
    open_cache(folder, create=True).close()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as processes, \
            ThreadPoolExecutor(2) as threads:
        done = [*processes.map(keep_replies, [folder] * 2, [0, 40]), *threads.map(keep_replies, [folder] * 2, [80, 120])]
    cache = open_cache(folder, create=False)
    assert len(done) == 4 and cache.info().entries == 160
    assert [cache.lookup(f"{n:064x}", "/v")[0].content for n in range(160)] == [f"reply {n}" for n in range(160)]
    cache.close()


HONEST = {"format": 2, "content": "hi", "finish_reason": "stop", "message": None, "reasoning": None, "ttft": None,
          "streamed": False, "native_finish_reason": None, "usage": None, "tool_calls": []}
USED = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2, "cost": None, "reasoning_tokens": None,
        "cached_tokens": None, "cache_write_tokens": None}
CALLED = {"id": "c", "name": "bash", "arguments": {"command": "ls"}, "error": None, "raw_arguments": None,
          "repaired": None}


@pytest.mark.parametrize("entry, why", [
    ({"format": 2, "content": "hi"}, "no field finish_reason"),
    ({**HONEST, "format": 1}, "not a kept reply of format 2"),
    (["format", 2], "not a kept reply of format 2"),
    ({**HONEST, "format": 2.0}, "format is not 2"),
    ({**HONEST, "extra": 1}, "the entry has a field format 2 does not"),
    ({**HONEST, "usage": {**USED, "prompt_tokens": "many"}}, "usage.prompt_tokens is not a whole number, 0 or more or null"),
    ({**HONEST, "usage": {**USED, "prompt_tokens": True}}, "usage.prompt_tokens is not a whole number, 0 or more or null"),
    ({**HONEST, "usage": {**USED, "cost": -1}}, "usage.cost is not a number, 0 or more or null"),
    ({**HONEST, "usage": {**USED, "extra": 1}}, "usage has a field format 2 does not"),
    ({**HONEST, "usage": [1]}, "usage is not an object"),
    ({**HONEST, "message": {"role": "user", "content": "hi"}}, "message is not an assistant message or null"),
    ({**HONEST, "tool_calls": CALLED}, "tool_calls is not a list"),
    ({**HONEST, "tool_calls": ["bash"]}, "tool_calls[0] is not an object"),
    ({**HONEST, "tool_calls": [{**CALLED, "arguments": "rm -rf /"}]}, "tool_calls[0].arguments is not an object or null"),
    ({**HONEST, "tool_calls": [{**CALLED, "id": None}]}, "tool_calls[0].id is not text"),
    ({**HONEST, "streamed": 1}, "streamed is not true or false"),
    ({**HONEST, "ttft": "soon"}, "ttft is not a number, 0 or more or null"),
])
def test_an_entry_of_the_wrong_shape_does_not_read_back(entry: Any, why: str) -> None:
    assert decode(json.dumps({**HONEST, "usage": USED, "tool_calls": [CALLED]}).encode()).tool_calls[0].name == "bash"
    with pytest.raises(ValueError) as refused:
        decode(json.dumps(entry).encode())
    assert str(refused.value) == why
