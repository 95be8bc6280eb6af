"""litellm's import, once a process: ``load_litellm`` where a provider needs it.

Before the import litellm's remote model-cost-map fetch and its reading of ``.env`` files are turned
off; afterwards its logging is kept quiet unless ``verbose``, and every line of it has the invocation's keys
replaced by their markers (runner.providers.redact), whatever litellm's own patterns miss. litellm reads those switches from the
environment, at import and while it runs, so they are set in ``os.environ`` once, on the main thread
(``resolve_provider``'s first load), before any run starts; nothing here writes
the environment after that (runs in other threads read it).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from runner.providers.redact import Secrets

LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_import_lock = threading.Lock()


class _Redacting(logging.Filter):
    """A filter that replaces the known secrets (``secrets``: the environment's keys and those of the key variables
    ``know`` was given) in each record's message and traceback with their markers; it drops no record."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets = Secrets()
        self._names: frozenset[str] = frozenset()  # the key variables ``know`` was given so far

    def know(self, names: Iterable[str]) -> None:
        """Read the secrets again from ``os.environ``, with ``names`` and those given before (a few microseconds:
        once a provider is made); the filter keeps its ``secrets`` (and their compiled pattern) when unchanged."""
        self._names |= frozenset(names)
        known = Secrets.known(os.environ, sorted(self._names))
        if known.named != self.secrets.named:
            self.secrets = known

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.secrets
        try:
            text, found = secrets.redact(record.getMessage())
        except (TypeError, ValueError):  # arguments that do not fit the message: logging reports it as it emits
            return True
        if found:
            record.msg, record.args = text, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = secrets.redact(record.exc_text)[0]
        return True


REDACTING = _Redacting()  # on the handler of each of litellm's loggers (``_to_stderr``)


def load_litellm(verbose: bool = False, key_variables: Iterable[str] = ()) -> Any:
    """Import litellm with the cost-map fetch off and its logging quiet (DEBUG when ``verbose``), its log lines
    cleared of the keys in the environment and in ``key_variables`` (an alias's ``api_key_env``: REDACTING).

    The import and its settings happen once a process (``_first_load``); later calls, one per provider
    made, only take the lock and set the loggers' level when ``verbose`` asks for another one (a level
    set clears every logger's cache, under logging's lock). Only the first call writes ``os.environ``
    (see the module docstring). Raises what ``import litellm`` raises.
    """
    with _import_lock:
        litellm = sys.modules.get("litellm")
        if litellm is None or not getattr(litellm, "suppress_debug_info", False):
            litellm = _first_load()
        REDACTING.know(key_variables)
        level = logging.DEBUG if verbose else logging.CRITICAL
        for logger in map(logging.getLogger, LOGGERS):
            if logger.level != level or not _ours(logger):
                _to_stderr(logger, level)
        return litellm


def _first_load() -> Any:
    """The one-time part of ``load_litellm`` (called with ``_import_lock`` held): the switches litellm
    reads at import set in ``os.environ``, the import (what it made then frozen out of the garbage
    collector's generations: they live as long as the process), its telemetry and help banners off.

    The collector is off during the import (``_collector_off``): its passes over the objects the import
    keeps making were a third of the import's CPU time (docs/performance.md, figure (h)).
    """
    set_switches()
    with _collector_off():
        import litellm

        gc.freeze()  # the many objects its import made left out of every later collection: a quicker exit

    litellm.telemetry = False  # older releases phone home unless this is off; newer ones have no SDK telemetry
    litellm.suppress_debug_info = True  # its help banners are print()s to stdout, which carries --output json
    _quiet_service_hooks(litellm)
    return litellm


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    """Python's cyclic garbage collector off inside, back on after when it was on before.

    An import that builds hundreds of thousands of long-lived objects (litellm's: about 370,000, some 2,500
    pydantic models) starts a collection every 700 allocations net of frees, each older generation in turn,
    and each walks objects that all survive; litellm's cycles made while importing are few, so what is left
    over until the next collection is small.
    """
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def _quiet_service_hooks(litellm: Any) -> None:
    """Keep litellm's per-request service event from making an event loop when nobody listens.

    litellm 1.110.2 times every provider call (``track_llm_api_timing``) and hands the timing to its one
    ServiceLogging, whose sync hook runs ``asyncio.run`` (a new event loop each time) to call
    the service callbacks (``litellm.service_callback``: Prometheus, Datadog, OpenTelemetry), even when
    there are none, as in tooltrial. The hooks here pass the event on only when there is one; a litellm
    without that global is left as it is.
    """
    try:
        from litellm._service_logger import ServiceLogging
        from litellm.litellm_core_utils import logging_utils
    except ImportError:
        return
    if not hasattr(logging_utils, "_service_logger"):
        return

    class QuietWhenUnheard(ServiceLogging):
        def service_success_hook(self, *args: Any, **kwargs: Any) -> None:
            if litellm.service_callback:
                super().service_success_hook(*args, **kwargs)

        def service_failure_hook(self, *args: Any, **kwargs: Any) -> None:
            if litellm.service_callback:
                super().service_failure_hook(*args, **kwargs)

    logging_utils._service_logger = QuietWhenUnheard()


def set_switches() -> None:
    """Set the environment variables litellm reads (``LITELLM_*``), writing only those not set as wanted yet;
    on the main thread before any run starts (the module docstring), e.g. before a process that imports
    litellm is started with this environment (runner.suite.processes.warm_up)."""
    if os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP") != "True":
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # read at import: the bundled cost map
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")  # read per request: no tokenizer or header downloads
    os.environ.setdefault("LITELLM_MODE", "PRODUCTION")  # read at import: "DEV" loads a .env file into it


def unlogged() -> contextlib.AbstractContextManager[Any]:
    """A context in which a ``litellm.completion`` is not handed to litellm's success logging.

    After every call litellm submits a success handler to a thread pool of its own: it builds the
    standard logging payload, prices the reply again and runs the callbacks. tooltrial registers no
    callback, reads the price litellm already put in the reply (``_hidden_params``) and the raw body
    through ``logger_fn``, so that work (CPU spent on every request) is done for nothing. litellm
    1.110.2 skips it for what it calls an internal sub-call (``litellm._internal_context``, a
    context variable, so it holds for this thread's call alone); a litellm without it logs as usual.
    Streams are logged either way (their wrapper does not look at the variable).
    """
    try:
        from litellm._internal_context import internal_sub_call
    except ImportError:
        return contextlib.nullcontext()
    return internal_sub_call()


def _ours(logger: logging.Logger) -> bool:
    return any(getattr(h, "_tooltrial", False) for h in logger.handlers)


def _to_stderr(logger: logging.Logger, level: int) -> None:
    """Send ``logger`` to stderr at ``level``: litellm logs debug lines to stdout, which carries
    ``--output json``. Its handlers' filters (which redact keys by their patterns) are kept, then REDACTING's
    (the keys tooltrial knows, by value)."""
    logger.setLevel(level)
    if _ours(logger):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    for old in logger.handlers:
        for one in old.filters:
            handler.addFilter(one)
    handler.addFilter(REDACTING)
    handler._tooltrial = True  # type: ignore[attr-defined]
    logger.handlers = [handler]
    logger.propagate = False
