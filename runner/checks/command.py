"""``expect.check``: checks written in any language, as commands run after the agent.

Each command runs as ``verify``'s do (in the workspace, under the run's sandbox, its time the run's command timeout
or its own ``timeout``, cut at the run's deadline), with what the agent did written to files outside the workspace
after the agent finished, named by environment variables:

- ``TOOLTRIAL_REPLY``: the final reply, UTF-8 text;
- ``TOOLTRIAL_TRACE``: the tool calls, a JSON list of ``{turn, name, arguments, result, status, error}``
  (``turn`` 0-based; ``arguments`` null when they did not parse; ``status`` as the record's steps);
- ``TOOLTRIAL_TURNS``: each finished turn's reply, a JSON list of strings.

Exit 0 passes. The last line of stdout, when it starts with ``{``, is the verdict:
``{"pass": bool, "score": 0..1, "message": "..."}``, every key optional (``pass`` defaults to exit 0; a non-zero
exit fails whatever it says). ``score`` is partial credit: the result's share of the outcome (or, with
``process: true``, the process) score instead of 1 or 0. A failed command that gave no message is told by the last
line of its stdout and of its stderr (what it printed last, a crashed script's exception).

A check that cannot give a verdict is the case's mistake, not the agent's: a program the shell did not find (exit
127: ``command not found``, ``No such file or directory``) or a malformed verdict line makes its result one that
could not be made (``error_kind`` ``check_error``), so the run is an ERROR blamed on the case, not a failed check.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.checks.base import OUTCOME, PROCESS, CheckCommand, CheckContext, CheckResult
from runner.kinds import ErrorKind
from runner.run.trajectory import Trajectory
from runner.spec.expect import as_list

NOT_FOUND = 127  # the shell's exit status for a program it could not find or run as named
_NOT_FOUND = re.compile(r": (command not found|No such file or directory)$")
MESSAGE_LIMIT = 500  # characters of a check's own message kept on its result
NAME_LIMIT = 80  # characters of a command shown as the name of a check that has none
VERDICT_KEYS = frozenset({"pass", "score", "message"})
_VERDICT_HINT = 'the last line of stdout must be one JSON object such as {"pass": true, "score": 0.5, "message": "..."}'


class Malformed(ValueError):
    """A verdict line on stdout that is not the object ``expect.check`` reads; its message says what is wrong."""


def check_commands(spec: Any, ctx: CheckContext) -> list[CheckResult]:
    """One ``check`` result per command of ``spec`` (a command, a ``{run, name, process, timeout}`` mapping, or a
    list of them), in order; its category ``process`` when the item says ``process: true``, else ``outcome``."""
    items = [{"run": item} if isinstance(item, str) else item for item in as_list(spec)]
    if ctx.run_check is None:
        return [CheckResult("check", False, f"check {_name(item)}: no command may run here") for item in items]
    folder = Path(tempfile.mkdtemp(prefix="tooltrial-check-"))  # mode 0700, outside the workspace
    try:
        env = _write(folder, ctx.trajectory)
        return [_one(item, env, str(folder), ctx) for item in items]
    finally:
        folder.chmod(0o700)
        shutil.rmtree(folder, ignore_errors=True)


def _write(folder: Path, trajectory: Trajectory) -> dict[str, str]:
    """Write the run's reply, trace and turn replies into ``folder``, made read-only; their variables."""
    steps = [{"turn": s.turn, "name": s.name, "arguments": s.arguments, "result": s.result, "status": s.status,
              "error": s.is_error} for s in trajectory.steps]
    files = {"TOOLTRIAL_REPLY": ("reply.txt", trajectory.final_reply),
             "TOOLTRIAL_TRACE": ("trace.json", json.dumps(steps, ensure_ascii=False, default=str)),
             "TOOLTRIAL_TURNS": ("turns.json", json.dumps(trajectory.replies, ensure_ascii=False))}
    env = {}
    for variable, (name, text) in files.items():
        path = folder / name
        path.write_text(text, encoding="utf-8", errors="replace")
        path.chmod(0o444)
        env[variable] = str(path)
    folder.chmod(0o500)
    return env


def _name(item: Mapping[str, Any]) -> str:
    """The item's ``name``, else its command's first line, shortened to NAME_LIMIT characters."""
    if item.get("name"):
        return str(item["name"])
    lines = str(item["run"]).strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= NAME_LIMIT and len(lines) == 1 else line[:NAME_LIMIT] + "..."


def _one(item: Mapping[str, Any], env: dict[str, str], folder: str, ctx: CheckContext) -> CheckResult:
    """The result of running one check item; see the module's docstring."""
    assert ctx.run_check is not None
    name, category = _name(item), PROCESS if item.get("process") else OUTCOME
    timeout = float(item["timeout"]) if item.get("timeout") is not None else None
    done = ctx.run_check(CheckCommand(str(item["run"]), env, (folder,), timeout))
    if done.timed_out:
        return CheckResult("check", False, f"check {name} timed out after {done.duration:.1f}s", category)
    said = [_last_line(done.output), _last_line(done.stderr or "")]
    if done.exit_code == NOT_FOUND and _NOT_FOUND.search(said[1]):
        return CheckResult("check", False, f"check {name}: program not found (exit {NOT_FOUND}): {_bounded(said[1])}",
                           category, error_kind=ErrorKind.CHECK_ERROR)
    try:
        verdict = verdict_of(done.output)
    except Malformed as e:
        return CheckResult("check", False, f"check {name}: malformed verdict on stdout ({e}); {_VERDICT_HINT}",
                           category, error_kind=ErrorKind.CHECK_ERROR)
    passed = done.exit_code == 0 and verdict.get("pass", True)
    text = verdict.get("message") or ("passed" if passed else "failed")
    if done.exit_code != 0:
        text += f" (exit {done.exit_code})"
    if not passed and "message" not in verdict and any(said):  # what it printed last says why
        text += ": " + " | ".join(_bounded(line) for line in said if line)
    score = verdict.get("score")
    if score is not None:
        text += f" (score {score:.2f})"
    return CheckResult("check", passed, f"check {name}: {text}", category, score=score)


def _last_line(text: str) -> str:
    """The last line of ``text`` that is not blank, else ``""``."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def verdict_of(stdout: str) -> dict[str, Any]:
    """The verdict on the last non-blank line of ``stdout`` when it starts with ``{``, else ``{}``: ``pass`` (bool),
    ``score`` (a number from 0 to 1) and ``message`` (its white space collapsed, at most MESSAGE_LIMIT characters),
    each only when given. Raises Malformed naming what is wrong: not JSON, not an object, an unknown key, a value
    of the wrong type or range."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines or not lines[-1].lstrip().startswith("{"):
        return {}
    try:
        value = json.loads(lines[-1])
    except json.JSONDecodeError as e:
        raise Malformed(f"not JSON: {e}") from e
    if not isinstance(value, dict):
        raise Malformed("not one JSON object")
    unknown = sorted(set(value) - VERDICT_KEYS)
    if unknown:
        raise Malformed(f"unknown key {unknown[0]!r}")
    if "pass" in value and not isinstance(value["pass"], bool):
        raise Malformed('"pass" must be true or false')
    score = value.get("score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))
                              or not math.isfinite(score) or not 0 <= score <= 1):
        raise Malformed('"score" must be a number from 0 to 1')
    message = value.get("message")
    if message is not None and not isinstance(message, str):
        raise Malformed('"message" must be a string')
    verdict: dict[str, Any] = {key: value[key] for key in ("pass",) if key in value}
    if score is not None:
        verdict["score"] = float(score)
    if message:
        verdict["message"] = _bounded(message)
    return verdict


def _bounded(text: str) -> str:
    """``text`` on one line, its white space collapsed, cut to MESSAGE_LIMIT characters."""
    words = " ".join(text.split())
    return words if len(words) <= MESSAGE_LIMIT else words[:MESSAGE_LIMIT] + "..."

