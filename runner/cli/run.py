"""``tooltrial run``: the run matrix, live; every result written, then printed."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from runner.checks.base import JudgeSettings
from runner.checks.judge import judge_names, refuse_judge, resolve_judges
from runner.cli import listing
from runner.cli.judgeoptions import add_judge_options, judge_settings
from runner.cli.options import (
    add_arms,
    add_selection,
    add_shard,
    check_writable,
    fraction,
    positive_int,
    seconds,
    selected,
    workers,
)
from runner.cli.outputs import add_outputs, check_output_files, refuse_inputs, wanted_outputs
from runner.errors import ExitCode, UserError
from runner.names import SCRIPTED
from runner.output.formats import RUN
from runner.providers.cache import open_cache
from runner.providers.kind import ProviderSpec
from runner.providers.redact import Secrets
from runner.providers.registry import kind_of, precheck, resolve_provider
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompts, prompt_file
from runner.run.simuser import resolve_users
from runner.sandbox.choose import choose_sandbox
from runner.sandbox.command import MODES
from runner.spec.agentspec import with_agents
from runner.spec.case import Case
from runner.spec.config import Config, load_config
from runner.spec.faults import CASE, OFF, load_profiles
from runner.spec.tooldefs import check_tool_defs, load_all
from runner.suite.engine import plan_keys, preflight, require_scripts
from runner.suite.executors import AUTO_MIN_RUNS, worker_count
from runner.suite.options import DEFAULT_JOBS, SuiteOptions, make_arms, with_faults
from runner.suite.request import SuiteRequest, run_suite
from runner.suite.rounds import DEFAULT_MARGIN, Stopping
from runner.suite.shard import shard_summary
from runner.terminal.console import make_console
from runner.terminal.lines import RunPrinter
from runner.terminal.live import LiveView
from runner.text import plural


def add(sub: argparse._SubParsersAction) -> None:
    """The ``run`` subcommand's parser."""
    run = sub.add_parser("run", help="run cases against providers and prompts")
    add_selection(run)
    add_arms(run)
    run.add_argument("--config", metavar="FILE", help="project config (default: ./tooltrial.yml if it exists)")
    run.add_argument("-v", "--verbose", action="store_true", help="let litellm log its requests (DEBUG)")
    view = run.add_mutually_exclusive_group()
    view.add_argument("--live", action="store_true", help="print each model request and tool call as it happens "
                      "(with -j above 1, each line starts with its run's label)")
    view.add_argument("-q", "--quiet", action="store_true", help="print only the runs that did not pass, and the summary")
    run.add_argument("--agent", metavar="NAME|FILE", help="run every selected case with this external agent program "
                     "instead of the built-in loop: a name under agents: in tooltrial.yml, or a .yml file holding one")
    run.add_argument("--until-decided", action="store_true", help="run in rounds (run 1 of every case in every arm, "
                     "then run 2...) and stop each comparison of two arms once an anytime-valid test decides it: "
                     "A better, B better or within --margin; --runs N is the cap")
    run.add_argument("--margin", type=fraction, metavar="D", help="with --until-decided: the pass-rate difference "
                     f"(above 0, below 1) that counts as none (default {DEFAULT_MARGIN:g})")
    run.add_argument("--min-pass-rate", type=fraction, metavar="R", help="gate: each case must pass at least this fraction of its runs (default 1)")
    run.add_argument("--judge", metavar="MODEL", help="judge model for expect.judge checks that name none")
    add_judge_options(run)
    run.add_argument("-j", "--jobs", type=positive_int, metavar="N",
                     help=f"runs at once (default: jobs in tooltrial.yml, else {DEFAULT_JOBS})")
    run.add_argument("--executor", choices=["local", "ray"], default="local",
                     help="where runs go: local (this machine's threads and worker processes, default), or ray "
                     "(each run a task on a Ray cluster; needs the ray extra)")
    run.add_argument("--ray-address", metavar="ADDR", help="with --executor ray: the cluster's head, HOST:PORT "
                     "(default: $RAY_ADDRESS, else a local Ray started for the run)")
    run.add_argument("--workers", type=workers, default=None, metavar="N",
                     help=f"worker processes sharing the -j runs: auto (default: the CPU count from {AUTO_MIN_RUNS} "
                     "planned runs on, else 1), or N; 1 runs them on threads of this process")
    run.add_argument("--sandbox", choices=MODES, default="auto",
                     help="confine commands with bubblewrap: auto (when it works, default), bwrap, none")
    run.add_argument("--output", choices=["text", "json"], default="text", help="text lines and tables, or the JSON report on stdout (lines and tables on stderr)")
    run.add_argument("--results", type=Path, metavar="DIR", help="write each run under DIR/<run-id>/ (default: results_dir in tooltrial.yml, else results/)")
    run.add_argument("--resume", type=Path, metavar="RESULTS", help="reuse the runs a results/<run-id> folder holds; run only the rest")
    run.add_argument("--retry-errors", action="store_true", help="with --resume: run again, in their places, the runs "
                     "that ended in an error not of the agent's making (provider, setup, judge...); each keeps its earlier attempts")
    add_outputs(run, RUN, only=_LISTED_FIRST)
    run.add_argument("--keep", action="store_true", help="keep each workspace and print its path")
    run.add_argument("--cache", type=Path, metavar="DIR", help="keep each live model reply in DIR and replay it when the "
                     "same request comes again in the same run number (never the scripted provider's)")
    run.add_argument("--stream", action="store_true", help="ask every live provider for its replies as streams, and record each request's time to first token")
    add_shard(run)
    run.add_argument("--timeout", type=seconds, metavar="S", help="wall-clock seconds per run (overrides the cases)")
    run.add_argument("-l", "--list", action="store_true", help="list the selected cases without running them")
    run.add_argument("--record", type=Path, metavar="DIR", help="write each run as a case whose script is what the model did, to DIR/cases")
    add_outputs(run, RUN, leave=_LISTED_FIRST)
    run.set_defaults(sources=False)


_LISTED_FIRST = ("report", "junit", "html", "summary_md")  # the formats --help lists beside --results; the rest last


def _check_output_files(args: argparse.Namespace) -> None:
    """Refuse, before any run starts, output files (runner.output.formats) and ``--record`` / ``--results`` /
    ``--cache`` folders that cannot be written: a file that is a folder (or the reverse), a path under a
    file, a folder no file can be created in. Raises UserError naming the flag and the path, with a hint."""
    check_output_files(args, RUN)
    for flag, path in (("--record", args.record), ("--results", args.results), ("--cache", args.cache)):
        if path is not None:
            check_writable(flag, path, folder=True)


def _ray(args: argparse.Namespace, config: Config, providers: Sequence[ProviderSpec]) -> tuple[str | None, dict[str, str]]:
    """``--executor ray``'s cluster address and the keys its workers get (runner.suite.rayexec), checked
    before anything runs; ``(None, {})`` for the local executor. Raises UserError for ``--ray-address``,
    ``--live`` or ``--workers`` given without it or with it, Ray not installed, or a cluster not answering."""
    if args.executor != "ray":
        if args.ray_address:
            raise UserError("--ray-address is for --executor ray", hint="add --executor ray, or leave --ray-address out")
        return None, {}
    for flag, given in (("--live", args.live), ("--workers", args.workers is not None)):
        if given:
            raise UserError(f"{flag} is for the local executor: with --executor ray the runs happen on the cluster",
                            hint=f"leave {flag} out")
    from runner.suite.rayexec import check_ray, cluster_address, forwarded_keys, key_variables

    address = cluster_address(args.ray_address)
    check_ray(address)
    return address, forwarded_keys(key_variables([p.name for p in providers], config))


def _precheck(args: argparse.Namespace, config: Config, cases: list[Case], names: list[str]) -> str | None:
    """The judge of the cases that name none (``--judge``, else the config's), once every provider name and
    every judge a case needs is refused for the mistakes that need no litellm (runner.providers.registry.precheck),
    before any name loads it. Raises UserError (exit 4)."""
    refuse_judge(args.judge)
    judge = args.judge or config.judge
    for name in [*names, *dict.fromkeys(judge_names(cases, judge).values())]:  # a judge only where a case is judged
        precheck(name, config)
    return judge


def _until(args: argparse.Namespace, arms: Sequence[Arm]) -> Stopping | None:
    """``--until-decided``'s stopping rule (runner.suite.rounds), None without it. Raises UserError for
    ``--margin`` without it or outside (0, 1), and for it with ``--shard`` or with fewer than two arms."""
    if not args.until_decided:
        if args.margin is not None:
            raise UserError("--margin is for --until-decided", hint="add --until-decided, or leave --margin out")
        return None
    margin = DEFAULT_MARGIN if args.margin is None else args.margin
    if not 0 < margin < 1:
        raise UserError(f"--margin must be above 0 and below 1, got {margin:g}", hint=f"e.g. --margin {DEFAULT_MARGIN:g}")
    if args.shard is not None:
        raise UserError("--until-decided decides from every case's runs: a shard holds only some",
                        hint="leave --shard out, or run every run with --runs N")
    if len(arms) < 2:
        raise UserError("--until-decided stops when a comparison of two arms is decided, and this run has one arm",
                        hint="give two providers (-p a -p b) or two prompts (-P a.j2 -P b.j2)")
    return Stopping(args.runs, margin)


def _jobs(args: argparse.Namespace, config: Config) -> int:
    """Runs at once: ``-j``, else the config's ``jobs``, else DEFAULT_JOBS."""
    return args.jobs or config.jobs or DEFAULT_JOBS


def _warm_up(args: argparse.Namespace, cases: list[Case], names: list[str], config: Config, prompts: int) -> None:
    """Start the process executor's fork server while the providers resolve, when the plan (about: a shard
    holds about its share) will go to worker processes (runner.suite.executors.worker_count)."""
    planned = sum(c.runs or args.runs for c in cases) * len(names) * prompts // (args.shard.count if args.shard else 1)
    if args.executor == "local" and worker_count(args.workers, _jobs(args, config), planned) > 1:
        from runner.suite.processes import warm_up  # multiprocessing only for a run that uses it

        warm_up(live=any(kind_of(name, config.providers).live for name in names))


def _shard(args: argparse.Namespace, cases: list[Case], arms: list[Arm]) -> dict[str, Any] | None:
    """What report.json records of ``--shard`` (runner.suite.shard.shard_summary), None when not sharded; says on
    stderr when the shard holds none of the planned runs (its ``selected`` is then 0)."""
    if args.shard is None:
        return None
    shard = shard_summary(args.shard, plan_keys(cases, arms, args.runs), [c.full_id for c in cases], [a.label for a in arms])
    if not shard["selected"]:
        print(f"no case selected: shard {args.shard.label} holds none of the {plural(shard['planned'], 'run')} "
              f"(give fewer shards than runs, or 'tooltrial list --shard K/N' to see what each holds)", file=sys.stderr)
    return shard


def _request(args: argparse.Namespace, config: Config, cases: list[Case], arms: list[Arm], outputs: dict[str, Any],
             judges: Mapping[str | None, ProviderSpec], shard: dict[str, Any] | None,
             judging: JudgeSettings, until: Stopping | None = None) -> SuiteRequest:
    """The matrix's request from the parsed ``args``, the config and what is resolved so far: the simulated
    users resolved (runner.run.simuser.resolve_users), the Ray cluster checked (``_ray``), the console,
    ``--live``'s view, the response cache opened, the sandbox chosen. Raises UserError as those do."""
    users = resolve_users(cases, lambda name: resolve_provider(name, config, args.verbose))
    jobs = _jobs(args, config)
    providers = list({arm.provider.name: arm.provider for arm in arms}.values())
    ray_address, ray_env = _ray(args, config, [*providers, *judges.values(), *users.values()])
    results = args.results or config.results_dir or Path("results")
    hidden = [results, *[p for p in (args.record, args.cache) if p]]  # earlier runs' answers are not for the agent
    console = make_console(sys.stderr if args.output == "json" else None)
    repeated = args.runs > 1 or any((c.runs or 1) > 1 for c in cases)
    together = jobs > 1 and (len(cases) * len(arms) > 1 or repeated)  # runs that may go at once: label each line
    live = LiveView(console, together, repeated, len(arms) > 1) if args.live else None
    cache = open_cache(args.cache, create=True) if args.cache else None
    each = RunOptions(choose_sandbox(args.sandbox, hidden), keep=args.keep, timeout=args.timeout, judges=judges, judging=judging,
                      users=users, listener=live, cache=cache, secrets=Secrets.known(os.environ, config.key_variables))
    options = SuiteOptions(each, jobs=jobs, shard=args.shard, executor=args.executor, workers=args.workers,
                           ray_address=ray_address, ray_env=ray_env)
    models = {p.name: config.providers[p.name].model if p.name in config.providers else p.name for p in providers}
    return SuiteRequest(cases, arms, args.runs, options, results, outputs,
                        RunPrinter(console, len(arms) > 1, repeated, args.quiet), partial(resume_line, args.words),
                        as_json=args.output == "json", min_pass_rate=args.min_pass_rate, shard=shard, models=models,
                        resume=args.resume, retry_errors=args.retry_errors, record=args.record, until=until)


def command(args: argparse.Namespace) -> int:
    """Run the matrix (runner.suite.request.run_suite); the exit code is the gates' (runner.scoring.gates.exit_code),
    2 when interrupted, 5 when no case is selected or the shard holds none of their runs."""
    if args.list:
        return listing.command(args)
    if args.retry_errors and args.resume is None:
        raise UserError("--retry-errors is for --resume: it runs again the errored runs of the folder --resume reuses",
                        hint="add --resume RESULTS, the results/<run-id> folder whose errored runs to run again")
    if args.record is not None and args.faults:
        raise UserError("--record cannot record fault arms: a recorded case replays its own faults, not a profile's",
                        hint="record without --faults (each case's own faults are recorded with it)")
    _check_output_files(args)
    outputs = wanted_outputs(args, RUN, os.environ)
    cases = [s.case for s in selected(args)]
    if not cases:
        return ExitCode.NO_CASES
    refuse_inputs(args, RUN, [c.source for c in cases] + [Path(prompt_file(p)) for p in args.prompt or []]
                  + [Path(t) for t in args.tools] + [Path(v) for v in args.faults if v not in (OFF, CASE)])
    config = load_config(args.config)
    cases = with_agents(cases, args.agent, config.agents, config.path)
    names = args.provider or [config.default_provider or SCRIPTED]
    judge = _precheck(args, config, cases, names)
    prompts, tool_defs = load_prompts(args.prompt), load_all(args.tools)
    check_tool_defs(tool_defs, cases)
    profiles = load_profiles(args.faults)
    _warm_up(args, cases, names, config, len(prompts) * max(1, len(tool_defs)) * max(1, len(profiles)))
    arms = make_arms([resolve_provider(name, config, args.verbose, args.stream) for name in names], prompts, tool_defs)
    arms = with_faults(arms, profiles)
    until = _until(args, arms)
    require_scripts(cases, arms)
    preflight(cases, arms)
    judges = resolve_judges(cases, judge, lambda name: resolve_provider(name, config, args.verbose))
    judging = judge_settings(args, cases, judges)
    shard = _shard(args, cases, arms)
    if shard is not None and not shard["selected"]:
        return ExitCode.NO_CASES
    return run_suite(_request(args, config, cases, arms, outputs, judges, shard, judging, until))


def resume_line(words: Sequence[str], folder: Path) -> str:
    """The command line that runs what a run of ``words`` (``run ...``, as typed) left unfinished:
    ``tooltrial`` and ``words`` with ``--resume FOLDER`` in place of any ``--resume`` they hold,
    shell-quoted to paste (``-c 'fix/*'``)."""
    kept: list[str] = []
    given = iter(words)
    for word in given:
        flag = word.split("=", 1)[0]
        if len(flag) >= len("--resu") and "--resume".startswith(flag):  # argparse takes --resu for --resume too
            if "=" not in word:
                next(given, None)  # the folder it names
        else:
            kept.append(word)
    return shlex.join(["tooltrial", *kept, "--resume", str(folder)])
