"""The response cache of ``run --cache DIR``: model replies kept on disk, keyed by all that chose them.

Kept in one folder, ``cache.db``: SQLite of tooltrial's own schema, which threads and processes
share (runner.providers.cachefile). litellm's own cache (``litellm.caching``) is not used: it is
switched on for the whole process (``litellm.cache``), shared by every run's thread, keys a request
by litellm's view of its keyword arguments only (no run number), and replays a litellm object
without the raw body tooltrial reads tokens and finish reasons from.

A request's key is the SHA-256 of canonical JSON (keys sorted) of the provider's identity (alias,
resolved model, server, temperature, max_tokens, its other parameters, streaming; never its key), the
messages, the tools offered, the run number (1-based), so the runs of ``--runs N`` stay N
independent draws: run 2 never replays run 1, and how often the run sent that same request before
(the agent loop asks again, history unchanged, after an empty reply): the second asking is a draw
of its own, not the first one's reply again. The run's workspace folder (a new temporary path each
run, which the system prompt usually names) is written as ``<tooltrial:workspace>`` in the key and in
the kept reply, and put back as the new run's folder on replay.

Only replies are kept: a request that failed (after its retries), was cut off by the run's deadline
or interrupted raises before anything is stored. The folder is read as data only: ``cache.db`` is
SQLite of tooltrial's own schema (runner.providers.cachefile), a reply JSON of a declared shape
(runner.providers.cacheentry); nothing from it is unpickled or taken as a path. An entry that does not
read back is a miss with a warning, and the fresh reply replaces it; a ``cache.db`` that is not such
a file (an older tooltrial's, another program's, not SQLite, corrupt) is never written and every
request is sent, each run saying why in one warning.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import UserError
from runner.providers.base import Completion, Provider
from runner.providers.cacheentry import FORMAT, decode, encode, quoted
from runner.providers.cachefile import INDEX, CacheFile, Unreadable

WORKSPACE = "<tooltrial:workspace>"
_PLACEHOLDER = WORKSPACE.encode()


@dataclass(frozen=True)
class CacheInfo:
    """What a cache folder holds: ``entries`` (kept replies) and ``size`` (bytes on disk, its index included)."""

    entries: int
    size: int


class ResponseCache:
    """A cache folder, open; or, ``file`` None, one whose ``cache.db`` is not read, ``unread`` saying
    why (every look-up a miss with a warning). Thread-safe; pickles as its folder (a worker process
    opens it again), so worker processes may share it.

    Use ``open_cache`` to make one: it turns what is wrong with the folder into a UserError.
    """

    def __init__(self, folder: Path, file: CacheFile | None, unread: str | None = None) -> None:
        self.folder = folder
        self._file = file
        self._unread = unread

    def __reduce__(self) -> tuple[Any, tuple[Path, str | None]]:
        return _reopened, (self.folder, self._unread)

    def lookup(self, key: str, workspace: str) -> tuple[Completion | None, str | None]:
        """The reply kept under ``key`` with ``workspace`` put back in it, or None; and a warning
        (one line) when an entry was there but did not read back as a reply (then also None), or
        the folder is not read."""
        file = self._usable()
        if file is None:
            return None, self._not_read()
        try:
            found = file.get(key)
        except (OSError, sqlite3.OperationalError) as e:  # locked past the timeout, an I/O error: this once
            return None, f"response cache {self.folder}: could not read an entry ({e}); asked the model instead"
        except sqlite3.DatabaseError as e:  # corrupt pages: the file is not read again
            self._unread = f"{INDEX} is not a cache database ({e})"
            return None, self._not_read()
        if found is None:
            return None, None
        kind, text = found
        try:
            if kind != "text" or not isinstance(text, bytes):
                raise ValueError(f"stored as {kind}, not as JSON text")
            return decode(text.replace(_PLACEHOLDER, quoted(workspace))), None
        except ValueError as e:
            return None, f"response cache {self.folder}: entry {key[:12]} is corrupt ({e}); asked the model instead"

    def store(self, key: str, completion: Completion, workspace: str) -> str | None:
        """Keep ``completion`` under ``key``, ``workspace`` written as the placeholder; a warning
        when the folder could not take it (the run goes on). A folder not read keeps nothing."""
        file = self._usable()
        if file is None:
            return self._not_read()
        text = encode(completion).replace(quoted(workspace), _PLACEHOLDER)
        try:
            file.put(key, text.decode())
        except (OSError, sqlite3.OperationalError) as e:
            return f"response cache {self.folder}: could not keep a reply ({e})"
        except sqlite3.DatabaseError as e:
            self._unread = f"{INDEX} is not a cache database ({e})"
            return self._not_read()
        return None

    def info(self) -> CacheInfo:
        """How many replies the folder keeps and its size in bytes (its file and log). Raises
        UserError when its ``cache.db`` is not read or fails."""
        file = self._readable()
        try:
            return CacheInfo(file.count(), file.size())
        except sqlite3.Error as e:
            raise _failed(self.folder, e) from e

    def clear(self) -> int:
        """Remove every kept reply; returns how many there were. Raises UserError when its
        ``cache.db`` is not read or fails."""
        file = self._readable()
        try:
            return file.clear()
        except sqlite3.Error as e:
            raise _failed(self.folder, e) from e

    def close(self) -> None:
        """Close the folder's file (when no run uses the cache any more)."""
        if self._file is not None:
            self._file.close()

    def _usable(self) -> CacheFile | None:
        return self._file if self._unread is None else None

    def _readable(self) -> CacheFile:
        file = self._usable()
        if file is None:
            raise _refused(self.folder, str(self._unread))
        return file

    def _not_read(self) -> str:
        return (f"response cache {self.folder}: {self._unread}; asked the model instead, keeping nothing "
                "(delete the folder to start a new cache)")


def _reopened(folder: Path, unread: str | None) -> ResponseCache:
    """The cache a worker process unpickles: ``folder`` opened again, or not read when it was not."""
    if unread is None:
        try:
            return ResponseCache(folder, CacheFile.open(folder, create=False))
        except Unreadable as e:
            unread = str(e)
    return ResponseCache(folder, None, unread)


def open_cache(folder: Path, create: bool) -> ResponseCache:
    """The cache in ``folder``, made there first when ``create`` and the folder is new or empty.

    Raises UserError when ``folder`` is a file, holds other files but no cache (``create``), holds no
    cache (not ``create``: ``cache info``, ``cache clear``), cannot be opened, or (not ``create``)
    its ``cache.db`` is not a cache this tooltrial reads; with ``create``, such a folder opens as one
    whose every look-up is a miss with a warning.
    """
    where = f"response cache {folder}"
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{where}: it is a file, not a folder", hint="give the cache's folder: run --cache DIR makes it")
    is_cache = (folder / INDEX).is_file()
    if not create and not is_cache:
        raise UserError(f"{where}: no cache there", hint="run --cache DIR makes one")
    if create and not is_cache and folder.is_dir() and any(folder.iterdir()):
        raise UserError(f"{where}: the folder holds other files and no cache",
                        hint="give a new or empty folder, or one an earlier run --cache made")
    try:
        return ResponseCache(folder, CacheFile.open(folder, create))
    except Unreadable as e:
        if not create:
            raise _refused(folder, str(e)) from e
        return ResponseCache(folder, None, str(e))
    except OSError as e:
        raise UserError(f"{where}: cannot open it ({e.strerror or e})", hint="give a folder you can write") from e


def _refused(folder: Path, why: str) -> UserError:
    return UserError(f"response cache {folder}: {why}", hint="delete the folder, or give another")


def _failed(folder: Path, error: sqlite3.Error) -> UserError:
    """What ``cache info`` or ``cache clear`` says when SQLite fails on the folder's file: corrupt, or
    busy (locked past the timeout) or unreadable."""
    if isinstance(error, sqlite3.OperationalError):
        return UserError(f"response cache {folder}: {INDEX} failed ({error})",
                         hint="try again once no other run uses it, and check that you may write it")
    return _refused(folder, f"{INDEX} is not a cache database ({error})")


def request_key(identity: Mapping[str, Any], messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                run: int, workspace: str, again: int = 0) -> str:
    """The hex SHA-256 naming one request (see the module docstring); ``run`` is 1-based, ``again`` how
    many times the run sent the same request before."""
    request = {"format": FORMAT, "provider": identity, "messages": messages, "tools": tools, "run": run,
               "again": again}
    # default=str: a value JSON cannot hold (none is expected in OpenAI-shaped messages) keys by its text
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.replace(_escaped(workspace), WORKSPACE).encode()).hexdigest()


def _escaped(text: str) -> str:
    """``text`` as it reads inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class Cached:
    """A Provider answering from ``cache`` when it keeps a reply to the same request, else asking
    ``provider`` and keeping its reply. ``identity`` names the provider in the key, ``run`` is the
    run number (1-based), ``workspace`` the run's folder. Each reply is marked ``cache="hit"`` (its
    latency the look-up's, no tries: nothing was sent) or ``"miss"``; ``warnings`` collects what
    went wrong with the folder (the run goes on). ProviderError from ``provider`` passes through,
    nothing kept. ``kept``, when given, makes the copy of a reply that is kept (runner.providers.redact: one scrubbed
    of the run's secrets); the run gets the reply as it came."""

    def __init__(self, provider: Provider, cache: ResponseCache, identity: Mapping[str, Any], run: int,
                 workspace: str, kept: Callable[[Completion], Completion] | None = None) -> None:
        self.provider = provider
        self.kept = kept
        self.name = provider.name
        self.cache = cache
        self.identity = identity
        self.run = run
        self.workspace = workspace
        self.warnings: list[str] = []
        self._sent: Counter[str] = Counter()  # request keys (without ``again``) this run asked, and how often

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        started = time.monotonic()
        first = request_key(self.identity, messages, tools, self.run, self.workspace)
        key = request_key(self.identity, messages, tools, self.run, self.workspace, self._sent[first])
        self._sent[first] += 1
        found, problem = self.cache.lookup(key, self.workspace)
        if problem:
            self.warnings.append(problem)
        if found is not None:
            return dataclasses.replace(found, latency=time.monotonic() - started, cache="hit")
        completion = self.provider.complete(messages, tools, deadline)
        problem = self.cache.store(key, self.kept(completion) if self.kept else completion, self.workspace)
        if problem:
            self.warnings.append(problem)
        return dataclasses.replace(completion, cache="miss")
