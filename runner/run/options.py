"""What every run of an invocation shares: its arm (provider x prompt, x tool definitions, x faults) and its options.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.checks.base import JudgeSettings
from runner.providers.cache import ResponseCache
from runner.providers.kind import ProviderSpec
from runner.providers.redact import Secrets
from runner.run.events import Listener
from runner.run.prompts import PromptTemplate
from runner.run.record import arm_label
from runner.sandbox.command import Sandbox
from runner.spec.faults import FaultProfile
from runner.spec.tooldefs import ToolDefs

DEFAULT_RUN_TIMEOUT = 600.0


DEFAULT_COMMAND_TIMEOUT = 60.0


@dataclass(frozen=True)
class Arm:
    """One column of a comparison: a provider, a system prompt template, with ``-T`` the tool definitions the model
    is shown (None: the tools' own) and, with ``run --faults``, a fault profile (runner.spec.faults; None: each
    case's own faults, no fault dimension)."""

    provider: ProviderSpec
    prompt: PromptTemplate
    tools: ToolDefs | None = None
    faults: FaultProfile | None = None

    @property
    def tool_defs(self) -> str | None:
        """The tool definitions' name (RunRecord.tool_defs), None for the tools' own."""
        return None if self.tools is None else self.tools.name

    @property
    def fault_arm(self) -> str | None:
        """The fault arm's name (RunRecord.faults.arm: ``off``, ``case`` or a profile's), None without ``--faults``."""
        return None if self.faults is None else self.faults.name

    @property
    def label(self) -> str:
        """``provider · prompt``, then ``· TOOLS`` with ``-T`` and ``· faults NAME`` with a fault arm, as every run
        of the arm records it (RunRecord.arm)."""
        return arm_label(self.provider.name, self.prompt.name, self.tool_defs, self.fault_arm)


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every run. Times are in seconds; ``timeout`` overrides each case's.

    ``judges`` are the judge providers by model name, None for the default (runner.checks.judge);
    ``judging`` how they judge (runner.checks.base.JudgeSettings: repeats, calibrations);
    ``users`` the simulated users' live models by name (runner.run.simuser.resolve_users).

    Setting ``cancel`` (e.g. on Ctrl-C) stops running runs before their next model request or tool call
    (and starts no further one: runner.suite). ``listener``, when given, is told what each run does as it
    happens (runner.run.events), in the run's thread. ``cache``, when given (``run --cache``), keeps and
    replays the replies of every provider that has a ``cache_identity`` (runner.providers.cache).
    ``secrets`` are the values every run's record, events and cached replies are scrubbed of (runner.providers.redact).
    """

    sandbox: Sandbox
    keep: bool = False
    timeout: float | None = None
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)
    judging: JudgeSettings = field(default_factory=JudgeSettings)
    users: Mapping[str, ProviderSpec] = field(default_factory=dict)
    cancel: threading.Event = field(default_factory=threading.Event)
    listener: Listener | None = None
    cache: ResponseCache | None = None
    secrets: Secrets = field(default_factory=Secrets, repr=False)
