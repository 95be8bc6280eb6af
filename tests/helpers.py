"""Small builders shared by tests."""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from runner.cli import main
from runner.sandbox.bwrap import host_view
from runner.sandbox.confine import namespace_prefix
from runner.sandbox.guard import guard_prefix
from runner.spec.case import Case
from runner.spec.expect import expect_of, turn_expect_of

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

# The bundled suite, by a fixed list: a case file a user saves in cases/ (as the README says) is theirs,
# and no test that means the bundled suite reads it. tests/test_bundled.py holds that each file exists.
BUNDLED_GROUPS = ("build", "builtin", "calc", "fix", "fs", "general", "git", "refactor", "research", "robustness",
                  "search", "tests", "robustness_injection")
BUNDLED_FILES = tuple(ROOT / "cases" / f"{group}.yml" for group in BUNDLED_GROUPS)
BUNDLED_ARGS = tuple(f"cases/{group}.yml" for group in BUNDLED_GROUPS)  # as a command line in the checkout names them
# The groups the executor tests (worker processes, Ray, shards, the pytest plugin's workers) run to compare one way
# of running with another: mocks (calc), a fixture with verify commands (fix), file tools (fs), git in setup (git).
SAMPLE_GROUPS = ("calc", "fix", "fs", "git")
SAMPLE_CASES = 17


def bundled_suite(tmp_path: Path, groups: Sequence[str] = BUNDLED_GROUPS) -> Path:
    """A folder of links to the bundled suite's files of ``groups`` (all of ``BUNDLED_FILES`` by default), for a
    test that runs a folder: a link resolves to the checkout, so fixtures and records are those of ``cases/``."""
    folder = tmp_path / "bundled"
    folder.mkdir()
    for group in groups:
        (folder / f"{group}.yml").symlink_to(ROOT / "cases" / f"{group}.yml")
    return folder

# Two case files the CLI tests run: GOOD's cases pass with their scripts; BAD_RUN's fail (a wrong answer),
# error (a failing setup command) and stop (over the turn limit).
GOOD = """\
- id: write-hello
  description: Write a greeting file.
  tags: [smoke]
  turns: [Write hello to out.txt]
  expect:
    files:
      out.txt: {equals: "hello\\n"}
    response_contains: [out.txt]
    trace: {must_include: [write_file], max_calls: 1}
  script:
    - tool_calls: [{name: write_file, arguments: {path: out.txt, content: "hello\\n"}}]
    - content: Wrote out.txt.
- id: count-lines
  description: Count lines.
  files: {a.txt: "1\\n2\\n3\\n"}
  setup: [test -f a.txt]
  turns: [How many lines are in a.txt?]
  expect:
    response_matches: ['\\A3 lines\\z']
    verify: test -f a.txt
  script:
    - tool_calls: [{name: read_file, arguments: {path: a.txt}}]
    - content: 3 lines
"""

BAD_RUN = """\
- id: wrong-answer
  turns: [Write hello to out.txt]
  expect:
    files:
      out.txt: {contains: [hello]}
    verify: test -f nothing-here
  script:
    - content: I will not.
- id: broken-setup
  setup: [exit 3]
  turns: [anything]
  script: [{content: hi}]
- id: too-many-turns
  turns: [loop]
  expect: {max_turns: 1}
  script:
    - tool_calls: [{name: list_dir, arguments: {}}]
    - content: done
"""


def make_case(**fields: Any) -> Case:
    """A Case with sensible defaults; any field can be overridden (``expect`` and each of ``turn_expect``
    also as the mapping a case file writes)."""
    base: dict[str, Any] = {
        "group": "t",
        "id": "case",
        "source": Path("t.yml"),
        "line": 1,
        "turns": ("do it",),
    }
    base.update(fields)
    for key in ("turns", "setup", "tags", "deny", "mocks"):
        if isinstance(base.get(key), list):
            base[key] = tuple(base[key])
    if isinstance(base.get("tools"), list):
        base["tools"] = tuple(base["tools"])
    if isinstance(base.get("script"), list):
        base["script"] = tuple(base["script"])
    if isinstance(base.get("expect"), dict):  # written as in a case file
        base["expect"] = expect_of(base["expect"])
    base["turn_expect"] = tuple(turn_expect_of(t) if isinstance(t, dict) else t for t in base.get("turn_expect", ()))
    return Case(**base)


def tooltrial(*argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGV`` in a subprocess (cwd the checkout by default), output captured as text.

    ``env`` defaults to this process's environment less ``COLUMNS``, so tables print at their natural width.
    For where the process itself is the point (see ``run_cli``, the in-process form, for everything else).
    """
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "runner", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env, check=False)



def run_output(done: subprocess.CompletedProcess[str]) -> str:
    """The CLI's stderr less the warning line a machine without a working bubblewrap adds first."""
    return "".join(line for line in done.stderr.splitlines(keepends=True)
                   if not line.startswith("warning: bubblewrap unavailable"))

def config(tmp_path: Path, openai_base: str = "http://127.0.0.1:9/v1", ollama_base: str = "http://127.0.0.1:9",
           extra: str = "", concurrency: int | None = None) -> Path:
    """Write ``tmp_path/tooltrial.yml`` with the aliases ``local-openai`` and ``local-ollama`` (nothing listens on
    the default bases' port 9) and fast retries; ``extra`` is appended as is (more aliases, top-level keys).
    ``concurrency`` sets both aliases' ``max_concurrency`` (None: a loopback alias's default, 1)."""
    path = tmp_path / "tooltrial.yml"
    slots = f"\n    max_concurrency: {concurrency}" if concurrency else ""
    path.write_text(f"""\
providers:
  local-openai:
    model: openai/fake
    api_base: {openai_base}
    api_key_env: TOOLTRIAL_TEST_LOCAL_KEY
    temperature: 0
    timeout: 10
    retries: {{attempts: 3, backoff: 0.05, max_backoff: 0.1}}{slots}
  local-ollama:
    model: ollama/fake
    api_base: {ollama_base}
    retries: {{attempts: 2, backoff: 0.05}}{slots}
{extra}""", encoding="utf-8")
    return path


NOBODY = 65534  # uid and gid of nobody
# Standard-library modules the CLI imports on first use: imported before as_nobody drops root, as nobody cannot read them.
_FIRST_USE = ("encodings.utf_8_sig", "importlib.readers")


@contextlib.contextmanager
def nobody_home() -> Iterator[Path]:
    """A new folder in the temp folder for ``as_nobody``, removed afterwards. Not under pytest's
    tmp_path: the folders above that are closed to other users, nobody included."""
    home = Path(tempfile.mkdtemp(prefix="tooltrial-test-home-"))
    try:
        yield home
    finally:
        shutil.rmtree(home)


def as_nobody(fn: Callable[[], T], home: Path) -> T:
    """``fn()`` in a forked child whose current folder and HOME are ``home`` (see ``nobody_home``),
    as user and group nobody when the tests run as root (as themselves otherwise: then they are
    not root already).

    ``home`` and everything in it is given to nobody first. Only what the interpreter has imported
    already can be used (and ``_FIRST_USE``): the standard library lives where nobody cannot
    read. The result (anything picklable) comes back through a pipe; an exception in the child fails
    the caller with the child's traceback. The child is killed after 120 s (a hang guard).
    """
    as_root = os.getuid() == 0
    for name in _FIRST_USE:
        importlib.import_module(name)
    if as_root:
        for path in (home, *home.rglob("*")):
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        try:
            signal.alarm(120)
            os.chdir(home)
            if as_root:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            os.environ["HOME"] = str(home)
            namespace_prefix.cache_clear()  # probed for root: probe again as nobody
            guard_prefix.cache_clear()
            host_view.cache_clear()
            outcome: tuple[bool, Any] = (True, fn())
        except BaseException:  # noqa: BLE001 (the child reports every failure to the parent)
            outcome = (False, traceback.format_exc())
        with os.fdopen(write, "wb") as out:
            out.write(pickle.dumps(outcome))
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as incoming:
        data = incoming.read()
    _, status = os.waitpid(pid, 0)
    assert data, f"the child as nobody died without a result (wait status {status})"
    ok, value = pickle.loads(data)
    assert ok, f"the child as nobody raised:\n{value}"
    return value


def cli_output(argv: Sequence[str]) -> tuple[int, str, str]:
    """``runner.cli.app(argv)`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def start_run(tmp_path: Path, suite: str, *args: str, new_session: bool = False) -> subprocess.Popen[str]:
    """``tooltrial run`` of ``suite`` (written to ``tmp_path/slow.yml``) with ``args`` in a subprocess, results in
    ``tmp_path/results``, stdout and stderr piped as text; in a session of its own when ``new_session``, so
    every process it starts can be found by its session id. For the tests that signal it."""
    (tmp_path / "slow.yml").write_text(suite)
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "run", str(tmp_path / "slow.yml"), "--results", str(tmp_path / "results"), *args],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=new_session,
    )


def run_cli(*argv: str, cwd: Path = ROOT, env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """``runner.cli.main(ARGV)`` in this process, as ``tooltrial`` runs it in a subprocess: in ``cwd`` (the
    checkout by default), ``COLUMNS`` unset, output captured as text; the working folder and the environment
    are put back afterwards.

    ``env`` changes the environment for the call (a None value unsets the variable); unlike ``tooltrial``'s,
    it does not replace the whole environment. A subprocess stays the point only for signals, the
    sandbox's view of a process's own environment, import-time checks and closed pipes.
    """
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        patch.delenv("COLUMNS", raising=False)
        for name, value in (env or {}).items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        code, out, err = cli_output(argv)
    return subprocess.CompletedProcess(["tooltrial", *argv], code, out, err)


class _Current(io.TextIOBase):
    """A text stream that writes to whatever ``sys.<name>`` is at the time of writing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return getattr(sys, self.name).write(text)

    def flush(self) -> None:
        getattr(sys, self.name).flush()


def load_litellm_once() -> None:
    """Import litellm the way tooltrial does (``load_litellm``), once per test process, and let the log
    handlers tooltrial gave its loggers follow ``sys.stdout``/``sys.stderr`` as ``run_cli`` redirects them:
    a handler keeps the stream it was made with, and in one process that is the first caller's.

    A handler made on another stream is left as it is, so a test still sees where the logs went.
    """
    from runner.providers.litellm_load import LOGGERS, load_litellm

    load_litellm()
    for logger in map(logging.getLogger, LOGGERS):
        for handler in logger.handlers:
            if not isinstance(handler, logging.StreamHandler) or isinstance(handler.stream, _Current):
                continue
            for name in ("stdout", "stderr"):
                if handler.stream is getattr(sys, name):
                    handler.setStream(_Current(name))


def private_mounts() -> list[str]:
    """The command prefix that runs a command in a mount namespace of its own, where it may mount a
    tmpfs that nobody else sees and that goes when it ends: ``unshare`` (util-linux) as root,
    ``unshare -r`` (a user namespace too) otherwise. Skips the test where that is not allowed."""
    prefix = ["unshare", "--mount", "--propagation", "private"] + ([] if os.getuid() == 0 else ["--map-root-user"])
    probe = subprocess.run([*prefix, "mount", "-t", "tmpfs", "tmpfs", tempfile.gettempdir()], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no private mount namespace here: {probe.stderr.strip()}")
    return prefix
