"""Starting a thread on a machine out of processes or memory: Python's ``Thread.start`` then raises
RuntimeError("can't start new thread"). That is the machine's failure, not tooltrial's bug: the start is made again
after a short, growing wait, and a thread refused each time costs the run that needed it (error kind
``start_failed``, infrastructure), never the suite or the runs that finished.
"""

from __future__ import annotations

import threading
import time

from runner.errors import THREAD_REFUSED, MachineBusy, thread_refused

TRIES = 6
FIRST_WAIT = 0.05  # seconds before the second try; doubled before each further one (1.55 s in all)


def start(thread: threading.Thread, tries: int = TRIES) -> None:
    """Start ``thread``, making the start again while the machine refuses it (runner.errors.thread_refused), up to ``tries`` in all,
    after FIRST_WAIT seconds, then twice as long each time. Raises MachineBusy (chained to the last refusal) when
    every try was refused; any other error of ``Thread.start`` as it comes."""
    wait = FIRST_WAIT
    for attempt in range(1, tries + 1):
        try:
            thread.start()
            return
        except RuntimeError as e:
            if not thread_refused(e):
                raise
            if attempt == tries:
                waited = FIRST_WAIT * (2 ** (tries - 1) - 1)
                raise MachineBusy(f"{THREAD_REFUSED}: {e} ({tries} tries in {waited:.2f} s)") from e
        time.sleep(wait)
        wait *= 2
