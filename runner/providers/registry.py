"""Providers: name -> a factory that makes a fresh provider for each run.

A ``-p`` value is ``scripted``, an alias from ``tooltrial.yml``, or a litellm
model string (``ollama/qwen3``, ``openai/gpt-4o``, ``anthropic/claude-...``).
Resolving a live one imports litellm (the run is going to use it); resolving
``scripted`` never does.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from runner.errors import UserError
from runner.names import SCRIPTED, provider_form
from runner.providers.base import Provider, ProviderError
from runner.providers.precheck import KEY_HINT, MODEL_HINT, precheck
from runner.providers.scripted import ScriptedProvider
from runner.spec.case import Case

if TYPE_CHECKING:
    from runner.providers.ratelimit import RateLimiter
    from runner.providers.settings import ModelSettings
    from runner.spec.config import Config

@dataclass(frozen=True)
class ProviderSpec:
    """A provider arm: the label shown in output, a factory called once per run (a live one hands every run
    the same stateless provider), whether the agent
    loop runs tool calls a reply wrote as text (an alias's ``recover_text_calls``), and how many runs of it
    may go at once (``max_concurrency``, None: no limit of its own; runner.run.engine shares the slots), and
    ``cache_identity``, what names it in a response cache key (runner.providers.cache; None: never cached,
    as the scripted provider, whose replies are the case's own), and ``limited``, the factory of a run whose
    tries wait for the suite's rate limiter of the provider (runner.providers.ratelimit; None: it sends no
    request a rate limit applies to, as the scripted provider)."""

    name: str
    create: Callable[[Case], Provider]
    recover_text_calls: bool = False
    max_concurrency: int | None = None
    cache_identity: Mapping[str, Any] | None = None
    limited: Callable[[Case, RateLimiter], Provider] | None = None


def _scripted(case: Case) -> Provider:
    if case.script is None:
        raise ProviderError(f"case {case.full_id} has no script: the scripted provider needs one")
    return ScriptedProvider(case.script, None if case.user is not None else len(case.turns))  # a simulated user's turns vary


def resolve_provider(name: str, config: Config | None = None, verbose: bool = False,
                     stream: bool = False) -> ProviderSpec:
    """Turn a ``-p`` value into a ProviderSpec; with ``stream`` a live model streams its replies
    whatever its alias says (``run --stream``).

    Order (runner.names.provider_form): ``scripted``; an alias under ``providers:``
    in ``config``; a model string with a ``/``; a bare name litellm knows as a model (``gpt-4o``).
    Raises UserError (exit 4) for what runner.providers.precheck refuses (before litellm loads), a
    bare provider name (``-p ollama``) with no alias of that name, an unknown provider or model,
    or a missing API key; errors about an alias point at its entry in the config file.
    """
    precheck(name, config)  # what needs no litellm, told before it loads
    aliases = dict(config.providers) if config else {}
    form = provider_form(name, aliases)
    if form == "scripted":
        return ProviderSpec(SCRIPTED, _scripted)
    from runner.providers.litellm import ModelSettings, model_problem

    if config is not None and form == "alias":
        settings = aliases[name]
        problem = model_problem(settings, verbose)
        if problem:
            raise config.error(problem, ["providers", name, "model"], hint=_fix(problem))
        return _live(name, settings, verbose, stream)
    settings = ModelSettings(model=name)
    problem = model_problem(settings, verbose)
    if problem:
        raise UserError(f"cannot use provider {name!r}: {problem}", hint=_fix(problem))
    return _live(name, settings, verbose, stream)


def _live(name: str, settings: ModelSettings, verbose: bool, stream: bool) -> ProviderSpec:
    from runner.providers.litellm import is_local, route

    if stream:
        settings = dataclasses.replace(settings, stream=True)
    identity = {"provider": name, "model": route(settings.model), "api_base": settings.api_base,
                "temperature": settings.temperature, "max_tokens": settings.max_tokens,
                "params": dict(settings.params), "stream": settings.stream}  # never the key: it picks no reply
    shared = _Shared(settings, name, verbose)
    return ProviderSpec(name, shared.create, settings.recover_text_calls,
                        settings.concurrency_limit(is_local(settings.api_base)), identity, shared.limited)


class _Shared:
    """A live arm's factories. A provider keeps nothing between requests: one serves every run of a process
    (one a limiter, which is one a suite). Pickles as its settings, so a worker process (runner.run.portable)
    makes its own providers."""

    def __init__(self, settings: ModelSettings, name: str, verbose: bool) -> None:
        self.settings, self.name, self.verbose = settings, name, verbose
        self._made: dict[int, tuple[RateLimiter | None, Provider]] = {}  # by id of the limiter, kept alive
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[_Shared], tuple[ModelSettings, str, bool]]:
        return _Shared, (self.settings, self.name, self.verbose)

    def create(self, case: Case) -> Provider:
        """The process's provider of this arm for runs without a rate limiter."""
        return self._provider(None)

    def limited(self, case: Case, limiter: RateLimiter) -> Provider:
        """The process's provider of this arm whose tries wait for ``limiter``."""
        return self._provider(limiter)

    def _provider(self, limiter: RateLimiter | None) -> Provider:
        from runner.providers.litellm import LiteLLMProvider

        with self._lock:
            made = self._made.get(id(limiter))
            if made is None:
                made = self._made[id(limiter)] = (limiter, LiteLLMProvider(self.settings, self.name, self.verbose,
                                                                           limiter=limiter))
            return made[1]


def _fix(problem: str) -> str:
    return MODEL_HINT if "knows no provider" in problem else KEY_HINT
