"""What a kind of provider is, and what resolving a ``-p`` value gives.

A ``ProviderKind`` is one row of the table in runner.providers.registry (``PROVIDER_KINDS``): the
names it takes and what tooltrial does with one of them: check it before litellm loads, resolve it
to a ``ProviderSpec``, probe it for ``tooltrial doctor``, name the keys a worker needs, and whether
it may judge or play a simulated user. A new kind is a module of its own that makes one of these,
and one row in the table (or one ``register_provider_kind`` call).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runner.providers.base import Provider
    from runner.providers.probe import Diagnosis
    from runner.providers.ratelimit import RateLimiter
    from runner.spec.case import Case
    from runner.spec.config import Config


@dataclass(frozen=True)
class ProviderSpec:
    """A provider arm: the label shown in output, a factory called once per run (a live one hands every run
    the same stateless provider), whether the agent
    loop runs tool calls a reply wrote as text (an alias's ``recover_text_calls``), and how many runs of it
    may go at once (``max_concurrency``, None: no limit of its own; runner.suite.engine shares the slots), and
    ``cache_identity``, what names it in a response cache key (runner.providers.cache; None: never cached,
    as the scripted provider, whose replies are the case's own), and ``limited``, the factory of a run whose
    tries wait for the suite's rate limiter of the provider (runner.providers.ratelimit; None: it sends no
    request a rate limit applies to, as the scripted provider), and ``identity``, what it is as a judge
    (``judge_identity``; None: taken from ``cache_identity``). It travels to worker processes and Ray
    tasks pickled, so its factories are module-level functions or objects that pickle."""

    name: str
    create: Callable[[Case], Provider]
    recover_text_calls: bool = False
    max_concurrency: int | None = None
    cache_identity: Mapping[str, Any] | None = None
    limited: Callable[[Case, RateLimiter], Provider] | None = None
    identity: Mapping[str, Any] | None = None

    @property
    def judge_identity(self) -> dict[str, Any]:
        """What this provider is as a judge, which keys its calibrations (runner.output.calibrations): its
        ``identity`` (a scripted judge's: the SHA-256 of its rules file's text); else the model string and the
        request parameters that change its answers (``temperature``, ``max_tokens``, ``params``) of its
        ``cache_identity``, never the name it was given (an alias), where it is served (``api_base``) nor
        ``stream``; else its name."""
        if self.identity is not None:
            return dict(self.identity)
        if self.cache_identity is not None:
            return {k: self.cache_identity.get(k) for k in _ANSWERING}
        return {"provider": self.name}


_ANSWERING = ("model", "temperature", "max_tokens", "params")  # what changes a live judge's answers


def _no_precheck(name: str, config: Config | None, environ: Mapping[str, str]) -> None:
    """A kind's ``precheck`` when nothing about its names can be wrong before it resolves."""


def _no_keys(name: str, config: Config | None) -> list[str]:
    """A kind's ``key_variables`` when its providers read no key from the environment."""
    return []


@dataclass(frozen=True)
class ProviderKind:
    """One kind of ``-p`` value (also ``--judge``, ``default_provider`` and ``judge`` in tooltrial.yml,
    ``expect.judge.model``, ``user.model``). Every operation takes the name and the project config
    (None: there is none).

    Attributes:
        name: the kind's own name (``scripted``, ``alias``, ``model``, ``bare``).
        about: what its names are, in a few words (``the built-in offline provider``); an alias of a name
            a kind ahead of the aliases takes is refused with it (``'scripted' is the built-in offline provider``).
        pattern: the names it takes, matched against the whole name (runner.names.provider_kind); None for
            the kind that takes the aliases under ``providers:`` in tooltrial.yml.
        resolve: ``(name, config, verbose, stream) -> ProviderSpec``, after ``precheck`` passed; ``stream``
            is ``run --stream``. Raises UserError (exit 4) for a name it cannot use.
        probe: ``(name, config, call, environ, verbose, refused) -> Diagnosis``, what ``tooltrial doctor``
            says of it (runner.providers.probe); ``call``: send one tiny request; ``refused``: what ``run``
            says of its key before sending anything (a failing key check). Never raises for what a
            provider does.
        precheck: ``(name, config, environ) -> None``, what is wrong with the name that is told before
            litellm loads; raises UserError (exit 4).
        key_variables: ``(name, config) -> [variable]``, the environment variables its providers read
            keys from, which a Ray task is handed (runner.suite.rayexec).
        live: its providers reach a model through litellm: a worker process preloads litellm for it and
            ``doctor --call`` loads it first.
        litellm_decides: only litellm can tell whether a name of it is a model (a bare name): tooltrial.yml
            refuses it as an unknown provider, and ``doctor`` resolves it, loading litellm, to say what
            ``run`` would.
        not_a_judge: why it cannot judge (``--judge``, ``judge:``, ``expect.judge.model`` refuse it with
            this), or None when it can.
        user: ``(case) -> Provider``, the simulated user it plays for ``case`` without being resolved (the
            scripted provider replays ``user.script``), or None: a ``user.model`` of it is resolved as an
            arm's provider is.
    """

    name: str
    about: str
    pattern: re.Pattern[str] | None
    resolve: Callable[[str, Config | None, bool, bool], ProviderSpec]
    probe: Callable[[str, Config | None, bool, Mapping[str, str], bool, str | None], Diagnosis]
    precheck: Callable[[str, Config | None, Mapping[str, str]], None] = _no_precheck
    key_variables: Callable[[str, Config | None], list[str]] = _no_keys
    live: bool = False
    litellm_decides: bool = False
    not_a_judge: str | None = None
    user: Callable[[Case], Provider] | None = None
