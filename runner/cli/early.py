"""What ``tooltrial run`` starts on threads of their own before its providers resolve, so that their waits
overlap the import of litellm: that import (runner.providers.litellm_load.load_in_background), and bubblewrap's
trial (runner.sandbox.choose.bubblewrap), a subprocess waited for."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from runner.providers.registry import kind_of
from runner.sandbox.choose import bubblewrap
from runner.spec.config import Config

Trial = Callable[[], tuple[str | None, bool, str]]  # bubblewrap()'s answer: (path or None, hardened, reason)


def start_early(sandbox: str, verbose: bool, config: Config, names: Sequence[str]) -> Trial | None:
    """Start litellm's import (its switches written first, on this thread: call it on the main thread) when
    one of ``names`` (the providers and judges, prechecked) is of a live kind, and bubblewrap's trial unless
    ``sandbox`` (``--sandbox``) is ``none``. Returns what gives the trial's answer to ``choose_sandbox``,
    raising there what the trial raised (MachineBusy); None when no trial was started.

    Both are waits on the main thread otherwise: the import is Python work under the interpreter lock, so
    what runs beside it is the trial's subprocess and the main thread's own reading of files.
    """
    if any(kind_of(name, config.providers).live for name in names):
        from runner.providers.litellm_load import load_in_background  # litellm's loader only for a live run

        load_in_background(verbose)
    if sandbox == "none":
        return None
    pool = ThreadPoolExecutor(1, thread_name_prefix="sandbox-trial")
    started = pool.submit(bubblewrap)
    pool.shutdown(wait=False)  # the trial goes on; the pool takes no more
    return started.result
