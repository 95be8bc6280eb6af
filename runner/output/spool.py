"""The pieces of the streamed outputs (runner.output.formats), the report's ``runs`` items among them, encoded
as each run is saved, so ``report.json`` is written at the end without reading every run file back.

``tooltrial run`` saves a run's record to its run file the moment the run ends; the item the report lists
for it (runner.output.report.run_item) is made then too, from the record in hand, and appended to an
unlinked temporary file in the system's temporary folder (not the results folder, whose disk holds only
results). At the end the items are copied out in plan order, far cheaper than reading every record back
and decoding it. Only each item's place stays in memory (tens of bytes a run), and nothing is left
behind whatever ends the process.
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Hashable, Iterable, Iterator
from typing import IO


class ItemSpool:
    """Items by key (an output's name and a run's key), in an unlinked temporary file (``tempfile.TemporaryFile``).

    ``add`` never raises for the disk: a spool that could not write (disk full, folder gone) becomes
    ``broken``, and its reader makes the items from the run files instead (runner.output.scan.Runs.items).
    Safe to call from several threads.
    """

    def __init__(self) -> None:
        self.broken = False
        self._file: IO[bytes] | None = None
        self._places: dict[Hashable, tuple[int, int]] = {}  # key -> (offset, length in bytes)
        self._end = 0
        self._lock = threading.Lock()

    def add(self, key: Hashable, text: str) -> None:
        """Keep ``text`` (UTF-8-encodable JSON text, as runner.output.store.to_json makes it) as ``key``'s item."""
        data = text.encode("utf-8")
        with self._lock:
            if self.broken:
                return
            try:
                if self._file is None:
                    self._file = tempfile.TemporaryFile()  # noqa: SIM115 (open as long as the spool)
                self._file.seek(self._end)
                self._file.write(data)
            except OSError:
                self.broken = True
                return
            self._places[key] = (self._end, len(data))
            self._end += len(data)

    def items(self, keys: Iterable[Hashable]) -> Iterator[str]:
        """The item of each of ``keys``, in that order. Raises KeyError for a key never added and OSError
        when the file cannot be read back."""
        for key in keys:
            offset, length = self._places[key]
            with self._lock:
                assert self._file is not None
                self._file.flush()
                self._file.seek(offset)
                data = self._file.read(length)
            yield data.decode("utf-8")

    def holds(self, keys: Iterable[Hashable]) -> bool:
        """Whether the spool is whole and has an item for every one of ``keys``."""
        return not self.broken and all(key in self._places for key in keys)

    def close(self) -> None:
        """Let go of the file (it was never linked into the folder, so nothing remains)."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
