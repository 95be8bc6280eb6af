"""One saved run scored again against its case's current checks, with no model call (``tooltrial rescore``).

The reply, turn, trace and budget checks read the record (its steps, messages, final reply, tokens and cost);
``expect.files`` and ``expect.verify`` read a workspace rebuilt from the case's fixture, ``files`` and setup, with
the run's saved changes put back (runner.run.savedfiles), ``verify`` run again under the sandbox given. Judges are
asked again only when ``rejudge``; else the run's judge results are kept. An injected run's attack verdict
is judged again against the case's current ``expect.attack``. The checks and the status go through the
same functions as a run's (runner.checks.registry.run_checks, runner.run.execute.settle, runner.scoring.metrics).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.checks.base import BUDGET, CheckContext, CheckResult
from runner.checks.registry import run_checks
from runner.kinds import ErrorKind, Status
from runner.providers.kind import ProviderSpec
from runner.run.agent import RECOVERED
from runner.run.context import RunContext
from runner.run.execute import command_runners, settle
from runner.run.injection import judge_attack
from runner.run.options import DEFAULT_COMMAND_TIMEOUT, DEFAULT_RUN_TIMEOUT
from runner.run.provenance import Provenance
from runner.run.record import CommandRun, RunRecord
from runner.run.savedfiles import restore
from runner.run.trajectory import Trajectory
from runner.run.workspace import SetupError, Workspace, WorkspaceError
from runner.sandbox.command import CommandResult, Sandbox
from runner.sandbox.visible import HiddenFile
from runner.scoring.inputs import changed_parts
from runner.scoring.metrics import fill_metrics
from runner.spec.case import Case
from runner.spec.fingerprint import ATTACK_PART, JUDGE_PART, case_parts, fixture_digest

CHECK_ERRORS = frozenset({ErrorKind.JUDGE_ERROR, ErrorKind.PATTERN_TIMEOUT, ErrorKind.WORKSPACE})
UNKEPT = "cannot be re-scored"  # the words of a check whose input the record does not hold


@dataclass(frozen=True)
class Rescoring:
    """What every rescored run shares: ``sandbox`` (the verify and setup commands', None to choose none: a case
    that needs a workspace is then an error), ``judges`` (as RunOptions.judges), ``rejudge`` (ask them again;
    else keep the run's judge results) and ``cancel`` (Ctrl-C)."""

    sandbox: Sandbox | None
    judges: Mapping[str | None, ProviderSpec] = field(default_factory=dict)
    rejudge: bool = False
    cancel: threading.Event = field(default_factory=threading.Event)


def rescorable(record: RunRecord) -> bool:
    """Whether ``record``'s checks ran to the end, so they can be made again: a pass, a fail, or an error of a
    check (a judge's, a pattern's, one that could not be re-scored)."""
    return record.status is not Status.ERROR or record.error_kind in CHECK_ERRORS


def rescore(case: Case, record: RunRecord, how: Rescoring) -> RunRecord:
    """A copy of ``record`` (a run of ``case`` as it was then but for its ``expect``) whose checks, status and
    metrics are ``case``'s current checks made again; a record that is not ``rescorable`` is returned as it is.
    Verify commands that run again replace the run's in ``commands``. Never calls the agent's model."""
    if not rescorable(record):
        return record
    new = dataclasses.replace(record, status=Status.ERROR, cause=None, error_kind=None, failure=None,
                              commands=[c for c in record.commands if c.phase not in ("verify", "check")],
                              warnings=list(record.warnings))
    if record.injection is not None:  # judged again below, never the run's verdict kept (nor shared with it)
        new.injection = dataclasses.replace(record.injection, planted=list(record.injection.planted), utility=None,
                                            attack_success=None, attack_checks=[])
    checked = case if how.rejudge else dataclasses.replace(case, expect=dataclasses.replace(case.expect, judge=None))
    needs_workspace = rebuilds(case)
    timeout = case.timeout or DEFAULT_RUN_TIMEOUT
    started = time.monotonic()
    if not needs_workspace:
        context = _context(checked, record, how.judges, started + timeout)
        new.checks = run_checks(context)
        _settle(new, record, case, how, context)
    else:
        if how.sandbox is None:
            raise ValueError("a rescore with file or verify checks needs a sandbox")
        run = RunContext(how.sandbox, timeout, started + timeout, case.command_timeout or DEFAULT_COMMAND_TIMEOUT, how.cancel, [],
                         new.warnings)
        try:
            workspace = Workspace.create(case)
        except WorkspaceError as e:
            return _failed(new, case, f"{UNKEPT}: the workspace could not be rebuilt: {e}")
        try:
            workspace.run_setup(case, run)
            unkept = restore(workspace.path, record.changes, record.files)
            new.checks, context = _checked(checked, record, workspace, run, unkept, new.commands, how.judges)
            _settle(new, record, case, how, context)  # in the workspace: the attack's file checks read it
        except (SetupError, HiddenFile) as e:
            return _failed(new, case, f"{UNKEPT}: the workspace could not be rebuilt: {e}")
        finally:
            new.warnings.extend(workspace.cleanup())
    fill_metrics(case, new)
    return new


def _settle(new: RunRecord, record: RunRecord, case: Case, how: Rescoring, context: CheckContext) -> None:
    """``new``'s status from its checks made again (the run's judge results kept unless ``how.rejudge``), and its
    injection's utility and attack verdict judged again against ``case``'s current ``expect.attack``
    (runner.run.injection.judge_attack), on ``context``, the trajectory (and workspace) the checks read."""
    if not how.rejudge and case.expect.judge is not None:
        new.checks = _with_judges(new.checks, record)
        if not any(c.check == "judge" for c in record.checks):
            new.warnings.append("expect.judge was not asked: the run has no judge result to keep; rescore with --judge")
        elif record.provenance is not None and record.provenance.case_parts.get(JUDGE_PART) != case_parts(case)[JUDGE_PART]:
            new.warnings.append("expect.judge changed since the run, and its result is kept as the run's judge gave it; "
                                "rescore with --judge to ask again")
    settle(new)
    judge_attack(context, new.status, new.injection)


def rebuilds(case: Case) -> bool:
    """Whether rescoring a run of ``case`` rebuilds its workspace: for its ``files`` checks (its own or its
    attacker's, ``expect.attack.files``), or to run its ``verify`` or ``check`` commands again."""
    attack_files = case.attack is not None and case.attack.files
    return bool(case.expect.verify or case.expect.files or attack_files or case.expect.spec("check"))


def _checked(case: Case, record: RunRecord, workspace: Workspace, run: RunContext, unkept: list[str],
             commands: list[CommandRun], judges: Mapping[str | None, ProviderSpec],
             ) -> tuple[list[CheckResult], CheckContext]:
    """The checks of ``case`` in the rebuilt ``workspace``, and the context they read; a ``files`` content rule on a
    file whose content the record does not hold (``unkept``), and ``verify`` when any is, become checks that could
    not be made."""
    files = case.expect.files or {}
    blocked = [name for name, rules in files.items() if name in unkept and rules.content_rules]
    expect = dataclasses.replace(case.expect, files={n: r for n, r in files.items() if n not in blocked} or None,
                                 verify=None if unkept else case.expect.verify,
                                 more={k: v for k, v in case.expect.more.items() if not (unkept and k == "check")})
    env = workspace.env(case)

    run_command, run_check = command_runners(case, run, workspace.path, env, commands)
    context = _context(dataclasses.replace(case, expect=expect), record, judges, run.deadline)
    context = dataclasses.replace(context, workspace=workspace.path, run_command=run_command, run_check=run_check)
    results = run_checks(context)
    kept = "the run kept only its hash (over the record's bound: runner.run.savedfiles)"
    results += [CheckResult("files", False, f"{name}: {UNKEPT}: {kept}", error_kind=ErrorKind.WORKSPACE)
                for name in blocked]
    for kind in ("verify", "check"):
        if unkept and case.expect.spec(kind):
            results.append(CheckResult(kind, False, f"{kind} {UNKEPT}: {unkept[0]}: {kept}",
                                       error_kind=ErrorKind.WORKSPACE))
    return results, context


def _context(case: Case, record: RunRecord, judges: Mapping[str | None, ProviderSpec], deadline: float) -> CheckContext:
    """The checks' view of ``record``: its trajectory rebuilt, no workspace, no command to run."""

    def no_command(command: str) -> CommandResult:
        raise RuntimeError(f"no workspace to run {command!r} in")

    return CheckContext(case, Path("/nonexistent"), trajectory(record), no_command, judges,
                        record.tokens.total_tokens, record.cost, deadline)


def trajectory(record: RunRecord) -> Trajectory:
    """What the checks read of a saved run: its steps, messages, and each finished turn's reply (from the
    messages: a turn's last assistant message without tool calls; the last turn's, ``final_reply``)."""
    starts = [i for i, m in enumerate(record.messages) if m.get("role") == "user"
              and not str(m.get("content") or "").startswith(RECOVERED)]
    replies = []
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(record.messages)
        final = [m for m in record.messages[start:end] if m.get("role") == "assistant" and not m.get("tool_calls")]
        if final:
            content = final[-1].get("content")
            replies.append(content if isinstance(content, str) else "")
    if record.final_reply:
        replies[-1:] = [record.final_reply]
    return Trajectory(messages=record.messages, steps=record.steps, replies=replies)


def _with_judges(checks: list[CheckResult], record: RunRecord) -> list[CheckResult]:
    """``checks`` with the run's own judge results put back before the budget checks, as the table orders them."""
    judged = [c for c in record.checks if c.check == "judge"]
    at = next((i for i, c in enumerate(checks) if c.category is BUDGET), len(checks))
    return [*checks[:at], *judged, *checks[at:]]


def _failed(record: RunRecord, case: Case, cause: str) -> RunRecord:
    """``record`` an error of kind ``workspace`` whose cause is ``cause``: its checks could not be made again."""
    record.checks = []
    record.status, record.error_kind, record.cause = Status.ERROR, ErrorKind.WORKSPACE, cause
    fill_metrics(case, record)
    return record


SCORED_PARTS = frozenset({"expect", JUDGE_PART, ATTACK_PART})  # the case parts a rescore may find changed: its checks


def changed_inputs(case: Case, ran: Provenance) -> list[str]:
    """What of ``case`` as loaded now differs from what a run with provenance ``ran`` ran on, but its checks
    (``expect``, its judge's rubric and its attacker's checks too): the changed parts
    (runner.spec.fingerprint.case_parts, by runner.scoring.inputs.changed_parts) and ``fixture contents``; [] when only checks changed, or nothing."""
    now = dataclasses.replace(ran, case_parts=case_parts(case), fixture=fixture_digest(case))
    changed = changed_parts(ran, now, SCORED_PARTS)
    if ran.fixture != now.fixture and "files" not in changed:
        changed.append("fixture contents")
    return changed
