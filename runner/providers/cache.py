"""The response cache of ``run --cache DIR``: model replies kept on disk, keyed by all that chose them.

Built on diskcache (https://grantjenks.com/docs/diskcache/): one folder holding a SQLite index
(``cache.db``) and files for large values, safe for threads and for processes sharing the folder,
imported when a cache is opened. litellm's own cache (``litellm.caching``, itself on diskcache) is
not used: it is switched on for the whole process (``litellm.cache``), shared by every run's thread,
keys a request by litellm's view of its keyword arguments only (no run number), and replays a
litellm object without the raw body tooltrial reads tokens and finish reasons from.

A request's key is the SHA-256 of canonical JSON (keys sorted) of the provider's identity (alias,
resolved model, server, temperature, max_tokens, its other parameters, streaming; never its key), the
messages, the tools offered, the run number (1-based), so the runs of ``--runs N`` stay N
independent draws: run 2 never replays run 1, and how often the run sent that same request before
(the agent loop asks again, history unchanged, after an empty reply): the second asking is a draw
of its own, not the first one's reply again. The run's workspace folder (a new temporary path each
run, which the system prompt usually names) is written as ``<tooltrial:workspace>`` in the key and in
the kept reply, and put back as the new run's folder on replay.

Only replies are kept: a request that failed (after its retries), was cut off by the run's deadline
or interrupted raises before anything is stored. Values are JSON text, which diskcache stores as is
(never pickled), so a cache folder from elsewhere cannot run code; one that does not read back is a
miss with a warning, and the fresh reply replaces it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from runner.errors import UserError
from runner.providers.base import Completion, Provider, ToolCall, Usage

FORMAT = 1  # of a kept reply; another format reads as a miss
WORKSPACE = "<tooltrial:workspace>"
INDEX = "cache.db"  # diskcache's SQLite file: what makes a folder a cache
_KEPT = ("content", "finish_reason", "message", "reasoning", "ttft", "streamed", "native_finish_reason")


@dataclass(frozen=True)
class CacheInfo:
    """What a cache folder holds: ``entries`` (kept replies) and ``size`` (bytes on disk, its index included)."""

    entries: int
    size: int


class ResponseCache:
    """A cache folder, open. Thread-safe; pickles as its folder (diskcache reopens it), so worker
    processes may share it.

    Use ``open_cache`` to make one: it turns what is wrong with the folder into a UserError.
    """

    def __init__(self, folder: Path) -> None:
        import diskcache

        self.folder = folder
        self._cache = diskcache.Cache(str(folder))

    def lookup(self, key: str, workspace: str) -> tuple[Completion | None, str | None]:
        """The reply kept under ``key`` with ``workspace`` put back in it, or None; and a warning
        (one line) when an entry was there but did not read back as a reply (then also None)."""
        try:
            text = self._cache.get(key, retry=True)
        except (OSError, sqlite3.Error) as e:
            return None, f"response cache {self.folder}: could not read an entry ({e}); asked the model instead"
        if text is None:
            return None, None
        try:
            if not isinstance(text, str):
                raise ValueError(f"a {type(text).__name__}, not JSON text")
            return completion_from(json.loads(text.replace(WORKSPACE, _escaped(workspace)))), None
        except (ValueError, TypeError, KeyError) as e:
            return None, f"response cache {self.folder}: entry {key[:12]} is corrupt ({e}); asked the model instead"

    def store(self, key: str, completion: Completion, workspace: str) -> str | None:
        """Keep ``completion`` under ``key``, ``workspace`` written as the placeholder; a warning
        when the folder could not take it (the run goes on)."""
        text = json.dumps(completion_dict(completion), ensure_ascii=False).replace(_escaped(workspace), WORKSPACE)
        try:
            self._cache.set(key, text, retry=True)
        except (OSError, sqlite3.Error) as e:
            return f"response cache {self.folder}: could not keep a reply ({e})"
        return None

    def info(self) -> CacheInfo:
        """How many replies the folder keeps and its size in bytes (diskcache's ``volume``)."""
        return CacheInfo(len(self._cache), int(self._cache.volume()))

    def clear(self) -> int:
        """Remove every kept reply; returns how many there were."""
        return int(self._cache.clear(retry=True))

    def close(self) -> None:
        self._cache.close()


def open_cache(folder: Path, create: bool) -> ResponseCache:
    """The cache in ``folder``, made there first when ``create`` and the folder is new or empty.

    Raises UserError when ``folder`` is a file, holds other files but no cache (``create``), holds no
    cache (not ``create``: ``cache info``, ``cache clear``), or its index is not a SQLite database.
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
        return ResponseCache(folder)
    except sqlite3.DatabaseError as e:
        raise UserError(f"{where}: {folder / INDEX} is not a cache database ({e})",
                        hint="remove the folder, or give another") from e
    except OSError as e:
        raise UserError(f"{where}: cannot open it ({e.strerror or e})", hint="give a folder you can write") from e


def request_key(identity: Mapping[str, Any], messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                run: int, workspace: str, again: int = 0) -> str:
    """The hex SHA-256 naming one request (see the module docstring); ``run`` is 1-based, ``again`` how
    many times the run sent the same request before."""
    request = {"format": FORMAT, "provider": identity, "messages": messages, "tools": tools, "run": run,
               "again": again}
    # default=str: a value JSON cannot hold (none is expected in OpenAI-shaped messages) keys by its text
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.replace(_escaped(workspace), WORKSPACE).encode()).hexdigest()


def completion_dict(completion: Completion) -> dict[str, Any]:
    """What a cache keeps of a reply: all but its latency, tries and cache mark (they belong to one request)."""
    kept = {name: getattr(completion, name) for name in _KEPT}
    usage = dataclasses.asdict(completion.usage) if completion.usage is not None else None
    return {"format": FORMAT, **kept, "message": dict(completion.message) if completion.message is not None else None,
            "usage": usage, "tool_calls": [dataclasses.asdict(c) for c in completion.tool_calls]}


def completion_from(data: Any) -> Completion:
    """The reply ``completion_dict`` kept. Raises ValueError, TypeError or KeyError when ``data`` is not one."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a kept reply of format {FORMAT}")
    for name, kinds in (("content", str), ("finish_reason", str), ("message", dict), ("reasoning", str),
                        ("ttft", (int, float)), ("native_finish_reason", str), ("usage", dict), ("streamed", bool)):
        if (data[name] is not None or name == "streamed") and not isinstance(data[name], kinds):
            raise TypeError(f"{name} is a {type(data[name]).__name__}")
    if not isinstance(data["tool_calls"], list) or not all(isinstance(c, dict) for c in data["tool_calls"]):
        raise TypeError("tool_calls is not a list of objects")
    usage = Usage(**data["usage"]) if data["usage"] is not None else None
    return Completion(**{name: data[name] for name in _KEPT}, usage=usage,
                      tool_calls=tuple(ToolCall(**c) for c in data["tool_calls"]))


def _escaped(text: str) -> str:
    """``text`` as it reads inside a JSON string."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class Cached:
    """A Provider answering from ``cache`` when it keeps a reply to the same request, else asking
    ``provider`` and keeping its reply. ``identity`` names the provider in the key, ``run`` is the
    run number (1-based), ``workspace`` the run's folder. Each reply is marked ``cache="hit"`` (its
    latency the look-up's, no tries: nothing was sent) or ``"miss"``; ``warnings`` collects what
    went wrong with the folder (the run goes on). ProviderError from ``provider`` passes through,
    nothing kept."""

    def __init__(self, provider: Provider, cache: ResponseCache, identity: Mapping[str, Any], run: int,
                 workspace: str) -> None:
        self.provider = provider
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
        problem = self.cache.store(key, completion, self.workspace)
        if problem:
            self.warnings.append(problem)
        return dataclasses.replace(completion, cache="miss")
