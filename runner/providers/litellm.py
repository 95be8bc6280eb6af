"""The litellm provider: any model litellm can reach, behind the Provider protocol.

litellm is imported only when a live provider is going to be used, by
runner.providers.litellm_load (once a process, its switches and logging set there);
importing this module costs nothing. Nothing here writes the environment (runs in other
threads read it).

Each request is retried as ``runner.providers.retry`` says (rate limits, 5xx,
timeouts and connection errors, backoff with jitter, the provider's asked-for wait honoured);
litellm's and the OpenAI client's own retries are turned off so exactly one
policy applies.
"""

from __future__ import annotations

import json
import os
import sys
import time
import types
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlparse

from runner.kinds import ErrorKind
from runner.providers.base import Completion, ProviderError, Usage
from runner.providers.echo import OllamaEcho
from runner.providers.history import provider_message, reasoning_text
from runner.providers.litellm_load import load_litellm, unlogged
from runner.providers.parse import as_dict, parse_completion
from runner.providers.ratelimit import RateLimiter
from runner.providers.retry import Retrier
from runner.providers.settings import ModelSettings
from runner.providers.stream import PastDeadline, Streamed, collect
from runner.providers.tokens import reported_in, usage_from

LOCAL_DUMMY_KEY = "tooltrial-local"  # sent to loopback servers so the OpenAI client does not refuse
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}


def route(model: str) -> str:
    """The litellm model string actually sent: ``ollama/x`` goes to Ollama's ``/api/chat`` (``ollama_chat/x``),
    the endpoint that carries native tool calls; everything else is unchanged."""
    return "ollama_chat/" + model[len("ollama/"):] if model.startswith("ollama/") else model


def is_local(api_base: str | None) -> bool:
    """Whether ``api_base`` points at this machine (loopback or localhost)."""
    host = urlparse(api_base or "").hostname or ""
    return host in _LOCAL_HOSTS or host.startswith("127.")


def key_from(variable: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The value of the key variable ``variable``, or None when it is unset, empty or only blanks:
    an empty key is no key."""
    value = environ.get(variable) if variable else None
    return value if value and value.strip() else None


def api_key(settings: ModelSettings, environ: Mapping[str, str] = os.environ) -> str | None:
    """The key to send: the ``api_key_env`` variable's value, else a dummy for a local server, else None
    (litellm then reads the provider's usual variable, e.g. ``OPENAI_API_KEY``)."""
    local = LOCAL_DUMMY_KEY if settings.api_base and is_local(settings.api_base) else None
    return key_from(settings.api_key_env, environ) or local


def model_problem(
    settings: ModelSettings, verbose: bool = False, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Why litellm cannot send requests for ``settings`` (unknown provider, missing key), or None.

    Only the key variables litellm itself would read are checked, in ``environ``, and only when
    no ``api_base`` is set (a custom server may take any key or none).
    """
    litellm = load_litellm(verbose, [settings.api_key_env] if settings.api_key_env else [])
    model = route(settings.model)
    try:
        litellm.get_llm_provider(model)
    except litellm.exceptions.BadRequestError:
        return f"litellm knows no provider for model {settings.model!r}"
    if settings.api_base or settings.api_key_env:
        return None
    found = _validate_environment(litellm, model, environ)
    keys = [k for k in found.get("missing_keys") or () if k.endswith("_API_KEY")]
    if keys and not found.get("keys_in_environment"):
        return f"{' or '.join(keys)} is not set"
    return None


def _validate_environment(litellm: Any, model: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """``litellm.validate_environment(model=model)`` (``{"keys_in_environment": bool, "missing_keys": [...]}``)
    as if the environment were ``environ`` less its empty and blank variables.

    litellm's function counts a variable as set when it is present, whatever its value (it only tests
    ``name in os.environ``); to tooltrial a blank key is a missing one. Rather than edit os.environ, it
    runs as a copy of itself whose ``os`` holds that filtered mapping as ``environ``.
    """
    check = litellm.validate_environment
    present = {name: value for name, value in environ.items() if value.strip()}
    scope = {**check.__globals__, "os": types.SimpleNamespace(environ=present)}
    isolated = types.FunctionType(check.__code__, scope, check.__name__, check.__defaults__, check.__closure__)
    isolated.__kwdefaults__ = check.__kwdefaults__
    result: dict[str, Any] = isolated(model=model)
    return result


class LiteLLMProvider:
    """A Provider that sends each request through ``litellm.completion``.

    Args:
        settings: the model and its request settings.
        name: the label shown in output (default: the model string).
        verbose: let litellm log at DEBUG.
        sleep: waits the given seconds between tries (tests pass a recorder).
        limiter: the provider's rate limiter its suite shares (runner.providers.ratelimit), None for none.

    ``complete`` raises ProviderError of the failure's kind (runner.providers.errors) after the
    last retry, or at once for a failure that retrying cannot fix (quota, auth, a bad request).
    """

    def __init__(self, settings: ModelSettings, name: str | None = None, verbose: bool = False,
                 sleep: Callable[[float], None] = time.sleep, limiter: RateLimiter | None = None) -> None:
        self.settings = settings
        self.sleep = sleep
        self.limiter = limiter
        self.name = name or settings.model
        self._litellm = load_litellm(verbose, [settings.api_key_env] if settings.api_key_env else [])
        self._echo = OllamaEcho() if route(settings.model).startswith("ollama_chat/") else None

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None = None
    ) -> Completion:
        """One reply, retried as ``settings.retry`` says; no attempt waits past ``deadline``. Its
        ``latency`` leaves out the tries' waits for the rate limiter (each Attempt's ``rate_limited``).

        Raises OutOfTime when the deadline cut an attempt short or left no time for the
        next one, ProviderError for any other failure.
        """
        import openai  # a dependency of litellm; every litellm exception derives from openai.OpenAIError

        retry = Retrier(self.settings.retry, deadline, self.sleep, self.limiter)
        started = time.monotonic()
        try:
            response, raw, streamed = retry(self._send, messages, tools, deadline)
        except _CutShort as e:
            raise retry.out_of_time(self.name, e.sent, e.status) from e.__cause__
        except openai.OpenAIError as e:
            raise retry.gave_up(self.name, e) from e
        latency = time.monotonic() - started - sum(a.rate_limited for a in retry.attempts)
        body = as_dict(response)
        # Tokens as litellm normalised them, but only when the provider reported some: litellm fills a
        # missing usage block with zeros or its own estimate. A stream's come from the provider's chunks.
        if streamed is not None:
            reported, counts = streamed.usage is not None, streamed.usage
        else:
            reported, counts = reported_in(raw, body.get("usage") or {}), body.get("usage")
        usage = usage_from(counts, reported, raw, anthropic=route(self.settings.model).startswith("anthropic/"))
        try:
            parsed = parse_completion(body, latency=latency, usage=self._costed(usage, response), raw=raw,
                                      unwrap=self.settings.unwrap_calls)
        except ProviderError as e:  # an answer with no reply in it
            raise ProviderError(f"{self.name}: {e}", ErrorKind.MALFORMED_RESPONSE, None, tuple(retry.attempts)) from e
        if streamed is not None:  # litellm's assembled stream has only its own finish reason, or a stop reason it kept
            parsed = replace(parsed, native_finish_reason=streamed.native_finish_reason or parsed.native_finish_reason)
        if not body.get("choices"):  # no choice at all: an empty reply, no message for the history
            return replace(parsed, ttft=streamed.ttft if streamed else None, streamed=streamed is not None,
                           attempts=tuple(retry.attempts))
        message = body["choices"][0]["message"]  # parse_completion made sure there is one
        history = provider_message(message, parsed.tool_calls, _sent_message(raw))
        if self._echo is not None:
            self._echo.keep(history, raw)
        return replace(parsed, message=history, reasoning=reasoning_text(message),
                       ttft=streamed.ttft if streamed else None, streamed=streamed is not None,
                       attempts=tuple(retry.attempts))

    def _send(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], deadline: float | None
    ) -> tuple[Any, dict[str, Any] | None, Streamed | None]:
        """One attempt: the ModelResponse, the raw response body (None when litellm kept none or the
        reply streamed) and, for a stream, what else it told (usage reported, time to first token).

        Its timeout is ``settings.timeout`` or the time left before ``deadline``, whichever is
        less (for a stream, per read); raises _CutShort when no time is left or the deadline cut it short,
        and NotAReply when the answer is an HTML page sent with a success status (runner.providers.page).
        """
        import openai

        from runner.providers.page import NotAReply, check_stream, page_under

        timeout = self.settings.timeout
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 0:
                raise _CutShort(sent=False)
        bodies: list[Any] = []

        def capture(details: dict[str, Any]) -> None:  # litellm's per-request logger hook
            if details.get("log_event_type") == "pre_api_call" and self._echo is not None:  # the body, before it goes
                self._echo.rewrite((details.get("additional_args") or {}).get("complete_input_dict"), messages)
            if details.get("log_event_type") == "post_api_call":
                bodies.append(details.get("original_response"))

        started = time.monotonic()
        try:
            with unlogged():
                response = self._litellm.completion(**self.request(messages, tools, timeout), logger_fn=capture)
            if self.settings.stream:
                check_stream(response)
                streamed = collect(response, self._litellm.stream_chunk_builder, started, deadline)
                return streamed.response, None, streamed
        except openai.APITimeoutError as e:
            if timeout < self.settings.timeout:
                raise _CutShort(sent=True) from e
            raise
        except NotAReply:
            raise
        except openai.OpenAIError as e:
            page = page_under(e)
            if page is not None:
                raise page from e
            raise
        except PastDeadline as e:
            raise _CutShort(sent=True, status=200) from e
        return response, _json_object(bodies[-1] if bodies else None), None

    def request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], timeout: float | None = None
    ) -> dict[str, Any]:
        """The keyword arguments of ``litellm.completion`` for one request (``timeout`` in seconds, default
        ``settings.timeout``); they hold the API key, so never log them."""
        s = self.settings
        kwargs: dict[str, Any] = {**s.params, "model": route(s.model), "messages": messages,
                                  "timeout": s.timeout if timeout is None else timeout, "num_retries": 0,
                                  "max_retries": 0, "stream": s.stream}
        if s.stream:  # litellm asks for usage by itself only from OpenAI's own host
            kwargs["stream_options"] = {"include_usage": True}
        if tools:
            kwargs["tools"] = tools
        optional = {"api_base": s.api_base, "api_key": api_key(s), "temperature": s.temperature,
                    "max_tokens": s.max_tokens}
        kwargs.update({k: v for k, v in optional.items() if v is not None})
        return kwargs

    @staticmethod
    def _costed(usage: Usage | None, response: Any) -> Usage | None:
        """``usage`` with the USD cost litellm priced ``response`` at from its model table (it does so on
        every response); cost stays None for a model not in the table, when the tokens are unknown, and for
        a price that is no finite number of at least 0 (a run file holds no other)."""
        if usage is None or usage.prompt_tokens is None or usage.completion_tokens is None:
            return usage
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool) and 0 <= cost <= sys.float_info.max:
            return replace(usage, cost=float(cost))
        return usage


class _CutShort(Exception):
    """An attempt had no time left before the run's deadline (``sent`` False), or the deadline cut it short
    (``sent`` True; ``status`` 200 when it was a stream that had begun, else None).

    Not an ``openai.OpenAIError``, so it is never retried.
    """

    def __init__(self, sent: bool, status: int | None = None) -> None:
        super().__init__()
        self.sent = sent
        self.status = status


def _json_object(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, (str, bytes)):
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    return None


def _sent_message(raw: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The assistant message of an OpenAI-compatible raw body (``choices[0].message``), else None."""
    choices = raw.get("choices") if isinstance(raw, Mapping) else None
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else None
    message = first.get("message") if first is not None else None
    return message if isinstance(message, Mapping) else None
