"""The response cache's file: ``cache.db`` in the cache folder, one SQLite table of replies, read
with tooltrial's own SQL only.

A row is a key (a request's hex SHA-256) and a reply's JSON text (runner.providers.cacheentry
checks its shape). Nothing read from the file is ever unpickled, evaluated or taken as a path, and
no value leaves SQLite but the one reply asked for. Before the file is read or written, it must be
exactly what ``CacheFile.open`` makes: tooltrial's application id and format number in its header,
and one table (with its key's index) in its schema, nothing else: no trigger, view or other table
that a write could set off. Any other file (an older tooltrial's diskcache index, another program's
database, a file that is not SQLite) raises Unreadable and is never written. Connections read with
the settings SQLite documents for database files from elsewhere (``trusted_schema`` off,
``cell_size_check`` on).

SQLite's write-ahead log lets threads (a connection each) and processes share the file; readers
do not wait for a writer. Past ``LIMIT`` bytes of pages in use, the oldest replies are dropped.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

INDEX = "cache.db"
APPLICATION_ID = 0x74747263  # "ttrc" in the header: a file tooltrial made
VERSION = 1  # the file's format (SQLite's user_version); another is not read
LIMIT = 2**30  # bytes of the file's pages in use; past it the oldest replies go
_CULL = 10  # replies dropped at a time past LIMIT
_TABLE = "CREATE TABLE replies (key TEXT PRIMARY KEY NOT NULL, reply TEXT NOT NULL) STRICT"
_SCHEMA = [("index", "sqlite_autoindex_replies_1", None), ("table", "replies", _TABLE)]
_OURS = (APPLICATION_ID, VERSION, _SCHEMA)
_Shape = tuple[int, int, list[tuple[str | None, str | None, str | None]]]  # see _shape
_EMPTY: _Shape = (0, 0, [])
_DISKCACHE = "Cache"  # the table of tooltrial's earlier cache format (diskcache's)


class Unreadable(Exception):
    """The folder's ``cache.db`` is not a cache this tooltrial reads; the message says what it is."""


class CacheFile:
    """An open ``cache.db``, checked. Thread-safe: each thread (and a forked process) gets its own
    connection. Raises sqlite3.Error or OSError when the file fails later (corrupt pages, a full disk)."""

    def __init__(self, path: Path, limit: int = LIMIT) -> None:
        self.path = path
        self.limit = limit
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[sqlite3.Connection] = []

    @classmethod
    def open(cls, folder: Path, create: bool, limit: int = LIMIT) -> CacheFile:
        """The cache file in ``folder``, made when ``create`` and there is none (or an empty one).

        Raises Unreadable when the file is another one (see the module docstring), with the SQLite
        error in the message when it is not a database; OSError when it cannot be opened or made.
        """
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        if (folder / INDEX).is_symlink():  # SQLite would follow it, and make the file it names
            raise Unreadable(f"{INDEX} is a symbolic link")
        found = cls(folder / INDEX, limit)
        try:
            _check(found._connection(create), create)
        except sqlite3.OperationalError as e:
            found.close()
            raise OSError(str(e)) from e  # cannot open, locked past the timeout: not the file's shape
        except sqlite3.DatabaseError as e:
            found.close()
            raise Unreadable(f"{INDEX} is not a cache database ({e})") from e
        except Unreadable:
            found.close()
            raise
        return found

    def get(self, key: str) -> tuple[str, bytes | int | float | None] | None:
        """The row under ``key``: (SQLite's type name of its reply, the reply; text as UTF-8 bytes,
        not decoded), or None when there is none."""
        row = self._connection().execute("SELECT typeof(reply), reply FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else (row[0].decode("ascii"), row[1])

    def put(self, key: str, reply: str) -> None:
        """Keep ``reply`` under ``key``, replacing what was there; then drop the oldest replies while
        the file's pages in use pass the limit."""
        connection = self._connection()
        connection.execute("INSERT OR REPLACE INTO replies (key, reply) VALUES (?, ?)", (key, reply))
        while _in_use(connection) > self.limit and connection.execute(
                "DELETE FROM replies WHERE rowid IN (SELECT rowid FROM replies ORDER BY rowid LIMIT ?)",
                (_CULL,)).rowcount:
            pass

    def count(self) -> int:
        """How many replies the file keeps."""
        return int(self._connection().execute("SELECT count(*) FROM replies").fetchone()[0])

    def size(self) -> int:
        """Bytes on disk: the file and its write-ahead log."""
        return sum(_size(p) for p in (self.path, self.path.with_name(f"{INDEX}-wal")))

    def clear(self) -> int:
        """Remove every reply; returns how many there were."""
        return int(self._connection().execute("DELETE FROM replies").rowcount)

    def close(self) -> None:
        """Close every thread's connection (call it when no thread uses the file any more)."""
        with self._lock:
            opened, self._opened = self._opened, []
        for connection in opened:
            connection.close()

    def _connection(self, create: bool = False) -> sqlite3.Connection:
        if getattr(self._local, "pid", None) != os.getpid():  # a forked process opens its own
            self._local.connection, self._local.pid = None, os.getpid()
        if self._local.connection is None:
            mode = "rwc" if create else "rw"
            # used by its own thread only; check_same_thread off so that close() may close it from another
            connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode={mode}", uri=True, timeout=60,
                                         isolation_level=None, check_same_thread=False)
            with self._lock:
                self._opened.append(connection)
            connection.text_factory = bytes  # decoded by the entry's reader: bad UTF-8 is a corrupt entry
            for pragma in ("trusted_schema = OFF", "cell_size_check = ON", "synchronous = NORMAL"):
                connection.execute(f"PRAGMA {pragma}")
            self._local.connection = connection
        return self._local.connection


def _shape(connection: sqlite3.Connection) -> _Shape:
    """(application id, user_version, the schema's (type, name, SQL) rows in order) of the file."""
    application = connection.execute("PRAGMA application_id").fetchone()[0]
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    rows = connection.execute("SELECT type, name, sql FROM sqlite_schema ORDER BY type, name").fetchall()
    return application, version, [(_decoded(kind), _decoded(name), _decoded(sql)) for kind, name, sql in rows]


def _decoded(value: bytes | None) -> str | None:
    return None if value is None else value.decode(errors="replace")


def _check(connection: sqlite3.Connection, create: bool) -> None:
    """Make the table in an empty file when ``create``; raise Unreadable unless the file is ours."""
    found = _shape(connection)
    if found == _EMPTY and create:
        connection.execute("PRAGMA journal_mode = WAL")  # kept in the file; outside a transaction
        connection.execute("BEGIN IMMEDIATE")
        try:
            if _shape(connection) == _EMPTY:  # another process may have made it meanwhile
                connection.execute(_TABLE)
                connection.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                connection.execute(f"PRAGMA user_version = {VERSION}")
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        found = _shape(connection)
    if found == _OURS:
        return
    application, version, schema = found
    if application == APPLICATION_ID and version != VERSION:
        raise Unreadable(f"{INDEX} is another tooltrial version's cache (format {version}, this one reads {VERSION})")
    if ("table", _DISKCACHE) in {(kind, name) for kind, name, _ in schema}:
        raise Unreadable(f"{INDEX} is an older tooltrial's cache, which this one does not read")
    raise Unreadable(f"{INDEX} is not a cache tooltrial made")


def _size(path: Path) -> int:
    """The size of the file at ``path`` in bytes, 0 when there is none (a log checkpointed away)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _in_use(connection: sqlite3.Connection) -> int:
    """Bytes of the file's pages that hold data (free pages left out)."""
    count, free, size = (connection.execute(f"PRAGMA {name}").fetchone()[0]
                         for name in ("page_count", "freelist_count", "page_size"))
    return (count - free) * size
