"""What ``tooltrial doctor`` finds out about one provider: whether its key is set, whether its
server answers, and (asked for) whether the model makes native tool calls.

The key and endpoint checks import nothing heavy and take at most ``PROBE_TIMEOUT`` seconds, so
"Ollama is not running" comes in about a second, not after litellm has loaded and every run has
retried. A key's value is never printed nor logged: only whether its variable is set. The tool
check is one tiny request through litellm (runner.providers.litellm), tried once.
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from runner.providers.base import ProviderError
from runner.providers.redact import Secrets
from runner.providers.retry import RetryPolicy
from runner.providers.settings import ModelSettings

PROBE_TIMEOUT = 2.5  # seconds for an endpoint to answer
CALL_TIMEOUT = 60.0  # seconds for the one tool-call request (a local model may have to load first)
OK, FAIL, SKIPPED = "ok", "fail", "not checked"
PING = {"type": "function", "function": {
    "name": "ping", "description": "Answer a ping. Call it whenever you are asked to ping.",
    "parameters": {"type": "object", "properties": {"word": {"type": "string", "description": "the word to send back"}},
                   "required": ["word"]}}}
ASK = [{"role": "user", "content": "Call the ping tool with word set to \"pong\". Reply with the tool call only."}]
LLAMA_CPP = ("a llama.cpp server ignores the tools unless started with --jinja and a chat template that supports "
             "tools (docs/providers.md)")  # said when a local OpenAI-compatible server answers without a tool call


@dataclass(frozen=True)
class Server:
    """What tooltrial knows of a litellm provider prefix: its usual key variable (None: none needed),
    its default server and how that server lists models (``openai``: GET ``/models``, ``ollama``:
    GET ``/api/tags``, ``anthropic``: GET ``/v1/models``, ``gemini``: GET ``/models``)."""

    key: str | None
    base: str | None
    style: str = "openai"


# From each provider's API reference (and litellm's provider docs for the variable names).
SERVERS: Mapping[str, Server] = {
    "openai": Server("OPENAI_API_KEY", "https://api.openai.com/v1"),
    "anthropic": Server("ANTHROPIC_API_KEY", "https://api.anthropic.com", "anthropic"),
    "gemini": Server("GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta", "gemini"),
    "ollama": Server(None, "http://localhost:11434", "ollama"),
    "ollama_chat": Server(None, "http://localhost:11434", "ollama"),
    "lm_studio": Server(None, "http://localhost:1234/v1"),
    "groq": Server("GROQ_API_KEY", "https://api.groq.com/openai/v1"),
    "mistral": Server("MISTRAL_API_KEY", "https://api.mistral.ai/v1"),
    "deepseek": Server("DEEPSEEK_API_KEY", "https://api.deepseek.com/v1"),
    "openrouter": Server("OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"),
    "xai": Server("XAI_API_KEY", "https://api.x.ai/v1"),
    "together_ai": Server("TOGETHERAI_API_KEY", "https://api.together.xyz/v1"),
    "fireworks_ai": Server("FIREWORKS_AI_API_KEY", "https://api.fireworks.ai/inference/v1"),
}


@dataclass(frozen=True)
class Finding:
    """One check: ``check`` (``key``, ``endpoint``, ``tools``), ``status`` (``ok``, ``fail``, ``not
    checked``) and ``detail``, a sentence for the user (never a key's value)."""

    check: str
    status: str
    detail: str


@dataclass(frozen=True)
class Diagnosis:
    """One provider: its ``name`` (a ``-p`` value or alias), the litellm ``model`` it sends, and what was found."""

    name: str
    model: str
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """No check failed (one not checked is no failure)."""
        return all(f.status != FAIL for f in self.findings)


def diagnose(name: str, settings: ModelSettings | None, call: bool, environ: Mapping[str, str],
             verbose: bool = False, refused: str | None = None) -> Diagnosis:
    """Check the live provider ``name`` (the probe of litellm's kinds, runner.providers.live): ``settings``
    are what reaches its model (an alias's, or the model string's), None for a bare name, which only litellm
    can tell apart; with ``call``, also send one tiny request with one tool. Never raises for what the provider
    does; ``environ`` is where key variables are read. ``refused`` is what ``tooltrial run`` says of the name's
    key before it sends anything (runner.cli.doctor): a failing key check, and no request."""
    model = settings.model if settings else name
    if refused is not None:
        return Diagnosis(name, model, (Finding("key", FAIL, refused),))
    if settings is None:
        bare = "a bare model name: litellm picks its provider; give provider/model to check it"
        return Diagnosis(name, name, (Finding("key", SKIPPED, bare),))
    server = SERVERS.get(settings.model.partition("/")[0]) if "/" in settings.model else None
    key = _key(settings, server, environ)
    endpoint = _endpoint(settings, server, environ)
    if not call:
        tools = Finding("tools", SKIPPED, "--call sends one tiny request to find out")
    elif endpoint.status == FAIL or key.status == FAIL:
        tools = Finding("tools", SKIPPED, f"the {'endpoint' if endpoint.status == FAIL else 'key'} check failed")
    else:
        tools = _tool_call(name, settings, verbose)
    return Diagnosis(name, settings.model, (key, endpoint, tools))


def _key_variable(settings: ModelSettings, server: Server | None) -> str | None:
    return settings.api_key_env or (server.key if server else None)


def _key(settings: ModelSettings, server: Server | None, environ: Mapping[str, str]) -> Finding:
    from runner.providers.litellm import is_local, key_from  # cheap, but kept off every command's imports

    variable = _key_variable(settings, server)
    base = settings.api_base or (server.base if server else None)
    if key_from(variable, environ):
        return Finding("key", OK, f"{variable} is set")
    if base and is_local(base):
        return Finding("key", OK, "none needed: a server on this machine")
    if variable is None:
        if server is not None:
            return Finding("key", OK, "none needed")
        return Finding("key", SKIPPED, f"tooltrial does not know the key variable of {settings.model!r}: "
                                       "set api_key_env on its alias")
    if settings.api_base and not settings.api_key_env:
        return Finding("key", SKIPPED, f"{variable} is not set (a server of your own may take none)")
    return Finding("key", FAIL, f"{variable} is not set: export it in the shell that runs tooltrial")


def _endpoint(settings: ModelSettings, server: Server | None, environ: Mapping[str, str]) -> Finding:
    """GET the server's model list: any HTTP answer but 401/403 (and for Ollama, one without the model)
    is a server that answers."""
    from runner.providers.litellm import key_from

    base = (settings.api_base or (server.base if server else None) or "").rstrip("/")
    if not base:
        return Finding("endpoint", SKIPPED, f"no api_base, and tooltrial knows no default server for {settings.model!r}")
    style = server.style if server else "openai"
    url = base + {"ollama": "/api/tags", "anthropic": "/models" if base.endswith("/v1") else "/v1/models"}.get(style, "/models")
    secret = key_from(_key_variable(settings, server), environ)
    ollama = style == "ollama"
    request = urllib.request.Request(url, headers=_auth(style, secret))
    started = time.monotonic()
    try:
        with urllib.request.build_opener(_Stay).open(request, timeout=PROBE_TIMEOUT) as response:
            status, body = response.status, response.read(1_000_000)
    except urllib.error.HTTPError as e:
        status, body = e.code, b""
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        if isinstance(reason, (TimeoutError, socket.timeout)):
            why = f"no answer within {PROBE_TIMEOUT:g} s"
        elif isinstance(reason, ConnectionRefusedError):
            why = "connection refused"
        elif isinstance(reason, socket.gaierror):
            why = f"cannot resolve {urllib.parse.urlsplit(url).hostname}"
        else:
            why = str(reason)
        if ollama:
            return Finding("endpoint", FAIL, f"Ollama is not running at {base} ({why}): start it with 'ollama serve'")
        return Finding("endpoint", FAIL, f"{url} does not answer ({why})")
    took = f"{time.monotonic() - started:.2f} s"
    if status in (401, 403):
        refused = "refused the key" if secret else "wants a key"
        return Finding("endpoint", FAIL, f"{url} {refused} (HTTP {status})")
    if ollama and status == 200:
        return _pulled(settings.model, body, base, took)
    if status < 400 or status == 404:  # a server of one's own may list no models there: it answered
        return Finding("endpoint", OK, f"{url} answers (HTTP {status}, {took})")
    return Finding("endpoint", FAIL, f"{url} answers HTTP {status}")


class _Stay(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the key goes to the configured server only (a redirect is an answer)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _auth(style: str, secret: str | None) -> dict[str, str]:
    if not secret:
        return {}
    if style == "anthropic":
        return {"x-api-key": secret, "anthropic-version": "2023-06-01"}
    if style == "gemini":
        return {"x-goog-api-key": secret}
    return {"Authorization": f"Bearer {secret}"}


def _pulled(model: str, body: bytes, base: str, took: str) -> Finding:
    """Ollama answered ``/api/tags``: whether the model is among those pulled (``qwen3`` is ``qwen3:latest``)."""
    wanted = model.partition("/")[2]
    try:
        names = [m.get("name", "") for m in json.loads(body).get("models", [])]
    except (ValueError, AttributeError):
        return Finding("endpoint", OK, f"Ollama answers at {base} ({took})")
    tagged = wanted if ":" in wanted else f"{wanted}:latest"
    if wanted in names or tagged in names:
        return Finding("endpoint", OK, f"Ollama answers at {base} and has {wanted} ({took})")
    return Finding("endpoint", FAIL, f"Ollama answers at {base} but has no model {wanted}: 'ollama pull {wanted}'")


def _tool_call(name: str, settings: ModelSettings, verbose: bool) -> Finding:
    """One request with the ``ping`` tool, tried once: whether the reply calls it natively. What the server
    said (an error, the reply) is told with the keys tooltrial knows redacted (runner.providers.redact)."""
    from runner.providers.litellm import LiteLLMProvider
    from runner.providers.textcalls import find_text_calls

    secrets = Secrets.known(os.environ, [settings.api_key_env] if settings.api_key_env else [])
    once = replace(settings, retry=RetryPolicy(attempts=1), timeout=min(settings.timeout, CALL_TIMEOUT), stream=False)
    try:
        reply = LiteLLMProvider(once, name, verbose).complete(list(ASK), [PING], time.monotonic() + CALL_TIMEOUT)
    except ProviderError as e:
        return Finding("tools", FAIL, f"the request failed: {secrets.redact(str(e).splitlines()[0])[0]}")
    if any(c.name == "ping" for c in reply.tool_calls):
        return Finding("tools", OK, "native tool calls")
    cause = f"; {LLAMA_CPP}" if _local_openai(settings) else ""
    if find_text_calls(reply.content, ["ping"]):
        return Finding("tools", FAIL, "wrote the call as text, not as a tool call: "
                                      f"set recover_text_calls: true on its alias to run such calls{cause}")
    said = secrets.redact(" ".join((reply.content or "").split()))[0][:80]
    return Finding("tools", FAIL, f"replied without calling the tool{': ' + repr(said) if said else ''}{cause}")


def _local_openai(settings: ModelSettings) -> bool:
    """Whether the model is an OpenAI-compatible server on this machine (llama.cpp's among them)."""
    from runner.providers.litellm import is_local

    return settings.model.partition("/")[0] == "openai" and is_local(settings.api_base)


def as_dict(diagnosis: Diagnosis) -> dict[str, Any]:
    """JSON-ready: ``{name, model, ok, findings: [{check, status, detail}]}``."""
    return {"name": diagnosis.name, "model": diagnosis.model, "ok": diagnosis.ok,
            "findings": [{"check": f.check, "status": f.status, "detail": f.detail} for f in diagnosis.findings]}
