"""Small builders shared by tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from runner.cases import Case

ROOT = Path(__file__).resolve().parent.parent


def make_case(**fields: Any) -> Case:
    """A Case with sensible defaults; any field can be overridden."""
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
    return Case(**base)


def tooltrial(*argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGV`` in a subprocess (cwd the checkout by default), output captured as text.

    ``env`` defaults to this process's environment less ``COLUMNS``, so tables print at their natural width.
    """
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "runner", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)



def run_output(done: subprocess.CompletedProcess[str]) -> str:
    """The CLI's stderr less the warning line a machine without a working bubblewrap adds first."""
    return "".join(line for line in done.stderr.splitlines(keepends=True)
                   if not line.startswith("warning: bubblewrap unavailable"))

def config(tmp_path: Path, openai_base: str = "http://127.0.0.1:9/v1", ollama_base: str = "http://127.0.0.1:9",
           extra: str = "") -> Path:
    """Write ``tmp_path/tooltrial.yml`` with the aliases ``local-openai`` and ``local-ollama`` (nothing listens on
    the default bases' port 9) and fast retries; ``extra`` is appended as is (more aliases, top-level keys)."""
    path = tmp_path / "tooltrial.yml"
    path.write_text(f"""\
providers:
  local-openai:
    model: openai/fake
    api_base: {openai_base}
    api_key_env: TOOLTRIAL_TEST_LOCAL_KEY
    temperature: 0
    timeout: 10
    retries: {{attempts: 3, backoff: 0.05, max_backoff: 0.1}}
  local-ollama:
    model: ollama/fake
    api_base: {ollama_base}
    retries: {{attempts: 2, backoff: 0.05}}
{extra}""", encoding="utf-8")
    return path
