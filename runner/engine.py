"""The run matrix: cases x arms (provider x prompt) x repeats, each run isolated.

One run (DESIGN.md "One run"): make the workspace, render the prompts, run the
agent loop through the turn limit, snapshot, check, record, clean up. Every
failure of a run becomes data on its record; the suite always goes on.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from runner.agent import Trajectory, run_agent
from runner.cases import Case
from runner.checks import CheckContext, run_checks
from runner.errors import UserError, UserErrors
from runner.prompts import PromptTemplate, context_for, system_prompt, turn_prompts
from runner.providers import ProviderSpec
from runner.providers.base import Completion, ProviderError, Usage
from runner.providers.limits import TurnLimited
from runner.providers.scripted import script_reply
from runner.record import ERROR, FAIL, PASS, RequestStats, RunRecord, Tokens
from runner.sandbox import Sandbox
from runner.scoring import fill_metrics
from runner.tools import build_toolbox
from runner.tools.base import ToolContext
from runner.tools.mocks import mock_tools
from runner.workspace import SetupError, Workspace

DEFAULT_RUN_TIMEOUT = 600.0
DEFAULT_COMMAND_TIMEOUT = 60.0


@dataclass(frozen=True)
class Arm:
    """One column of a comparison: a provider and a system prompt template."""

    provider: ProviderSpec
    prompt: PromptTemplate


@dataclass(frozen=True)
class RunOptions:
    """Settings shared by every run. Times are in seconds; ``timeout`` overrides each case's.

    ``judges`` are the judge providers by model name, None for the default (runner.checks.judge).
    """

    sandbox: Sandbox
    keep: bool = False
    timeout: float | None = None
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)


def preflight(cases: Sequence[Case], arms: Sequence[Arm]) -> None:
    """Render every prompt template against every case before anything runs.

    Raises UserErrors listing every template error (undefined variable, bad syntax).
    """
    errors: list[UserError] = []
    seen: set[str] = set()
    for case in cases:
        for arm in arms:
            context = context_for(case, [], "/workspace")
            try:
                system_prompt(arm.prompt, case, context)
                turn_prompts(case, context)
            except UserError as e:
                if e.render() not in seen:
                    seen.add(e.render())
                    errors.append(e)
    if errors:
        raise UserErrors(errors)


def run_matrix(
    cases: Sequence[Case],
    arms: Sequence[Arm],
    options: RunOptions,
    repeats: int = 1,
    on_record: Callable[[RunRecord], None] = lambda record: None,
) -> list[RunRecord]:
    """Run every case in every arm ``repeats`` times (a case's own ``runs`` wins), calling ``on_record`` as each run ends."""
    records = []
    for case, arm, index in _plan(cases, arms, repeats):
        record = execute(case, arm, options, index)
        on_record(record)
        records.append(record)
    return records


def _plan(cases: Sequence[Case], arms: Sequence[Arm], repeats: int) -> Iterable[tuple[Case, Arm, int]]:
    for arm in arms:
        for case in cases:
            for index in range(case.runs or repeats):
                yield case, arm, index


def execute(case: Case, arm: Arm, options: RunOptions, index: int = 0) -> RunRecord:
    """One run of one case in one arm, scored (runner.scoring); never raises for anything the run itself does."""
    record = RunRecord(case=case.full_id, provider=arm.provider.name, prompt=arm.prompt.name, run=index)
    started = time.monotonic()
    workspace: Workspace | None = None
    try:
        workspace = Workspace.create(case, options.sandbox)
        _run_in(workspace, case, arm, options, record, started)
    except SetupError as e:
        _error(record, "setup", str(e))
    except ProviderError as e:
        _error(record, e.kind, str(e))
    except UserError as e:
        _error(record, "template", e.render())
    except Exception as e:  # a bug in tooltrial must not stop the suite
        _error(record, "internal", f"internal error: {type(e).__name__}: {e}\n{traceback.format_exc()}")
    finally:
        record.duration = time.monotonic() - started
        if workspace is not None:
            if options.keep:
                record.workspace = str(workspace.path)
            else:
                workspace.cleanup()
    fill_metrics(case, record)
    return record


def _run_in(workspace: Workspace, case: Case, arm: Arm, options: RunOptions, record: RunRecord, started: float) -> None:
    timeout = options.timeout or case.timeout or DEFAULT_RUN_TIMEOUT
    command_timeout = case.command_timeout or options.command_timeout
    workspace.run_setup(case, timeout=command_timeout)
    before = workspace.snapshot()
    env = workspace.env(case)
    toolbox = build_toolbox(case, ToolContext(workspace.path, options.sandbox, env, command_timeout), mock_tools(case.mocks))
    context = context_for(case, toolbox.specs(), str(workspace.path))
    system, turns = system_prompt(arm.prompt, case, context), turn_prompts(case, context)
    provider = TurnLimited(arm.provider.create(case), case.max_turns)
    trajectory = run_agent(provider, toolbox, system, turns, deadline=started + timeout)
    _account(record, provider, trajectory)
    record.changes = {k: list(v) for k, v in vars(workspace.changes(before)).items()}

    def run_command(command: str):
        return options.sandbox.run(command, workspace.path, env, command_timeout)

    context = CheckContext(case, workspace.path, trajectory, run_command, options.judges, record.tokens.total, record.cost)
    record.checks = run_checks(context)
    broken = next((c for c in record.checks if c.error_kind), None)
    if trajectory.stop:
        _error(record, trajectory.stop, trajectory.stop_message or trajectory.stop)
    elif broken is not None:
        _error(record, broken.error_kind, broken.message)
    else:
        record.status = FAIL if record.failed_checks else PASS


def _account(record: RunRecord, provider: TurnLimited, trajectory: Trajectory) -> None:
    record.steps = list(trajectory.steps)
    record.final_reply = trajectory.final_reply
    record.requests = provider.requests
    record.script = [script_reply(c) for c in provider.completions]
    usages = [c.usage for c in provider.completions if c.usage is not None]
    record.tokens = Tokens(
        prompt=_sum(u.prompt_tokens for u in usages),
        completion=_sum(u.completion_tokens for u in usages),
        total=_sum(u.total_tokens for u in usages),
    )
    record.cost = _sum(u.cost for u in usages)
    record.model_requests = [_stats(c) for c in provider.completions]
    record.latency = _sum(c.latency for c in provider.completions)


def _stats(completion: Completion) -> RequestStats:
    usage = completion.usage or Usage()
    return RequestStats(usage.prompt_tokens, usage.completion_tokens, usage.total_tokens, usage.cost,
                        completion.latency, completion.finish_reason)


def _sum(values: Iterable[float | int | None]) -> float | int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _error(record: RunRecord, kind: str, cause: str) -> None:
    record.status, record.error_kind, record.cause = ERROR, kind, cause
