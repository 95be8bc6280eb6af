"""Whether the files a command line names are there for it under bubblewrap, told before it runs: an agent
program under ``/tmp`` or in a home folder would otherwise fail with its interpreter's "can't open file".

The words looked at: each simple command's program (found on the command's ``PATH`` when it has no slash),
and each argument, or the value after the ``=`` of one, that names an existing host file (not a folder: a
command that makes or removes ``/tmp/build`` means its own) by an absolute path, a ``~`` path (the command's
``HOME``) or a relative path leading out of the folder it runs in. Each
is judged, itself and what a symlink there points to, against the mounts bwrap makes
(runner.sandbox.bwrap.mount_plan). Output redirections, variables, globs and the text of nested
``bash -c`` commands are not followed.
"""

from __future__ import annotations

import os
import pwd
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from runner.sandbox.bwrap import DEV_ENTRIES, Mount, mount_at, mount_plan

if TYPE_CHECKING:
    from runner.sandbox.command import Sandbox

_OPERATORS = "();<>|&\n"
_PREFIXES = frozenset(("!", "{", "if", "then", "else", "elif", "do", "while", "until", "time", "exec", "command",
                       "nohup", "env"))  # words after which the program is still to come
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_REASONS = {"private": "{} is a fresh tmpfs there", "home": "{} is a hidden home folder there"}
_NOT_MOUNTED = "the host's {} is not mounted there"


@dataclass(frozen=True)
class Hidden:
    """A file a command names that it would not find under bubblewrap.

    Attributes:
        name: the file as a message names it: its absolute path; for a program found on ``PATH``, the word and
            where (``python3 (/tmp/venv/bin/python3 on PATH)``); ``(a link to TARGET)`` when only its target is hidden.
        folder: the folder whose mount hides it (``/tmp``, ``/root``).
        reason: why, as a clause: ``/tmp is a fresh tmpfs there``.
    """

    name: str
    folder: str
    reason: str


class HiddenFile(Exception):
    """A setup or agent command names a file the sandbox hides; the run is an ERROR of kind ``setup``. The
    message (``hidden_message``) names the command's role, the file, why it is hidden and the fixes."""


def hidden_file(sandbox: Sandbox, command: str, cwd: Path, env: Mapping[str, str], visible: tuple[str, ...] = (),
                relayed: bool = False) -> Hidden | None:
    """The first file ``command`` names that it would not find when ``sandbox`` runs it in ``cwd`` with ``env`` and
    ``visible`` (as ``Access.visible``; ``relayed`` as ``Sandbox.view`` takes it); None when each one is there,
    and always in mode ``none``."""
    if sandbox.mode != "bwrap":
        return None
    plan = mount_plan(cwd, sandbox.view(env, visible, relayed))
    return next(filter(None, (_judged(name, path, plan) for name, path in named_files(command, cwd, env))), None)


def hidden_path(sandbox: Sandbox, path: str, cwd: Path, env: Mapping[str, str], visible: tuple[str, ...] = (),
                relayed: bool = False) -> Hidden | None:
    """``hidden_file`` for the one existing host file or folder at absolute ``path``."""
    if sandbox.mode != "bwrap":
        return None
    return _judged(path, os.path.normpath(path), mount_plan(cwd, sandbox.view(env, visible, relayed)))


def hidden_message(role: str, hidden: Hidden, alternative: str = "") -> str:
    """The error for a ``role`` (``agent command``, ``setup command``) that names ``hidden``: the file, why, and
    the fixes: moving it, ``alternative`` when given, or ``--sandbox none``."""
    move = f"move it out of {hidden.folder}"
    fixes = f"{move}, {alternative}, or" if alternative else f"{move} or"
    return f"{role}: {hidden.name} is hidden under the sandbox ({hidden.reason}); {fixes} run with --sandbox none"


def named_files(command: str, cwd: Path, env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(name, path)`` of each host file ``command`` names (see the module's docstring), in order: ``path``
    absolute and normalised, ``name`` how a message names it. [] for a command that does not split (an open
    quote: bash says so)."""
    try:
        words = _words(command)
    except ValueError:
        return []
    found: list[tuple[str, str]] = []
    program, skip = True, False
    for word in words:
        if word and all(c in _OPERATORS for c in word):
            redirect = "<" in word or ">" in word
            program, skip = program or not redirect, ">" in word  # an output's target need not exist
            continue
        if skip:
            skip = False
            continue
        if program and (word in _PREFIXES or _ASSIGNMENT.match(word)):
            continue
        if program and "/" not in word:
            program = False
            where = _on_path(word, env)
            found += [(f"{word} ({where} on PATH)", where)] if where else []
            continue
        program = False
        for candidate in (word, *([word.partition("=")[2]] if "=" in word else [])):
            path = _host_path(candidate, cwd, env)
            found += [(path, path)] if path else []
    return found


def _words(command: str) -> list[str]:
    """``command`` split into words and operators (``;``, ``&&``, ``|``, a newline, redirections), as the shell does."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATORS)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    return list(lexer)


def _on_path(word: str, env: Mapping[str, str]) -> str | None:
    """Where the program ``word`` is on the command's ``PATH`` (its absolute entries), None when nowhere."""
    path = os.pathsep.join(p for p in env.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(p))
    found = shutil.which(word, path=path)
    return os.path.normpath(found) if found else None


def _host_path(word: str, cwd: Path, env: Mapping[str, str]) -> str | None:
    """The existing host file (not folder) ``word`` names by an absolute, ``~`` or relative path out of ``cwd``;
    else None."""
    if word.startswith("~"):
        user, _, rest = word[1:].partition("/")
        home = env.get("HOME") if not user else _home_of(user)
        if not home:
            return None
        word = os.path.join(home, rest)
    elif "/" not in word:
        return None
    path = os.path.normpath(os.path.join(cwd, word))
    if not os.path.isabs(word) and (path == str(cwd) or path.startswith(f"{cwd}/")):
        return None
    return path if os.path.isfile(path) else None


def _home_of(user: str) -> str | None:
    try:
        return pwd.getpwnam(user).pw_dir
    except KeyError:
        return None


def _judged(name: str, path: str, plan: Sequence[Mount]) -> Hidden | None:
    """Hidden when ``plan`` hides ``path`` (named ``name``) or, for a symlink, what it points to; else None."""
    real = os.path.realpath(path)
    for shown, where in ((name, path), *(((f"{name} (a link to {real})", real),) if real != path else ())):
        mount = _hiding(where, plan)
        if mount is not None:
            return Hidden(shown, mount.path, _REASONS.get(mount.role, _NOT_MOUNTED).format(mount.path))
    return None


def _hiding(path: str, plan: Sequence[Mount]) -> Mount | None:
    """The mount of ``plan`` that hides absolute ``path`` from a command, None when the command finds it: at the
    read-only root, in a bound folder, a fresh ``/proc`` or what bwrap makes in a fresh ``/dev``."""
    mount = mount_at(path, plan)
    if mount is None or mount.kind in ("bind", "ro-bind", "proc") or path == mount.path:
        return None
    if mount.kind == "dev":
        first, _, rest = path.removeprefix("/dev/").partition("/")
        if first in DEV_ENTRIES and not (first == "shm" and rest):
            return None
    return mount
