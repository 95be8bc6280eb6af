"""How a suite's runs go: the options every run shares (runner.run.options.RunOptions) and the matrix's own
(how many at once, which shard, on which executor), and the arms of a suite.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from runner.errors import UserError
from runner.providers.kind import ProviderSpec
from runner.run.options import Arm, RunOptions
from runner.run.prompts import PromptTemplate
from runner.spec.faults import FaultProfile
from runner.spec.tooldefs import ToolDefs
from runner.suite.shard import Shard

DEFAULT_JOBS = 4


def make_arms(providers: Sequence[ProviderSpec], prompts: Sequence[PromptTemplate],
              tool_defs: Sequence[ToolDefs] = ()) -> list[Arm]:
    """Every provider with every prompt and every tool-definition file (``-T``; none: the tools' own), by
    provider, then prompt, then tool definitions.

    Raises UserError when two arms would share a label (runs, results and report rows are told
    apart by it): a provider given twice, two prompts or tool-definition files named alike
    (runner.run.prompts.load_prompts names different files apart), or names that read alike joined
    (``a · b`` with ``c``, ``a`` with ``b · c``).
    """
    for names, flag, what in (([p.name for p in providers], "-p", "provider"), ([t.name for t in prompts], "-P", "prompt"),
                              ([d.name for d in tool_defs], "-T", "tool-definition set")):
        twice = next((name for name, count in Counter(names).items() if count > 1), None)
        if twice is not None:
            raise UserError(f"{what} {twice!r} is given twice with {flag}",
                            hint=f"give each {flag} once; to run each case more often, use --runs N")
    each: list[ToolDefs | None] = [*tool_defs] or [None]
    arms = [Arm(p, t, tools=d) for p in providers for t in prompts for d in each]
    twice = next((label for label, count in Counter(a.label for a in arms).items() if count > 1), None)
    if twice is not None:
        also = ", a tool-definition file's name" if tool_defs else ""
        raise UserError(f"two arms would both be labelled {twice!r}", hint=f"rename a prompt file{also} or an alias")
    return arms


def with_faults(arms: Sequence[Arm], profiles: Sequence[FaultProfile]) -> list[Arm]:
    """Each arm with each fault profile (``run --faults``; runner.spec.faults.load_profiles), by arm then profile;
    ``arms`` as they are for no profiles."""
    return [dataclasses.replace(arm, faults=profile) for arm in arms for profile in profiles] or list(arms)


@dataclass(frozen=True)
class SuiteOptions:
    """How a suite's runs go: ``run``, what every run shares (its ``cancel`` is the suite's Ctrl-C: once set,
    no further run starts), and the matrix's own settings.

    ``jobs`` is how many runs go at once. ``shard``, when given, keeps only that shard's runs of the matrix
    (``--shard``). ``executor`` is where runs go (``local``: this machine, runner.suite.executors); ``workers``
    how many processes share them there (1: threads of this process; None: ``auto``, by the plan's size).
    With ``executor`` ``ray``, ``ray_address`` is the cluster (None: a local Ray for the run) and ``ray_env``
    the provider keys its workers get (runner.suite.rayexec); neither enters a record.
    """

    run: RunOptions
    jobs: int = 1
    shard: Shard | None = None
    executor: str = "local"
    workers: int | None = 1
    ray_address: str | None = None
    ray_env: Mapping[str, str] = field(default_factory=dict, repr=False)  # keys: never printed
