"""Per-provider concurrency: at most a provider's ``max_concurrency`` runs at once across every run of a
suite, however many ``-j`` lets go (runner.providers.registry.ProviderSpec). A run holds its slot from its
workspace to its record, so its model requests, which go one after another, never meet another run's
at a server that serves one at a time; the time it waited for the slot is not part of its duration.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping

_POLL = 0.1  # seconds between looks at the cancel event while waiting for a slot


class Slots:
    """The slots of a suite's providers: ``limits`` maps a provider name to its runs at once (None: no
    limit, that provider's runs never wait). Shared by every worker thread of one suite."""

    def __init__(self, limits: Mapping[str, int | None]) -> None:
        self._free = {name: threading.BoundedSemaphore(limit) for name, limit in limits.items() if limit is not None}

    @contextlib.contextmanager
    def held(self, provider: str, cancel: threading.Event) -> Iterator[float | None]:
        """Hold a slot of ``provider`` for the ``with`` block: yields the seconds waited for it (0.0 for a
        provider without a limit or a slot free at once), or None, holding none, when ``cancel`` was set
        while waiting."""
        free = self._free.get(provider)
        if free is None:
            yield 0.0
            return
        started = time.monotonic()
        waited = 0.0
        if not free.acquire(blocking=False):
            while not free.acquire(timeout=_POLL):
                if cancel.is_set():
                    yield None
                    return
            waited = time.monotonic() - started
        try:
            yield waited
        finally:
            free.release()

    def take(self, provider: str) -> bool:
        """Take a slot of ``provider`` if one is free now (always, for a provider without a limit);
        whether one was taken. Give it back with ``give``."""
        free = self._free.get(provider)
        return free is None or free.acquire(blocking=False)

    def give(self, provider: str) -> None:
        """Give back a slot of ``provider`` that ``take`` took."""
        free = self._free.get(provider)
        if free is not None:
            free.release()
