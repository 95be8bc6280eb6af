"""A response cache folder from someone else is data: nothing in it runs code in tooltrial's process,
reads or deletes a file outside it, or stops a run. Each attack rewrites a folder an honest pass made
(against the loopback OpenAI fake), then runs again: the canary a crafted pickle's ``os.system``
would create must not exist, the run must pass live, and the output must say why, exactly."""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from runner.errors import ExitCode
from runner.providers.base import Completion
from runner.providers.cache import open_cache
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

CASES = "- id: say\n  tools: [read_file]\n  turns: [Say hi.]\n  expect: {response_contains: [hi]}\n"
CONFIG = "providers:\n  fake: {{model: openai/fake, api_base: {base}, timeout: 10, retries: {{attempts: 1}}}}\n"
# diskcache's table, as the earlier cache format made it: a row's ``mode`` 4 is a pickle, ``filename``
# a file under the folder (or, crafted, anywhere) that holds the value
DISKCACHE = ("CREATE TABLE Cache (rowid INTEGER PRIMARY KEY, key BLOB, raw INTEGER, store_time REAL, "
             "expire_time REAL, access_time REAL, access_count INTEGER DEFAULT 0, tag BLOB, size INTEGER DEFAULT 0, "
             "mode INTEGER DEFAULT 0, filename TEXT, value BLOB)")
STRICT = "CREATE TABLE replies (key TEXT PRIMARY KEY NOT NULL, reply TEXT NOT NULL) STRICT"  # as tooltrial makes it
OLDER = "cache.db is an older tooltrial's cache, which this one does not read"
NOT_READ = "; asked the model instead, keeping nothing (delete the folder to start a new cache)"


class Boom:
    """Unpickling runs ``touch CANARY``: the command a crafted cache row carries."""

    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return os.system, (f"touch {self.canary}",)


def honest_pass(tmp_path: Path, server: OpenAIServer) -> list[str]:
    """Run the case once with ``--cache tmp_path/cache``; the keys it kept (this tooltrial's table, or the
    earlier format's, so that each attack also runs against a tooltrial that wrote that one)."""
    done, _ = again(tmp_path, server, "honest")
    assert done.returncode == 0, done.stderr
    with closing(sqlite3.connect(tmp_path / "cache" / "cache.db")) as db:
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        return [bytes(k).decode() if isinstance(k, bytes) else k
                for (k,) in db.execute(f"SELECT key FROM {'replies' if 'replies' in tables else 'Cache'}")]


def again(tmp_path: Path, server: OpenAIServer, name: str) -> tuple[Any, dict[str, Any]]:
    """One more pass with ``--cache tmp_path/cache``: the CLI's result and its one run's record."""
    (tmp_path / "cases.yml").write_text(CASES, encoding="utf-8")
    (tmp_path / "tooltrial.yml").write_text(CONFIG.format(base=server.api_base), encoding="utf-8")
    done = run_cli("run", str(tmp_path / "cases.yml"), "-p", "fake", "--config", str(tmp_path / "tooltrial.yml"),
                   "--cache", str(tmp_path / "cache"), "--output", "json", "--results", str(tmp_path / name))
    (record,) = json.loads(done.stdout)["runs"] if done.stdout else [{}]
    return done, record


def replace_index(folder: Path, schema: str, rows: list[tuple[Any, ...]], insert: str) -> None:
    """Put a crafted ``cache.db`` in ``folder`` in place of the one there."""
    for name in ("cache.db", "cache.db-wal", "cache.db-shm"):
        (folder / name).unlink(missing_ok=True)
    with closing(sqlite3.connect(folder / "cache.db")) as db, db:
        db.execute(schema)
        db.executemany(insert, rows)


def earlier_format(folder: Path, rows: list[tuple[Any, ...]]) -> None:
    """A diskcache ``cache.db`` in ``folder`` holding ``rows`` of (key, raw, mode, filename, value)."""
    replace_index(folder, DISKCACHE, rows, "INSERT INTO Cache (key, raw, store_time, access_time, mode, filename, "
                                           "value) VALUES (?, ?, 0, 0, ?, ?, ?)")


def past_strict(index: Path, statement: str, *values: Any) -> None:
    """Run ``statement`` on ``index`` as an attacker can: with the table's ``STRICT`` (which refuses a
    value of another type) taken out of its schema meanwhile, then put back."""
    for sql, run in ((STRICT.removesuffix(" STRICT"), None), (STRICT, statement)):
        with closing(sqlite3.connect(index, isolation_level=None)) as db:
            if run:
                db.execute(run, values)
            db.execute("PRAGMA writable_schema = ON")
            db.execute("UPDATE sqlite_schema SET sql = ? WHERE name = 'replies'", (sql,))


def assert_ran_live(done: Any, record: dict[str, Any], folder: Path, said: str) -> None:
    """The run passed on a reply the model sent, warning ``response cache FOLDER: SAID`` once, and
    nothing else broke."""
    warning = f"response cache {folder}: {said}"
    assert (done.returncode, record["status"], record["requests"], record["cache"]["hits"]) == (0, "pass", 1, 0)
    assert record["warnings"] == [warning]
    assert done.stderr.startswith(f"PASS cases/say\n  warning: {warning}\n1/1 passed\n")
    assert done.stderr.endswith(f"response cache {folder}: 0 hits, 1 misses\n")


@pytest.mark.parametrize("where", ["row", "file"])
def test_a_pickle_in_an_earlier_format_cache_runs_nothing(tmp_path: Path, where: str) -> None:
    canary, folder = tmp_path / "CANARY", tmp_path / "cache"
    crafted = pickle.dumps(Boom(canary))
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        keys = honest_pass(tmp_path, server)
        if where == "file":
            (folder / "ab" / "cd").mkdir(parents=True)
            (folder / "ab" / "cd" / "0123.val").write_bytes(crafted)
        earlier_format(folder, [(k, 1, 4, "ab/cd/0123.val" if where == "file" else None,
                                 None if where == "file" else crafted) for k in keys])
        done, record = again(tmp_path, server, "attacked")
        info = run_cli("cache", "info", str(folder))
        clear = run_cli("cache", "clear", str(folder))
    assert not canary.exists()
    assert_ran_live(done, record, folder, f"{OLDER}{NOT_READ}")
    refused = f"error: response cache {folder}: {OLDER} (delete the folder, or give another)\n"
    assert (info.returncode, info.stdout, info.stderr) == (ExitCode.USAGE, "", refused)
    assert (clear.returncode, clear.stdout, clear.stderr) == (ExitCode.USAGE, "", refused)


def test_a_pickled_key_in_an_earlier_format_cache_runs_nothing(tmp_path: Path) -> None:
    canary, folder = tmp_path / "CANARY", tmp_path / "cache"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        honest_pass(tmp_path, server)
        earlier_format(folder, [(pickle.dumps(Boom(canary)), 0, 1, None, "{}")])
        done, record = again(tmp_path, server, "attacked")
        for action in ("info", "clear"):
            assert run_cli("cache", action, str(folder)).returncode == ExitCode.USAGE
    assert not canary.exists()
    assert_ran_live(done, record, folder, f"{OLDER}{NOT_READ}")


def test_a_row_naming_a_file_outside_the_folder_neither_reads_nor_deletes_it(tmp_path: Path) -> None:
    victim, folder = tmp_path / "victim.txt", tmp_path / "cache"
    victim.write_text("precious\n")
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        keys = honest_pass(tmp_path, server)
        earlier_format(folder, [(k, 1, 2, str(victim), None) for k in keys])  # mode 2: the value is that file
        done, record = again(tmp_path, server, "attacked")  # the fresh reply would replace the row, and its file
        clear = run_cli("cache", "clear", str(folder))  # clearing removes every row's file
    assert victim.exists() and victim.read_text() == "precious\n"
    assert_ran_live(done, record, folder, f"{OLDER}{NOT_READ}")
    assert clear.returncode == ExitCode.USAGE


@pytest.mark.parametrize("protocol, kind", [(pickle.HIGHEST_PROTOCOL, "blob"), (0, "text")])
def test_a_pickle_in_a_reply_row_is_a_corrupt_entry_and_is_replaced(tmp_path: Path, protocol: int, kind: str) -> None:
    canary, folder = tmp_path / "CANARY", tmp_path / "cache"
    crafted = pickle.dumps(Boom(canary), protocol=protocol)
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        (key,) = honest_pass(tmp_path, server)
        past_strict(folder / "cache.db", "UPDATE replies SET reply = ?", crafted.decode() if kind == "text" else crafted)
        done, record = again(tmp_path, server, "attacked")
        _, replayed = again(tmp_path, server, "replayed")
    assert not canary.exists()
    why = "stored as blob, not as JSON text" if kind == "blob" else "not JSON text, from line 1 column 1"
    assert_ran_live(done, record, folder, f"entry {key[:12]} is corrupt ({why}); asked the model instead")
    assert (replayed["cache"]["hits"], replayed["requests"], replayed["warnings"]) == (1, 0, [])


def test_a_row_keyed_by_a_pickle_is_never_decoded(tmp_path: Path) -> None:
    canary, folder = tmp_path / "CANARY", tmp_path / "cache"
    crafted = pickle.dumps(Boom(canary), protocol=0).decode()
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        honest_pass(tmp_path, server)
        with closing(sqlite3.connect(folder / "cache.db")) as db, db:
            db.execute("INSERT INTO replies (key, reply) VALUES (?, ?)", (crafted, crafted))
        _, record = again(tmp_path, server, "replayed")
        info = run_cli("cache", "info", str(folder))
        clear = run_cli("cache", "clear", str(folder))
    assert not canary.exists()
    assert (record["cache"]["hits"], record["warnings"]) == (1, [])
    assert info.stdout.startswith(f"{folder}: 2 replies, ") and clear.stdout == f"removed 2 replies from {folder}\n"


def test_an_entry_of_the_wrong_shape_is_a_miss_through_the_cli(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        (key,) = honest_pass(tmp_path, server)
        with closing(sqlite3.connect(folder / "cache.db")) as db, db:
            kept = json.loads(db.execute("SELECT reply FROM replies").fetchone()[0])
            kept["usage"]["total_tokens"] = "lots"
            db.execute("UPDATE replies SET reply = ?", (json.dumps(kept),))
        done, record = again(tmp_path, server, "attacked")
    assert_ran_live(done, record, folder, f"entry {key[:12]} is corrupt (usage.total_tokens is not a whole number, "
                                          "0 or more or null); asked the model instead")


@pytest.mark.parametrize("size", [100, 4096, 6000])  # the header only; the first page; part of the second
def test_a_truncated_cache_db_is_not_read_and_the_run_goes_on_live(tmp_path: Path, size: int) -> None:
    folder = tmp_path / "cache"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        honest_pass(tmp_path, server)
        with (folder / "cache.db").open("r+b") as index:
            index.truncate(size)
        done, record = again(tmp_path, server, "attacked")
        info = run_cli("cache", "info", str(folder))
    malformed = "cache.db is not a cache database (database disk image is malformed)"
    assert_ran_live(done, record, folder, f"{malformed}{NOT_READ}")
    assert (info.returncode, info.stderr) == (ExitCode.USAGE, (f"error: response cache {folder}: {malformed} "
                                                               "(delete the folder, or give another)\n"))
    assert (folder / "cache.db").stat().st_size == size  # nothing written to it


@pytest.mark.parametrize("content, why", [
    (b"not SQLite at all\n" * 400, "cache.db is not a cache database (file is not a database)"),
    (b"SQLite format 3\x00" + b"\xff" * 4080, "cache.db is not a cache database (file is not a database)"),
])
def test_a_cache_db_that_is_not_sqlite_is_not_read(tmp_path: Path, content: bytes, why: str) -> None:
    folder = tmp_path / "cache"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        honest_pass(tmp_path, server)
        for name in ("cache.db-wal", "cache.db-shm"):
            (folder / name).unlink(missing_ok=True)
        (folder / "cache.db").write_bytes(content)
        done, record = again(tmp_path, server, "attacked")
    assert_ran_live(done, record, folder, f"{why}{NOT_READ}")
    assert (folder / "cache.db").read_bytes() == content


def test_another_programs_database_is_never_written(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        keys = honest_pass(tmp_path, server)
        # a table of the same name, and a trigger that a write would set off
        replace_index(folder, "CREATE TABLE replies (key TEXT PRIMARY KEY, reply TEXT)",
                      [(k, "{}") for k in keys], "INSERT INTO replies VALUES (?, ?)")
        with closing(sqlite3.connect(folder / "cache.db")) as db, db:
            db.execute("CREATE TRIGGER spy AFTER INSERT ON replies BEGIN DELETE FROM replies; END")
        before = (folder / "cache.db").read_bytes()
        done, record = again(tmp_path, server, "attacked")
    assert_ran_live(done, record, folder, f"cache.db is not a cache tooltrial made{NOT_READ}")
    assert (folder / "cache.db").read_bytes() == before


def test_a_cache_db_that_is_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    folder, target = tmp_path / "cache", tmp_path / "elsewhere.db"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        honest_pass(tmp_path, server)
        (folder / "cache.db").rename(target)
        (folder / "cache.db").symlink_to(target)
        before = target.read_bytes()
        done, record = again(tmp_path, server, "attacked")
    assert_ran_live(done, record, folder, f"cache.db is a symbolic link{NOT_READ}")
    assert target.read_bytes() == before and not (tmp_path / "elsewhere.db-wal").exists()


def test_a_cache_of_another_format_is_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    with OpenAIServer(fallback=openai_reply("hi")) as server:
        honest_pass(tmp_path, server)
        with closing(sqlite3.connect(folder / "cache.db")) as db:
            db.execute("PRAGMA user_version = 2")
        done, record = again(tmp_path, server, "later")
    assert_ran_live(done, record, folder, f"cache.db is another tooltrial version's cache (format 2, this one reads 1)"
                                          f"{NOT_READ}")


def test_a_corrupt_page_found_mid_run_stops_the_file_being_read_or_written(tmp_path: Path) -> None:
    folder = tmp_path / "cache"
    cache = open_cache(folder, create=True)
    for number in range(30):
        cache.store(f"{number:064x}", Completion("x" * 3000), "/w")  # a page each
    cache.close()
    index = folder / "cache.db"
    with index.open("r+b") as damaged:
        damaged.seek(index.stat().st_size - 3 * 4096)
        damaged.write(b"\xff" * 3 * 4096)  # its last three pages
    before = index.read_bytes()
    cache = open_cache(folder, create=True)
    found = [cache.lookup(f"{number:064x}", "/w") for number in range(30)]
    warning = f"response cache {folder}: cache.db is not a cache database (database disk image is malformed){NOT_READ}"
    first = next(number for number, (reply, _) in enumerate(found) if reply is None)  # on a damaged page
    assert 0 < first < 30 and [reply.content for reply, _ in found[:first]] == ["x" * 3000] * first
    assert found[first:] == [(None, warning)] * (30 - first)  # said, and the file not read again
    assert cache.lookup(f"{0:064x}", "/w") == (None, warning)
    assert cache.store(f"{27:064x}", Completion("new"), "/w") == warning
    cache.close()
    assert index.read_bytes() == before
