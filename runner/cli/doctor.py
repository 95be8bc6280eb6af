"""``tooltrial doctor``: is each provider ready? Its key set, its server answering and, with ``--call``,
its model making native tool calls (runner.providers.probe), as a table, before a suite finds out the
slow way. Each name is first checked as ``run`` checks it: one ``run`` refuses is a usage error (exit 4)
with ``run``'s message, a key ``run`` finds unset a failing row. Exit 0 when every check that ran
passed, 6 (infrastructure) when one failed. Above the table, the sandbox runs will use and its checks
(runner.sandbox.diagnose); they do not change the exit code: without bubblewrap runs go on, unconfined."""

from __future__ import annotations

import argparse
import json
import os
from concurrent.futures import ThreadPoolExecutor

from rich.table import Table
from rich.text import Text

from runner.errors import ExitCode, UserError
from runner.names import SCRIPTED
from runner.providers.precheck import KEY_HINT
from runner.providers.probe import FAIL, OK, Diagnosis, as_dict
from runner.providers.registry import kind_of, precheck, resolve_provider
from runner.sandbox.diagnose import SandboxReport, diagnose_sandbox
from runner.spec.config import Config, load_config
from runner.terminal.console import make_console, shown
from runner.text import plural

_STYLES = {OK: "green", FAIL: "bold red"}
_MARKS = {OK: "ok", FAIL: "FAIL"}
_CHECK_MARKS: dict[bool | None, tuple[str, str]] = {True: ("ok", "green"), False: ("no", "bold red"),
                                                    None: ("-", "dim")}  # by a sandbox check's ok


def add(sub: argparse._SubParsersAction) -> None:
    """The ``doctor`` subcommand's parser."""
    doctor = sub.add_parser("doctor", help="check the sandbox, and each provider's key, server and tool calls")
    doctor.add_argument("-p", "--provider", action="append", default=[],
                        help="check this provider (repeatable; default: scripted and every alias in tooltrial.yml)")
    doctor.add_argument("--config", metavar="FILE", help="project config (default: ./tooltrial.yml if it exists)")
    doctor.add_argument("--call", action="store_true", help="send each live model one tiny request with one tool")
    doctor.add_argument("--output", choices=["text", "json"], default="text", help="a table, or JSON on stdout")
    doctor.add_argument("-v", "--verbose", action="store_true", help="let litellm log its requests (DEBUG)")


def command(args: argparse.Namespace) -> int:
    """Check the providers, all at once; print the table (or JSON); 0 when none failed, else 6."""
    config = load_config(args.config)
    names = args.provider or list(dict.fromkeys([SCRIPTED, *config.providers, *_defaults(config)]))
    if args.call and any(kind_of(name, config.providers).live for name in names):
        from runner.providers.litellm_load import load_litellm

        load_litellm(args.verbose)  # once, on this thread, before the checks' threads use it
    environ = dict(os.environ)
    refused = {name: _refused(name, config, environ, args.verbose) for name in names}

    def probe(name: str) -> Diagnosis:
        return kind_of(name, config.providers).probe(name, config, args.call, environ, args.verbose, refused[name])

    with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
        found = list(pool.map(probe, names))
    if args.output == "json":
        print(json.dumps([as_dict(d) for d in found], indent=2))
    else:
        _print_sandbox(diagnose_sandbox())
        _print_table(found)
    return ExitCode.OK if all(d.ok for d in found) else ExitCode.INFRASTRUCTURE


def _refused(name: str, config: Config, environ: dict[str, str], verbose: bool) -> str | None:
    """What ``tooltrial run -p NAME`` would say of ``name`` before its first request, by the same checks
    (runner.providers.precheck, and litellm for a bare name, which only it can tell): None when nothing,
    run's message for a key that is not set (a failing row; its file position and hint left out).

    Raises run's UserError (exit 4) for a name run cannot use at all: a misspelt alias, a provider
    without its model, a name litellm does not know."""
    try:
        precheck(name, config, environ)
        if kind_of(name, config.providers).litellm_decides:
            resolve_provider(name, config, verbose)  # loads litellm: only a bare name pays for it
    except UserError as e:
        if e.hint == KEY_HINT:
            return e.message
        raise
    return None


def _defaults(config: Config) -> list[str]:
    """The config's ``default_provider`` and ``judge``, where set (an alias among them is checked once)."""
    return [name for name in (config.default_provider, config.judge) if name]


def _print_sandbox(report: SandboxReport) -> None:
    """``sandbox: runs use MODE (why)``, then one line per check, and a blank line."""
    console = make_console()
    console.print(shown(f"sandbox: runs use {report.mode} ({report.why})"))
    width = max(len(check.name) for check in report.checks) + 2
    for check in report.checks:
        mark, style = _CHECK_MARKS[check.ok]
        console.print(shown(f"  {check.name.ljust(width)}"), shown(f"{mark} {check.detail}", style), sep="")
    console.print()


def _print_table(found: list[Diagnosis]) -> None:
    console = make_console()
    table = Table("provider", "key", "endpoint", "tool calls", box=None, pad_edge=False)
    for diagnosis in found:
        cells = [_cell(f.status, f.detail) for f in diagnosis.findings] + [""] * (3 - len(diagnosis.findings))
        table.add_row(shown(f"{diagnosis.name} ({diagnosis.model})" if diagnosis.model != diagnosis.name
                            else diagnosis.name), *cells)
    console.print(table)
    failed = [d.name for d in found if not d.ok]
    ready = f"{len(found) - len(failed)} of {plural(len(found), 'provider')} ready"
    console.print(shown(f"{ready}; not ready: {', '.join(failed)}" if failed else ready))


def _cell(status: str, detail: str) -> Text:
    mark = _MARKS.get(status, "-")
    return shown(f"{mark} {detail}", _STYLES.get(status, "dim"))
