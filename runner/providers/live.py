"""The kinds of provider that litellm reaches: an alias under ``providers:`` in tooltrial.yml
(``ALIAS``), a model string ``provider/model`` (``MODEL``), and a bare name that only litellm can
tell apart (``BARE``: a model it knows, ``gpt-4o``, or a provider without its model, ``ollama``).

Each resolves to a live arm made from its ModelSettings (an alias's, or the name as the model); its
prechecks are runner.providers.precheck's, its probe runner.providers.probe's. litellm is imported
only when a name resolves, or when a Ray suite names the keys its workers need.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.errors import UserError
from runner.providers.kind import ProviderKind, ProviderSpec
from runner.providers.precheck import KEY_HINT, MODEL_HINT, precheck_alias, precheck_bare, precheck_model
from runner.providers.settings import ModelSettings

if TYPE_CHECKING:
    from runner.providers.base import Provider
    from runner.providers.probe import Diagnosis
    from runner.providers.ratelimit import RateLimiter
    from runner.spec.case import Case
    from runner.spec.config import Config


def _alias(name: str, config: Config | None) -> ModelSettings:
    assert config is not None
    return config.providers[name]


def _resolve_alias(name: str, config: Config | None, verbose: bool, stream: bool) -> ProviderSpec:
    """An alias's arm; an error about it points at its entry in the config file."""
    from runner.providers.litellm import model_problem

    assert config is not None
    settings = config.providers[name]
    problem = model_problem(settings, verbose)
    if problem:
        raise config.error(problem, ["providers", name, "model"], hint=_fix(problem))
    return _live(name, settings, verbose, stream)


def _resolve_model(name: str, config: Config | None, verbose: bool, stream: bool) -> ProviderSpec:
    """The arm of a model string or a bare name; UserError for a provider or model litellm does not know,
    or a missing API key."""
    from runner.providers.litellm import model_problem

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
    (one a limiter, which is one a suite). Pickles as its settings, so a worker process (runner.suite.portable)
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


def _probe_alias(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
                 refused: str | None) -> Diagnosis:
    from runner.providers.probe import diagnose

    return diagnose(name, _alias(name, config), call, environ, verbose, refused)


def _probe_model(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
                 refused: str | None) -> Diagnosis:
    from runner.providers.probe import diagnose

    return diagnose(name, ModelSettings(model=name), call, environ, verbose, refused)


def _probe_bare(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
                refused: str | None) -> Diagnosis:
    from runner.providers.probe import diagnose

    return diagnose(name, None, call, environ, verbose, refused)


def _alias_keys(name: str, config: Config | None) -> list[str]:
    return _keys(_alias(name, config))


def _model_keys(name: str, config: Config | None) -> list[str]:
    return _keys(ModelSettings(model=name))


def _keys(settings: ModelSettings) -> list[str]:
    """The alias's ``api_key_env``, then the key variables litellm reads for the model: what it finds
    missing in an empty environment."""
    from runner.providers.litellm import _validate_environment, route
    from runner.providers.litellm_load import load_litellm

    found = _validate_environment(load_litellm(), route(settings.model), {})
    litellm_keys = [str(name) for name in found.get("missing_keys") or ()]
    return [settings.api_key_env, *litellm_keys] if settings.api_key_env else litellm_keys


ALIAS = ProviderKind("alias", "an alias under providers: in tooltrial.yml", None, _resolve_alias, _probe_alias,
                     precheck_alias, _alias_keys, live=True)
MODEL = ProviderKind("model", "a litellm model string, provider/model", re.compile(r"[^/]*/.*", re.DOTALL),
                     _resolve_model, _probe_model, precheck_model, _model_keys, live=True)
BARE = ProviderKind("bare", "a name only litellm can tell apart", re.compile(r".*", re.DOTALL), _resolve_model,
                    _probe_bare, precheck_bare, _model_keys, live=True, litellm_decides=True)
