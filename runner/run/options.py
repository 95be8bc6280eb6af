"""What every run of an invocation shares: its arms (provider x prompt) and its options.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Mapping

from runner.providers.registry import ProviderSpec
from runner.run.prompts import (
    PromptTemplate,
)
from runner.sandbox.command import Sandbox

DEFAULT_RUN_TIMEOUT = 600.0


DEFAULT_COMMAND_TIMEOUT = 60.0


DEFAULT_JOBS = 4


@dataclass(frozen=True)
class Arm:
    """One column of a comparison: a provider and a system prompt template."""

    provider: ProviderSpec
    prompt: PromptTemplate


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every run. Times are in seconds; ``timeout`` overrides each case's.

    ``judges`` are the judge providers by model name, None for the default (runner.checks.judge).

    ``jobs`` is how many runs go at once. Setting ``cancel`` (e.g. on Ctrl-C) starts
    no further run and stops running ones before their next model request or tool call.
    """

    sandbox: Sandbox
    keep: bool = False
    timeout: float | None = None
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)
    jobs: int = 1
    cancel: threading.Event = field(default_factory=threading.Event)
