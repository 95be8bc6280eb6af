"""What every run of an invocation shares: its arms (provider x prompt) and its options.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from runner.errors import UserError
from runner.redact import Secrets

from runner.providers.cache import ResponseCache
from runner.providers.kind import ProviderSpec
from runner.run.events import Listener
from runner.run.prompts import (
    PromptTemplate,
)
from runner.run.record import arm_label
from runner.run.shard import Shard
from runner.sandbox.command import Sandbox

DEFAULT_RUN_TIMEOUT = 600.0


DEFAULT_COMMAND_TIMEOUT = 60.0


DEFAULT_JOBS = 4


@dataclass(frozen=True)
class Arm:
    """One column of a comparison: a provider and a system prompt template."""

    provider: ProviderSpec
    prompt: PromptTemplate

    @property
    def label(self) -> str:
        """``provider · prompt``, as every run of the arm records it (RunRecord.arm)."""
        return arm_label(self.provider.name, self.prompt.name)


def make_arms(providers: Sequence[ProviderSpec], prompts: Sequence[PromptTemplate]) -> list[Arm]:
    """Every provider with every prompt, by provider then prompt.

    Raises UserError when two arms would share a label (runs, results and report rows are told
    apart by it): a provider given twice, two prompts named alike (runner.run.prompts.load_prompts
    names different files apart), or names that read alike joined (``a · b`` with ``c``, ``a`` with ``b · c``).
    """
    for names, flag, what in (([p.name for p in providers], "-p", "provider"), ([t.name for t in prompts], "-P", "prompt")):
        twice = next((name for name, count in Counter(names).items() if count > 1), None)
        if twice is not None:
            raise UserError(f"{what} {twice!r} is given twice with {flag}",
                            hint=f"give each {flag} once; to run each case more often, use --runs N")
    arms = [Arm(p, t) for p in providers for t in prompts]
    twice = next((label for label, count in Counter(a.label for a in arms).items() if count > 1), None)
    if twice is not None:
        raise UserError(f"two arms would both be labelled {twice!r}", hint="rename a prompt file or an alias")
    return arms


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every run. Times are in seconds; ``timeout`` overrides each case's.

    ``judges`` are the judge providers by model name, None for the default (runner.checks.judge);
    ``users`` the simulated users' live models by name (runner.run.simuser.resolve_users).

    ``jobs`` is how many runs go at once. Setting ``cancel`` (e.g. on Ctrl-C) starts
    no further run and stops running ones before their next model request or tool call.
    ``listener``, when given, is told what each run does as it happens (runner.run.events), in
    the run's thread. ``shard``, when given, keeps only that shard's runs of the matrix (``--shard``).
    ``cache``, when given (``run --cache``), keeps and replays the replies of every
    provider that has a ``cache_identity`` (runner.providers.cache).
    ``executor`` is where runs go (``local``: this machine, runner.run.executors); ``workers`` how many
    processes share them there (1: threads of this process; None: ``auto``, by the plan's size).
    With ``executor`` ``ray``, ``ray_address`` is the cluster (None: a local Ray for the run) and
    ``ray_env`` the provider keys its workers get (runner.run.rayexec); neither enters a record.
    ``secrets`` are the values every run's record, events and cached replies are scrubbed of (runner.redact).
    """

    sandbox: Sandbox
    keep: bool = False
    timeout: float | None = None
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)
    users: Mapping[str, ProviderSpec] = field(default_factory=dict)
    jobs: int = 1
    cancel: threading.Event = field(default_factory=threading.Event)
    listener: Listener | None = None
    shard: Shard | None = None
    cache: ResponseCache | None = None
    executor: str = "local"
    workers: int | None = 1
    ray_address: str | None = None
    ray_env: Mapping[str, str] = field(default_factory=dict, repr=False)  # keys: never printed
    secrets: Secrets = field(default_factory=Secrets, repr=False)
