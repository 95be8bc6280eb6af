"""Providers: name -> a factory that makes a fresh provider for each run.

A ``-p`` value is ``scripted``, an alias from ``tooltrial.yml``, or a litellm
model string (``ollama/qwen3``, ``openai/gpt-4o``, ``anthropic/claude-...``).
Resolving a live one imports litellm (the run is going to use it); resolving
``scripted`` never does.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from runner.errors import UserError, did_you_mean
from runner.names import SCRIPTED, provider_form
from runner.providers.base import Provider, ProviderError
from runner.providers.scripted import ScriptedProvider
from runner.spec.case import Case

if TYPE_CHECKING:
    from runner.providers.settings import ModelSettings
    from runner.spec.config import Config

_MODEL_HINT = "name a model as provider/model, e.g. -p ollama/qwen3 or -p openai/gpt-4o, or an alias from tooltrial.yml"


@dataclass(frozen=True)
class ProviderSpec:
    """A provider arm: the label shown in output, a factory called once per run, whether the agent
    loop runs tool calls a reply wrote as text (an alias's ``recover_text_calls``), and how many runs of it
    may go at once (``max_concurrency``, None: no limit of its own; runner.run.engine shares the slots)."""

    name: str
    create: Callable[[Case], Provider]
    recover_text_calls: bool = False
    max_concurrency: int | None = None


def _scripted(case: Case) -> Provider:
    if case.script is None:
        raise ProviderError(f"case {case.full_id} has no script: the scripted provider needs one")
    return ScriptedProvider(case.script)


def resolve_provider(name: str, config: Config | None = None, verbose: bool = False,
                     stream: bool = False) -> ProviderSpec:
    """Turn a ``-p`` value into a ProviderSpec; with ``stream`` a live model streams its replies
    whatever its alias says (``run --stream``).

    Order (runner.names.provider_form): ``scripted``; an alias under ``providers:``
    in ``config``; a model string with a ``/``; a bare name litellm knows as a model (``gpt-4o``).
    Raises UserError (exit 4) for a bare provider name (``-p ollama``) with no
    alias of that name, an unknown provider or model, or a missing API key;
    errors about an alias point at its entry in the config file.
    """
    aliases = dict(config.providers) if config else {}
    form = provider_form(name, aliases)
    if form == "scripted":
        return ProviderSpec(SCRIPTED, _scripted)
    from runner.providers.litellm import ModelSettings, is_provider_name, model_problem

    if config is not None and form == "alias":
        settings = aliases[name]
        missing = _missing_key(settings)
        if missing:
            raise config.error(missing, ["providers", name, "api_key_env"], hint=_fix(missing))
        problem = model_problem(settings, verbose)
        if problem:
            raise config.error(problem, ["providers", name, "model"], hint=_fix(problem))
        return _live(name, settings, verbose, stream)
    if form == "bare":
        if is_provider_name(name, verbose):
            raise UserError(f"provider {name!r} needs a model",
                            hint=f"use -p {name}/<model>, or add an alias {name!r} under providers: in tooltrial.yml")
        close = did_you_mean(name, [*aliases, SCRIPTED])
        if close:
            raise UserError(f"unknown provider {name!r}", hint=close)
    settings = ModelSettings(model=name)
    problem = model_problem(settings, verbose)
    if problem:
        raise UserError(f"cannot use provider {name!r}: {problem}", hint=_fix(problem))
    return _live(name, settings, verbose, stream)


def _live(name: str, settings: ModelSettings, verbose: bool, stream: bool) -> ProviderSpec:
    from runner.providers.litellm import LiteLLMProvider, is_local

    if stream:
        settings = dataclasses.replace(settings, stream=True)
    return ProviderSpec(name, lambda case: LiteLLMProvider(settings, name, verbose), settings.recover_text_calls,
                        settings.concurrency_limit(is_local(settings.api_base)))


def _missing_key(settings: ModelSettings) -> str | None:
    """An ``api_key_env`` that is unset or blank, for a server that is not on this machine."""
    from runner.providers.litellm import is_local, key_from

    variable = settings.api_key_env
    if variable and not key_from(variable) and not is_local(settings.api_base):
        return f"environment variable {variable} is not set"
    return None


def _fix(problem: str) -> str:
    if "knows no provider" in problem:
        return _MODEL_HINT
    return "export the variable in the shell that runs tooltrial; agent commands never see it"
