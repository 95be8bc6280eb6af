"""A live run's start-up and per-run work: litellm imported once a process (the garbage collector off
meanwhile, on again after), its switches written to
the environment once and on the main thread; one litellm provider for every run, no logger level set again per run; errors told as before
(a failed import, an unknown model, a case file's own mistake)."""

from __future__ import annotations

import gc
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.providers import litellm_load
from runner.providers.litellm import LiteLLMProvider
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import ROOT, config, run_cli

pytestmark = pytest.mark.usefixtures("litellm_loaded")

CASES = """\
- id: first
  description: Say done.
  turns: [Say done.]
  expect: {response_contains: [done]}
- id: second
  description: Say done again.
  turns: [Say done again.]
  expect: {response_contains: [done]}
"""

# In a fresh interpreter: count the one-time load, the providers made, the LiteLLM loggers' level sets and
# the environment writes (with the thread that made each) over a live run of 2 cases x 2 runs at -j 2.
_PROBE = """\
import builtins, gc, json, logging, os, sys, threading
from runner.providers import litellm_load
from runner.providers.litellm import LiteLLMProvider
from tests.fake_servers import OpenAIServer, openai_reply
seen = {"loads": [], "providers": 0, "levels": 0, "environ": [], "collector at import": []}
imported = builtins.__import__
def watched(name, *args, **kwargs):
    if name == "litellm" and name not in sys.modules:
        seen["collector at import"].append(gc.isenabled())
    return imported(name, *args, **kwargs)
builtins.__import__ = watched
first_load, init, set_level, put = litellm_load._first_load, LiteLLMProvider.__init__, logging.Logger.setLevel, os._Environ.__setitem__
def counted_load():
    seen["loads"].append(threading.current_thread().name)
    return first_load()
def counted_init(self, *args, **kwargs):
    seen["providers"] += 1
    init(self, *args, **kwargs)
def counted_level(self, level):
    seen["levels"] += self.name in litellm_load.LOGGERS
    set_level(self, level)
def counted_put(self, key, value):
    seen["environ"].append([key, threading.current_thread().name])
    put(self, key, value)
litellm_load._first_load, LiteLLMProvider.__init__, logging.Logger.setLevel = counted_load, counted_init, counted_level
os._Environ.__setitem__ = counted_put
from runner.cli import main
with OpenAIServer(fallback=openai_reply("done")) as server:
    with open(sys.argv[2], encoding="utf-8") as old:
        config = old.read().replace("http://127.0.0.1:9/v1", server.api_base)
    with open(sys.argv[2], "w", encoding="utf-8") as new:
        new.write(config)
    code = main(["run", sys.argv[1], "-p", "local-openai", "--config", sys.argv[2], "--results", sys.argv[3],
                 "--runs", "2", "-j", "2", "-q"])
print(json.dumps({"code": code, **seen, "collector after": gc.isenabled(), "frozen": gc.get_freeze_count() > 100_000}))
"""


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    """A bare environment: no LITELLM_* switch set yet, the checkout importable."""
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
            "TOOLTRIAL_TEST_LOCAL_KEY": "sk-test", **more}


def _report(results: Path) -> dict[str, Any]:
    (folder,) = results.iterdir()
    report: dict[str, Any] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return report


@pytest.mark.slow
def test_a_fresh_live_run_loads_litellm_once_and_writes_the_environment_on_the_main_thread_before_any_run(
        tmp_path: Path) -> None:
    cases = tmp_path / "cases.yml"
    cases.write_text(CASES, encoding="utf-8")
    path = config(tmp_path)
    done = subprocess.run([sys.executable, "-c", _PROBE, str(cases), str(path), str(tmp_path / "r")],
                          capture_output=True, text=True, env=_env(tmp_path), cwd=ROOT, timeout=120, check=False)
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen == {"code": 0, "loads": ["MainThread"], "providers": 1, "levels": 3,
                    "environ": [["LITELLM_LOCAL_MODEL_COST_MAP", "MainThread"], ["LITELLM_OFFLINE_MODE", "MainThread"],
                                ["LITELLM_MODE", "MainThread"]],
                    "collector at import": [False], "collector after": True, "frozen": True}, done.stderr
    report = _report(tmp_path / "r")
    assert sorted((r["case"], r["run"], r["status"], r["requests"]) for r in report["runs"]) == [
        ("cases/first", 1, "pass", 1), ("cases/first", 2, "pass", 1),
        ("cases/second", 1, "pass", 1), ("cases/second", 2, "pass", 1)]


def test_every_run_shares_one_provider_and_no_run_sets_a_level_or_writes_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = {"providers": 0, "levels": 0, "environ": 0}
    init, set_level, put = LiteLLMProvider.__init__, logging.Logger.setLevel, os._Environ.__setitem__

    def counted_init(self: LiteLLMProvider, *args: Any, **kwargs: Any) -> None:
        seen["providers"] += 1
        init(self, *args, **kwargs)

    def counted_level(self: logging.Logger, level: int | str) -> None:
        seen["levels"] += self.name in litellm_load.LOGGERS
        set_level(self, level)

    def counted_put(self: Any, key: str, value: str) -> None:
        seen["environ"] += 1
        put(self, key, value)

    cases = tmp_path / "cases.yml"
    cases.write_text(CASES, encoding="utf-8")
    with OpenAIServer(fallback=openai_reply("done")) as server:
        path = config(tmp_path, openai_base=server.api_base)
        monkeypatch.setenv("TOOLTRIAL_TEST_LOCAL_KEY", "sk-test")  # before the count starts
        monkeypatch.delenv("COLUMNS", raising=False)  # else run_cli's putting it back (xdist sets it) counts
        monkeypatch.setattr(LiteLLMProvider, "__init__", counted_init)
        monkeypatch.setattr(logging.Logger, "setLevel", counted_level)
        monkeypatch.setattr(os._Environ, "__setitem__", counted_put)
        done = run_cli("run", str(cases), "-p", "local-openai", "--config", str(path), "--results",
                       str(tmp_path / "r"), "--runs", "3", "-j", "3", "-q")
        monkeypatch.undo()
    assert done.returncode == 0, done.stderr
    assert seen == {"providers": 1, "levels": 0, "environ": 0}
    report = _report(tmp_path / "r")
    assert sorted((r["case"], r["run"], r["status"]) for r in report["runs"]) == [
        ("cases/first", 1, "pass"), ("cases/first", 2, "pass"), ("cases/first", 3, "pass"),
        ("cases/second", 1, "pass"), ("cases/second", 2, "pass"), ("cases/second", 3, "pass")]
    assert len(server.chats) == 6


def test_a_model_litellm_does_not_know_is_told_before_any_run(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yml"
    cases.write_text(CASES, encoding="utf-8")
    done = run_cli("run", str(cases), "-p", "no-such-model-anywhere", "--config", str(config(tmp_path)),
                   "--results", str(tmp_path / "r"))
    assert (done.returncode, done.stdout) == (4, "")
    assert done.stderr.splitlines() == [
        ("error: cannot use provider 'no-such-model-anywhere': litellm knows no provider for model "
         "'no-such-model-anywhere' (name a model as provider/model, e.g. -p ollama/qwen3 or -p openai/gpt-4o, "
         "or an alias from tooltrial.yml)")]
    assert not (tmp_path / "r").exists()


_BROKEN = """\
import sys
from runner.cli import main
print(main(sys.argv[1:]), "litellm" in sys.modules)
"""


def test_a_failed_import_and_a_case_file_mistake_are_told_as_before(tmp_path: Path) -> None:
    # a litellm that fails to import, first on the path: it raises where the run first needs it
    (tmp_path / "site" / "litellm").mkdir(parents=True)
    (tmp_path / "site" / "litellm" / "__init__.py").write_text("raise ImportError('litellm is broken here')\n")
    cases, bad = tmp_path / "cases.yml", tmp_path / "bad.yml"
    cases.write_text(CASES, encoding="utf-8")
    bad.write_text("- id: bad\n  turns: [Say done.]\n  expect: {response_contain: [done]}\n", encoding="utf-8")
    env = _env(tmp_path, PYTHONPATH=f"{tmp_path / 'site'}:{ROOT}", TMPDIR=str(tmp_path))
    argv = ["run", "-p", "local-openai", "--config", str(config(tmp_path)), "--results", str(tmp_path / "r")]
    failed = subprocess.run([sys.executable, "-c", _BROKEN, *argv, str(cases)], capture_output=True, text=True,
                            env=env, cwd=ROOT, timeout=60, check=False)
    (log,) = tmp_path.glob("tooltrial-internal-error-*.log")
    assert (failed.stdout, failed.stderr) == ("3 False\n", f"internal error: ImportError: litellm is broken here (traceback in {log})\n")
    assert "ImportError: litellm is broken here" in log.read_text(encoding="utf-8")
    mistaken = subprocess.run([sys.executable, "-c", _BROKEN, *argv, str(bad)], capture_output=True, text=True,
                              env=env, cwd=ROOT, timeout=60, check=False)
    assert mistaken.stdout == "4 False\n"
    assert mistaken.stderr.startswith(f"error: {bad}:3:")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("was_on", [True, False])
def test_the_collector_is_off_during_the_import_and_as_it_was_after(was_on: bool) -> None:
    (gc.enable if was_on else gc.disable)()
    try:
        with litellm_load._collector_off():
            during = gc.isenabled()
        assert (during, gc.isenabled()) == (False, was_on)
    finally:
        gc.enable()
