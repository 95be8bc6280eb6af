"""What tooltrial needs to reach one model: the model string, server, key variable and request settings.

Plain data, so the project config can build it without importing litellm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.providers.retry import RetryPolicy

DEFAULT_TIMEOUT = 120.0


@dataclass(frozen=True)
class ModelSettings:
    """One model as the user named it: a ``-p`` model string or a ``tooltrial.yml`` alias.

    Attributes:
        model: litellm model string (``openai/gpt-4o``, ``ollama_chat/qwen3``...).
        api_base: server URL, or None for the provider's default.
        api_key_env: name of the environment variable holding the key (read in
            tooltrial's own process only), or None for litellm's usual variables.
        temperature, max_tokens: sent when set.
        timeout: seconds per request attempt.
        params: extra litellm keyword arguments, sent as given.
        retry: how transient failures (429, 5xx, timeouts) are retried.
        stream: ask for the reply as a stream (server-sent events, Ollama's NDJSON), which
            records each request's time to first token.
        recover_text_calls: run the tool calls a reply wrote as text in its content
            (runner.providers.textcalls) instead of only recording them; the trace marks them ``recovered``.
        unwrap_calls: take a call with an empty name whose arguments are ``{name, arguments}`` as that
            inner call (a model that wraps its calls so); the step says ``repaired: unwrapped``.
        max_concurrency: how many runs of this model go at once in a suite, whatever ``-j`` says; None
            for no limit of its own (``concurrency_limit`` gives the default: 1 for a server on this machine).
    """

    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = DEFAULT_TIMEOUT
    params: Mapping[str, Any] = field(default_factory=dict)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    stream: bool = False
    recover_text_calls: bool = False
    unwrap_calls: bool = False
    max_concurrency: int | None = None

    def concurrency_limit(self, local: bool) -> int | None:
        """Runs of this model at once: ``max_concurrency`` when set, else 1 where ``local`` (``api_base`` is
        loopback or localhost: a local server such as llama.cpp often serves one request at a time, and
        requests queued there would run into the request ``timeout``), else None, no limit."""
        if self.max_concurrency is not None:
            return self.max_concurrency
        return 1 if local else None
