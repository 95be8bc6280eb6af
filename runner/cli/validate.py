"""``tooltrial validate``: every error and warning of every case file the paths name, templates
rendered with every error of each (``-P`` templates against each case ``-c`` and ``--tag`` select;
runner.run.templatecheck), and with ``--baseline``
the selected cases a do-nothing or random-tool agent passes.

Exit codes: 0 valid (warnings are printed), 4 an error (or, with ``--strict``, a warning),
5 no case file, or ``-c``/``--tag`` select no case (saying why, as ``list`` does), 1 ``--baseline`` found a case the do-nothing agent passes (with ``--strict``,
also one the random-tools agent passes).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from runner.checks.judge import refuse_judge, resolve_judges
from runner.cli.options import add_selection, sources
from runner.errors import CaseFileError, CaseFileWarning, ExitCode, Location, UserError, UserErrors
from runner.providers.registry import resolve_provider
from runner.run.baselines import DoNothing, weak_cases
from runner.run.options import RunOptions
from runner.run.prompts import load_prompt, load_prompts
from runner.run.simuser import resolve_users
from runner.run.templatecheck import Rendered, case_template_errors, render_for_cases, reported
from runner.sandbox.command import Sandbox
from runner.spec.agentspec import with_agents
from runner.spec.case import Case
from runner.spec.config import load_config
from runner.spec.discover import load_sourced_warned, select
from runner.spec.tooldefs import ToolDefs, check_tool_defs, load_all
from runner.spec.unmatched import why_none_selected
from runner.text import plural, printable
from runner.tools.lint import lint_cases


def add(sub: argparse._SubParsersAction) -> None:
    """The ``validate`` subcommand's parser."""
    parser = sub.add_parser("validate", help="check case files and report every error")
    add_selection(parser)
    parser.add_argument("--strict", action="store_true", help="treat warnings (checks that check nothing) as errors")
    parser.add_argument("-P", "--prompt", action="append", default=[], metavar="FILE",
                        help="render this system prompt template (a file, or a bundled prompt's name) against each "
                        "selected case (repeatable)")
    parser.add_argument("-T", "--tools", action="append", default=[], metavar="FILE",
                        help="check this tool-definition file against the tools each selected case offers (repeatable)")
    parser.add_argument("--tools-lint", action="store_true",
                        help="warn of what makes models misuse the tools each selected case offers (as -T shows them)")
    parser.add_argument("--baseline", action="store_true",
                        help="run each selected case with a do-nothing and a random-tool agent; exit 1 when the do-nothing one passes")
    parser.add_argument("--judge", metavar="MODEL", help="judge model for expect.judge checks during --baseline")
    parser.add_argument("--config", metavar="FILE", help="project config: the agents cases name, and the providers of --baseline "
                        "(default: ./tooltrial.yml if it exists)")


def command(args: argparse.Namespace) -> int:
    """The exit code above; UserErrors (exit 4) list every error, and the warnings beside them."""
    chosen = sources(args)
    files = [f for source in chosen for f in source.files()]
    if not files:
        print("no case file found", file=sys.stderr)
        return ExitCode.NO_CASES
    try:
        sourced, warnings = load_sourced_warned(chosen, args.fixtures_dir)
    except UserErrors as e:
        raise UserErrors(_strict(e.errors) if args.strict else e.errors) from None
    if warnings and args.strict:
        raise UserErrors(_strict(warnings))
    for warning in warnings:
        print(f"warning: {printable(warning.render())}", file=sys.stderr)
    every = [s.case for s in sourced]
    templated = reported(case_template_errors(every, [load_prompt(None)]), len(every))  # turns, system, user
    cases = select(every, args.cases, args.tag)
    if not cases and (args.cases or args.tag):
        if templated:
            raise UserErrors(templated)
        for why in why_none_selected(every, args.cases, args.tag):
            print(f"no case selected: {why}", file=sys.stderr)
        return ExitCode.NO_CASES
    if any(isinstance(case.agent, str) for case in cases):  # agents named by case are tooltrial.yml's
        config = load_config(args.config)
        with_agents(cases, None, config.agents, config.path)
    rendered = _render_prompts(args.prompt, cases, templated)
    tool_defs = _check_tool_defs(args.tools, cases)
    noted = f" ({plural(len(warnings), 'warning')})" if warnings else ""
    counted = f"{plural(len(every), 'case')} in {plural(len(files), 'file')}"
    if args.cases or args.tag:
        print(f"{len(cases)} of {counted} selected; {'it is' if len(every) == 1 else 'all are'} valid{noted}")
    else:
        print(f"{counted} {'is' if len(every) == 1 else 'are'} valid{noted}")
    for one in rendered:
        own = f" ({one.overridden} more use their own system:)" if one.overridden else ""
        print(f"{one.template.origin} renders for {plural(one.cases, 'case')}{own}")
    for defs in tool_defs:
        print(f"{defs.file} fits the tools of {plural(len(cases), 'case')}")
    if args.tools_lint:
        _lint(cases, tool_defs)
    return _baseline(args, cases) if args.baseline else ExitCode.OK


def _strict(problems: Sequence[UserError]) -> list[UserError]:
    """``problems`` with each warning made an error (``--strict``)."""
    return [CaseFileError(p.message, p.location, p.path, p.hint) if isinstance(p, CaseFileWarning) else p
            for p in problems]


def _render_prompts(paths: Sequence[str], cases: Sequence[Case], templated: Sequence[UserError]) -> list[Rendered]:
    """Each ``-P`` template rendered against ``cases``; raises UserErrors with every template error: those
    of the cases' own templates (``templated``), then each template's, in ``-P`` order."""
    rendered = [render_for_cases(template, cases) for template in (load_prompts(paths) if paths else [])]
    errors: list[UserError] = [*templated, *(e for one in rendered for e in one.errors)]
    if errors:
        raise UserErrors(errors)
    return rendered


def _check_tool_defs(paths: Sequence[str], cases: Sequence[Case]) -> list[ToolDefs]:
    """Each ``-T`` file, loaded and held to the tools ``cases`` offer; raises UserErrors with every error (a
    tool no case offers or a parameter no such tool has, positioned in the file)."""
    loaded = load_all(paths)
    check_tool_defs(loaded, cases)
    return loaded


def _lint(cases: Sequence[Case], tool_defs: Sequence[ToolDefs]) -> None:
    """Print each finding of the tool-definition lint (runner.spec.toollint), once each, as a warning."""
    findings = lint_cases(cases, tool_defs)
    for finding in findings:
        print(f"warning: {printable(finding.render())}", file=sys.stderr)
    print(f"tools lint: {plural(len(findings), 'finding')}")


def _baseline(args: argparse.Namespace, cases: Sequence[Case]) -> int:
    """Run the baseline agents; 1 when the do-nothing agent (or, ``--strict``, any) passes a case."""
    refuse_judge(args.judge)
    config = load_config(args.config)
    judges = resolve_judges(cases, args.judge or config.judge, lambda name: resolve_provider(name, config))
    users = resolve_users(cases, lambda name: resolve_provider(name, config))
    weak = weak_cases(cases, RunOptions(sandbox=Sandbox(), judges=judges, users=users), load_prompt(None))
    where = {case.full_id: Location(str(case.source), case.line) for case in cases}
    failing = False
    for one in weak:
        fails = one.agent == DoNothing.name or args.strict
        failing = failing or fails
        print(f"{'error' if fails else 'warning'}: {where[one.case]}: {one.case} passes with the {one.agent} agent:"
              " its checks do not test the task")
    print(f"baseline: {len({w.case for w in weak})} of {len(cases)} cases pass without doing the task")
    return ExitCode.FAILED if failing else ExitCode.OK
