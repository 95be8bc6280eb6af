"""The `tooltrial` command: argument parsing and one handler per subcommand."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from runner import __version__
from runner.spec.authoring import default_cases_dir, new_case
from runner.run.baselines import weak_cases
from runner.spec.case import Case
from runner.spec.schema import case_schema
from runner.spec.discover import select
from runner.checks.judge import resolve_judges
from runner.output.finish import Conclusion, conclude, show_ending, utc_now
from runner.spec.config import load_config
from runner.run.options import DEFAULT_JOBS, Arm, RunOptions
from runner.run.engine import preflight
from runner.errors import ExitCode, UserError, run_at_boundary, silence_output
from runner.run.session import run_live
from runner.run.prompts import load_prompt
from runner.providers.registry import SCRIPTED, resolve_provider
from runner.output.replay import Recorder
from runner.terminal.lines import RunPrinter, print_case_list, print_sources
from runner.terminal.console import make_console
from runner.cli.report import show_results
from runner.output.store import ResultsWriter, read_results
from runner.sandbox.command import MODES, Sandbox, choose_sandbox
from runner.spec.discover import Sourced, load_sourced, select_sources


class _Parser(argparse.ArgumentParser):
    """argparse that raises a UserError (exit 4) instead of exiting with 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UserError(message, hint=f"see '{self.prog} --help'")


def _add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="case files, folders or globs (default: every case source, see 'list --sources')")
    parser.add_argument("-c", "--cases", action="append", default=[], metavar="GLOB", help="keep cases whose group/id matches (repeatable)")
    parser.add_argument("--tag", action="append", default=[], help="keep cases with this tag (repeatable)")
    parser.add_argument("--cases-dir", type=Path, help="folder of case files used instead of the default sources")
    parser.add_argument("--no-user-cases", action="store_true", help="leave out the user's case folder (~/.config/tooltrial/cases)")
    parser.add_argument("--fixtures-dir", type=Path, help="folder of fixture folders (default: ../fixtures beside the cases, else the bundled ones)")


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser; subcommand handlers sit in ``HANDLERS``."""
    parser = _Parser(prog="tooltrial", description="Measure how well LLM agents use tools.")
    parser.add_argument("--version", action="version", version=f"tooltrial {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run cases against providers and prompts")
    _add_selection(run)
    run.add_argument("-p", "--provider", action="append", default=[],
                     help="'scripted', a litellm model (ollama/qwen3, openai/gpt-4o) or an alias from tooltrial.yml (repeatable)")
    run.add_argument("--config", metavar="FILE", help="project config (default: ./tooltrial.yml if it exists)")
    run.add_argument("-v", "--verbose", action="store_true", help="let litellm log its requests (DEBUG)")
    run.add_argument("-P", "--prompt", action="append", default=[], metavar="FILE", help="system prompt template (repeatable, A/B)")
    run.add_argument("--runs", type=_runs, default=1, metavar="N", help="repeat each case N times (a case's runs: wins)")
    run.add_argument("--min-pass-rate", type=_fraction, metavar="R", help="gate: each case must pass at least this fraction of its runs (default 1)")
    run.add_argument("--judge", metavar="MODEL", help="judge model for expect.judge checks that name none")
    run.add_argument("-j", "--jobs", type=_positive_int, metavar="N",
                     help=f"runs at once (default: jobs in tooltrial.yml, else {DEFAULT_JOBS})")
    run.add_argument("--sandbox", choices=MODES, default="auto",
                     help="confine commands with bubblewrap: auto (when it works, default), bwrap, none")
    run.add_argument("--output", choices=["text", "json"], default="text", help="text lines and tables, or the JSON report on stdout (lines and tables on stderr)")
    run.add_argument("--results", type=Path, metavar="DIR", help="write each run under DIR/<run-id>/ (default: results_dir in tooltrial.yml, else results/)")
    run.add_argument("--resume", type=Path, metavar="RESULTS", help="reuse the runs a results/<run-id> folder holds; run only the rest")
    run.add_argument("--report", type=Path, metavar="FILE", help="also write the JSON report to FILE")
    run.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML to FILE")
    run.add_argument("--keep", action="store_true", help="keep each workspace and print its path")
    run.add_argument("--timeout", type=_positive_float, metavar="S", help="wall-clock seconds per run (overrides the cases)")
    run.add_argument("-l", "--list", action="store_true", help="list the selected cases without running them")
    run.add_argument("--record", type=Path, metavar="DIR", help="write each run as a case whose script is what the model did, to DIR/cases")
    run.set_defaults(sources=False)

    listing = sub.add_parser("list", help="list cases (group/id and description)")
    _add_selection(listing)
    listing.add_argument("--sources", action="store_true", help="show where each case came from and what it overrides")

    validate = sub.add_parser("validate", help="check case files and report every error")
    _add_selection(validate)
    validate.add_argument("--baseline", action="store_true", help="warn about cases a do-nothing or random-tool agent passes")
    validate.add_argument("--judge", metavar="MODEL", help="judge model for expect.judge checks during --baseline")
    validate.add_argument("--config", metavar="FILE", help="project config for --baseline (default: ./tooltrial.yml if it exists)")

    report = sub.add_parser("report", help="show results on disk; two folders show what changed")
    report.add_argument("folders", nargs="+", type=Path, metavar="RESULTS", help="results/<run-id> folders (or results/ for the newest)")
    report.add_argument("--output", choices=["text", "json"], default="text", help="tables, or one JSON document on stdout")

    sub.add_parser("schema", help="print the case file JSON Schema")

    new = sub.add_parser("new", help="start a case from a commented skeleton that validates")
    new.add_argument("case", metavar="GROUP/ID", help="the new case's full id; it goes to GROUP.yml")
    new.add_argument("--fixture", metavar="NAME", help="copy fixture folder NAME into the workspace (made empty if missing)")
    new.add_argument("--cases-dir", type=Path, metavar="D", help="folder of case files (default: ./cases if it exists, else ./.tooltrial/cases)")
    return parser


def _number(text: str, kind: type, wanted: str) -> float:
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None


def _positive_int(text: str) -> int:
    value = int(_number(text, int, "a whole number"))
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _runs(text: str) -> int:
    """``--runs``: a whole number from 1 to what a case's ``runs`` may say."""
    value, most = _positive_int(text), case_schema()["properties"]["runs"]["maximum"]
    if value > most:
        raise argparse.ArgumentTypeError(f"must be at most {most}, got {value}")
    return value


def _fraction(text: str) -> float:
    value = _number(text, float, "a number from 0 to 1")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def _positive_float(text: str) -> float:
    """Seconds for ``--timeout``: finite, above 0 and at most what a case's ``timeout`` may say."""
    value = _number(text, float, "a number of seconds")
    most = case_schema()["properties"]["timeout"]["maximum"]
    if not 0 < value <= most:  # NaN and infinity fail too
        raise argparse.ArgumentTypeError(f"must be greater than 0 and at most {most} (a day), got {text}")
    return value


def _sources(args: argparse.Namespace):
    return select_sources(args.paths, args.cases_dir, user=not args.no_user_cases)


def _selected(args: argparse.Namespace) -> list[Sourced]:
    everything = load_sourced(_sources(args), args.fixtures_dir)
    kept = {case.full_id for case in select([s.case for s in everything], args.cases, args.tag)}
    chosen = [s for s in everything if s.case.full_id in kept]
    if not chosen:
        print("no case selected", file=sys.stderr)
    return chosen


def _selected_cases(args: argparse.Namespace) -> list[Case]:
    return [s.case for s in _selected(args)]


def cmd_list(args: argparse.Namespace) -> int:
    chosen = _selected(args)
    if args.sources:
        print_sources(make_console(), chosen, Path.cwd())
    else:
        print_case_list(make_console(), [s.case for s in chosen])
    return ExitCode.OK if chosen else ExitCode.NO_CASES


def cmd_validate(args: argparse.Namespace) -> int:
    sources = _sources(args)
    files = [f for source in sources for f in source.files()]
    if not files:
        print("no case file found", file=sys.stderr)
        return ExitCode.NO_CASES
    cases = [s.case for s in load_sourced(sources, args.fixtures_dir)]  # raises UserErrors with every error
    preflight(cases, [Arm(resolve_provider(SCRIPTED), load_prompt(None))])  # turn and system templates render
    print(f"{len(cases)} cases in {len(files)} files are valid")
    if args.baseline:
        config = load_config(args.config)
        judges = resolve_judges(cases, args.judge or config.judge, lambda name: resolve_provider(name, config))
        options = RunOptions(sandbox=Sandbox(), judges=judges)
        weak = weak_cases(cases, options, load_prompt(None))
        for one in weak:
            print(f"warning: {one.case} passes with the {one.agent} agent: its checks do not test the task")
        print(f"baseline: {len({w.case for w in weak})} of {len(cases)} cases pass without doing the task")
    return ExitCode.OK


def cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(case_schema(), indent=2))
    return ExitCode.OK


def cmd_new(args: argparse.Namespace) -> int:
    written = new_case(args.case, args.cases_dir or default_cases_dir(), args.fixture)
    print(f"wrote {args.case} to {written.path}:{written.line}")
    if written.fixture_created:
        print(f"created the empty fixture folder {written.fixture_created}: put the case's starting files there")
    print(f"try it offline: tooltrial run {written.path} -c {args.case}")
    return ExitCode.OK


def _check_output_files(args: argparse.Namespace) -> None:
    """Refuse, before any run starts, ``--report`` / ``--junit`` files and ``--record`` / ``--results``
    folders that cannot be written: a file that is a folder (or the reverse), a path under a file, a
    folder no file can be created in. Raises UserError naming the flag and the path, with a hint."""
    for flag, path, folder in (("--report", args.report, False), ("--junit", args.junit, False),
                               ("--record", args.record, True), ("--results", args.results, True)):
        if path is not None:
            _check_writable(flag, path, folder)


def _check_writable(flag: str, path: Path, folder: bool) -> None:
    """``path`` can be written as a file (``folder`` False) or a folder: what exists of it is of that
    kind, and a file can be made in the nearest folder that exists (tried: permissions lie to root)."""
    nearest = path
    try:
        if not folder and path.is_dir():
            example = path / ("report.json" if flag == "--report" else "junit.xml")
            raise UserError(f"{flag} {path} is a folder", hint=f"give a file path, e.g. {example}")
        if folder and path.exists() and not path.is_dir():
            raise UserError(f"{flag} {path} is a file", hint="give a folder, or a path where one can be made")
        nearest = path if folder and path.is_dir() else path.parent
        while not nearest.exists() and nearest != nearest.parent:
            nearest = nearest.parent
        if not nearest.is_dir():
            raise UserError(f"{flag} {path}: {nearest} is a file, not a folder", hint="give a path inside a folder")
        fd, probe = tempfile.mkstemp(dir=nearest, prefix=".tooltrial-", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"{flag} {path} cannot be written: {nearest}: {e.strerror}",
                        hint="give a path in a folder you can write to") from e


def cmd_run(args: argparse.Namespace) -> int:
    if args.list:
        return cmd_list(args)
    _check_output_files(args)
    cases = _selected_cases(args)
    if not cases:
        return ExitCode.NO_CASES
    config = load_config(args.config)
    names = args.provider or [config.default_provider or SCRIPTED]
    providers = [resolve_provider(name, config, args.verbose) for name in names]
    prompts = [load_prompt(path) for path in (args.prompt or [None])]
    arms = [Arm(p, t) for p in providers for t in prompts]
    preflight(cases, arms)
    judges = resolve_judges(cases, args.judge or config.judge, lambda name: resolve_provider(name, config, args.verbose))
    jobs = args.jobs or config.jobs or DEFAULT_JOBS
    results = args.results or config.results_dir or Path("results")
    hidden = [results, *([args.record] if args.record else [])]  # earlier runs' answers are not for the agent
    options = RunOptions(choose_sandbox(args.sandbox, hidden), keep=args.keep, timeout=args.timeout, judges=judges, jobs=jobs)
    as_json = args.output == "json"
    console = make_console(sys.stderr if as_json else None)
    repeated = args.runs > 1 or any((c.runs or 1) > 1 for c in cases)
    printer = RunPrinter(console, len(arms) > 1, repeated)
    earlier = read_results(args.resume).records if args.resume else []
    writer, started = ResultsWriter(results), utc_now()
    recorder = Recorder(args.record, cases, len(providers), len(prompts), args.runs) if args.record else None
    live = run_live(cases, arms, options, args.runs, printer, writer, earlier, recorder)
    outputs = Conclusion(args.report, args.junit, as_json, args.min_pass_rate, live.left)
    ending = conclude(live.records, cases, writer, started, outputs)
    notes = live.warnings
    if recorder is not None:
        left_out = f" ({recorder.left_out} that the provider failed left out)" if recorder.left_out else ""
        notes = [*notes, f"recorded {recorder.recorded} runs in {recorder.cases_dir}{left_out}; replay them offline with: "
                         f"tooltrial run {recorder.cases_dir} -p scripted"]
    try:  # every result is written: a closed output (| head) only cuts the printing short
        show_ending(ending, printer, as_json, notes, [live.refused] if live.refused else [])
    except BrokenPipeError:
        silence_output()
    return ending.code


def cmd_report(args: argparse.Namespace) -> int:
    as_json = args.output == "json"
    return show_results(args.folders, as_json, make_console(sys.stderr if as_json else None), sys.stdout)



HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "list": cmd_list,
    "validate": cmd_validate,
    "report": cmd_report,
    "schema": cmd_schema,
    "new": cmd_new,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tooltrial``; returns the exit code (see runner.errors.ExitCode)."""

    def dispatch() -> int:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help and --version
            return int(e.code or 0)
        return int(HANDLERS[args.command](args))

    return int(run_at_boundary(dispatch))
