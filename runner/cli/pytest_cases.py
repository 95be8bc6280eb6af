"""Case files as pytest collectors and each run of a case as a pytest item (runner.cli.pytest_plugin).

An item is one run of one case in one arm, named ``group/id``, with ``[provider-prompt-tools-faults-NAME-runN]``
parts added for what varies: the provider when several ``--tooltrial-provider`` are given, the
prompt when several ``--tooltrial-prompt``, the tool definitions' name when several ``--tooltrial-tools``, the
fault arm when there are several (``--tooltrial-faults`` adds the clean twin ``off``), the run (1-based) when a
case runs more than once; the arm's whole label (``scripted · default · renamed · faults off``) is in the
item's report line and its ``tooltrial_arm`` property. It
runs through the engine's one-run step (runner.run.execute, as ``tooltrial run`` does per run), so
its record, checks and scores are the same; it passes when the run's status is ``pass``, else it
fails with the lines ``tooltrial run`` prints (``FAIL group/id`` and one line per failed check, or
``ERROR group/id: cause``). The record's status, failure cause, scores, calls, tokens and
duration are the item's ``user_properties`` (``--junitxml`` writes them as properties).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from runner.checks.judge import resolve_judges
from runner.cli.pytest_plugin import SUITE
from runner.errors import UserError, UserErrors, in_file_order
from runner.providers.breaker import Breaker
from runner.providers.redact import Secrets
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompts
from runner.run.record import ERROR, PASS, RunRecord
from runner.run.simuser import resolve_users
from runner.sandbox.choose import choose_sandbox
from runner.spec.case import Case
from runner.spec.casefile import read_file
from runner.spec.config import Config, load_config
from runner.spec.faults import load_profiles
from runner.spec.tooldefs import ToolDefs, case_tools, load_all, offer_errors
from runner.suite.engine import preflight, require_scripts
from runner.suite.options import make_arms, with_faults
from runner.text import first_line, printable


@dataclass
class Suite:
    """What every item of a session shares: the arms (provider x prompt x tool definitions x fault arm, built
    as ``tooltrial run`` builds them), the default repeat count, the run options (sandbox, no judges yet), one
    breaker per provider (runner.providers.breaker) and the ``--tooltrial-tools`` files loaded."""

    config: Config
    arms: list[Arm]
    runs: int
    options: RunOptions
    breakers: dict[str, Breaker] = field(default_factory=dict)
    tool_defs: list[ToolDefs] = field(default_factory=list)

    @classmethod
    def from_config(cls, config: pytest.Config) -> Suite:
        """The suite the ``--tooltrial-*`` options describe. Raises pytest.UsageError for a provider,
        prompt, tool-definition file, fault profile, config or sandbox that tooltrial refuses, with tooltrial's
        message (a file's errors each at its file, line and column)."""
        try:
            project = load_config(config.getoption("tooltrial_config"))
            names = config.getoption("tooltrial_provider")
            providers = [resolve_provider(name, project) for name in names]
            tool_defs = load_all(config.getoption("tooltrial_tools"))
            arms = make_arms(providers, load_prompts(config.getoption("tooltrial_prompt")), tool_defs)
            arms = with_faults(arms, load_profiles(config.getoption("tooltrial_faults")))
            runs = config.getoption("tooltrial_runs")
            if runs < 1:
                raise UserError(f"--tooltrial-runs must be at least 1, got {runs}")
            options = RunOptions(choose_sandbox(config.getoption("tooltrial_sandbox")))
        except (UserError, UserErrors) as e:
            raise pytest.UsageError(f"tooltrial: {e}") from e
        return cls(project, arms, runs, options, {p.name: Breaker(p.name) for p in providers}, tool_defs)


class CaseFile(pytest.File):
    """One tooltrial case file (a group): its cases, each in every arm, each run an item."""

    def collect(self) -> Iterator[CaseRun]:
        """Items in plan order: by arm, then case, then run. Raises CollectError with every error
        of the file (file:line:col: key: message (hint)), or when an arm cannot run a case (no
        ``script`` for the scripted provider, a template that does not render)."""
        suite = self.config.stash[SUITE]
        cases, errors = read_file(self.path, None)
        try:
            if errors:
                raise UserErrors(list(errors))
            require_scripts(cases, suite.arms)
            preflight(cases, suite.arms)
        except (UserError, UserErrors) as e:
            raise self.CollectError(str(e)) from e
        varying = [part for part in _ARM_PARTS if len({part(arm) for arm in suite.arms}) > 1]
        for arm in suite.arms:
            for case in cases:
                repeats = case.runs or suite.runs
                for index in range(repeats):
                    parts = [part(arm) for part in varying] + ([f"run{index + 1}"] if repeats > 1 else [])
                    name = case.full_id + (f"[{'-'.join(parts)}]" if parts else "")
                    yield CaseRun.from_parent(self, name=name, case=case, arm=arm, index=index)


# what an item's name may show of its arm, in this order: a part is shown when the session's arms differ in it
_ARM_PARTS: tuple[Callable[[Arm], str], ...] = (
    lambda arm: arm.provider.name, lambda arm: arm.prompt.name, lambda arm: arm.tool_defs or "",
    lambda arm: f"faults-{arm.fault_arm}" if arm.fault_arm else "")


def report_tool_names(suite: Suite, session: pytest.Session, items: list[pytest.Item]) -> None:
    """Hold each of ``suite``'s tool-definition files to the tools the cases of ``items`` (their CaseRuns) offer,
    as ``run -T`` does (runner.spec.tooldefs.offer_errors): a file naming a tool or parameter none of them has is
    a collection error of that file (its nodeid the path given), each error at its line and column, and every
    item is deselected, so nothing runs (under pytest-xdist too). Nothing when no item is a case run."""
    offered = [case_tools(case) for case in {id(i.case): i.case for i in items if isinstance(i, CaseRun)}.values()]
    failed = False
    for defs in suite.tool_defs if offered else ():
        errors = in_file_order(offer_errors(defs, offered))
        if errors:
            report = pytest.CollectReport(defs.file, "failed", f"tooltrial: {UserErrors(errors)}", [])
            session.config.hook.pytest_collectreport(report=report)
            failed = True
    if failed:
        session.config.hook.pytest_deselected(items=list(items))
        items.clear()


class RunFailed(Exception):
    """The run did not pass; ``record`` is its run record."""

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        super().__init__(f"{record.status} {record.case}")


class CaseRun(pytest.Item):
    """One run (``index``, 0-based) of ``case`` in ``arm``."""

    def __init__(self, *, case: Case, arm: Arm, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case, self.arm, self.index = case, arm, index
        self.add_marker(pytest.mark.tooltrial)
        self.extra_keyword_matches.update(case.tags)  # -k TAG selects by tag as well

    def runtest(self) -> None:
        """Run the case once; raises RunFailed unless it passed, UserError for a judge it cannot reach."""
        suite = self.config.stash[SUITE]
        judges = resolve_judges([self.case], suite.config.judge, lambda name: resolve_provider(name, suite.config))
        users = resolve_users([self.case], lambda name: resolve_provider(name, suite.config))
        options = RunOptions(suite.options.sandbox, judges=judges, users=users,
                             secrets=Secrets.known(os.environ, suite.config.key_variables))
        record = execute(self.case, self.arm, options, self.index + 1, suite.breakers[self.arm.provider.name])
        self.user_properties += _properties(record)
        if record.status != PASS:
            raise RunFailed(record)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """A failed run as ``tooltrial run`` prints it; a user error as its message; else pytest's own."""
        if isinstance(excinfo.value, RunFailed):
            return failure_lines(excinfo.value.record)
        if isinstance(excinfo.value, (UserError, UserErrors)):
            return f"tooltrial: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.case.line - 1, f"tooltrial case {self.name} ({self.arm.label})"


def failure_lines(record: RunRecord) -> str:
    """``FAIL group/id`` or ``ERROR group/id: cause`` (first line), then the failure cause and one
    indented line per failed check, control characters escaped (runner.text.printable)."""
    head = f"{record.status.upper()} {record.case}"
    if record.status == ERROR:
        head += f": {first_line(record.cause, 'unknown error')}"
    lines = [head, f"  failure cause: {record.failure or 'unknown'}"]
    lines += [f"  {check.message}" for check in record.failed_checks]
    return printable("\n".join(lines))


def _properties(record: RunRecord) -> list[tuple[str, object]]:
    """The record's figures as (name, value) pairs for the item's ``user_properties``; a figure the
    run does not have (no tokens reported, no score) is left out."""
    pairs: list[tuple[str, object]] = [
        ("tooltrial_status", str(record.status)), ("tooltrial_failure", record.failure and str(record.failure)),
        ("tooltrial_arm", record.arm), ("tooltrial_run", record.run),
        ("tooltrial_outcome", record.outcome), ("tooltrial_process", record.process),
        ("tooltrial_calls", record.calls), ("tooltrial_tokens", record.tokens.total_tokens),
        ("tooltrial_duration", round(record.duration, 3))]
    return [(name, value) for name, value in pairs if value is not None]
