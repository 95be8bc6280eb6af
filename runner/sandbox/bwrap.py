"""bubblewrap (https://github.com/containers/bubblewrap): the command line that confines one
command, and the probe that tells whether bwrap works on this machine.

Inside the sandbox the root file system is read-only and the workspace is the only writable
host folder (bound at its own path, so paths in prompts stay valid). What a command has no
business seeing is covered by empty, read-only memory file systems: the home folders (``/root``,
``/home``, the user's own), ``/run`` and ``/var/run`` (where host services keep their
sockets), tooltrial's results and anything else the caller hides; only the folders of the
programs on ``PATH`` that live there come back, read-only (see ``host_view``). ``/tmp`` and
``/var/tmp`` are private and empty, ``/proc`` and ``/dev`` fresh. Every namespace (user, IPC,
PID, network, UTS, cgroup) is new, so there is no network unless asked and no view of the
host's processes; the command holds no capability, even as root (no mount, unmount or
remount), cannot make user namespaces of its own, runs in its own session and dies with
bwrap. With the seccomp filter (runner.sandbox.seccomp) it cannot open a Unix-domain socket either.
``mount_plan`` lists the mounts in order: the command line is made from it, and runner.sandbox.visible
tells from it which files a command will not find.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runner.sandbox.trial import trial

PROBE_TIMEOUT = 10.0  # seconds
PRIVATE = ("/tmp", "/var/tmp")  # empty and writable inside, thrown away with the command
RUNTIME = ("/run", "/var/run")  # host services' sockets, pid files, credentials
_HOMES = ("/root", "/home")
_SYSTEM = frozenset(("/", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt", "/var", "/srv", "/tmp"))
_TOOL_FOLDERS = ("bin", "sbin", "shims")  # a PATH entry named so lives in a prefix that holds the rest
_HARDENING = ["--unshare-user", "--disable-userns"]  # bwrap 0.8+ with user namespaces
DEV_ENTRIES = frozenset(("core", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
                         "tty", "urandom", "zero"))  # what bwrap --dev makes in a fresh /dev (shm empty)


@dataclass(frozen=True)
class Mount:
    """One mount bwrap makes over the read-only root, in order: a later one at or above a path decides
    what a command finds there.

    Attributes:
        kind: ``dev``, ``proc`` (fresh ones), ``tmpfs`` (an empty memory file system), ``ro-bind`` (the
            host folder at the same path, read-only) or ``bind`` (the same, writable).
        path: where, absolute.
        role: why: ``system`` (/dev, /proc), ``private`` (/tmp, /var/tmp), ``home`` (a home folder hidden),
            ``hidden`` (another folder hidden: /run, the results folder), ``program`` (brought back from a
            hidden folder, see ``host_view``) or ``workspace``.
    """

    kind: str
    path: str
    role: str


@dataclass(frozen=True)
class HostView:
    """What of the host a confined command sees beyond the read-only root file system.

    Attributes:
        hidden: absolute folders covered by an empty memory file system, outermost first.
        exposed: absolute folders inside hidden ones bound back read-only: the prefixes
            (``~/.pyenv``, ``~/.cargo``, a virtualenv) of the programs on ``PATH``.
    """

    hidden: tuple[str, ...]
    exposed: tuple[str, ...]


def home_folders() -> list[Path]:
    """``/root``, ``/home`` and this user's own home (``$HOME`` and its passwd entry), those that exist."""
    found = [Path(p) for p in _HOMES]
    found.append(Path(os.path.expanduser("~")))
    try:
        found.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:  # a uid without a passwd entry (containers)
        pass
    return [p for p in found if p.is_dir()]


@functools.lru_cache(maxsize=64)
def host_view(path: str, hide: tuple[Path, ...] = ()) -> HostView:
    """The HostView for commands whose ``PATH`` is ``path``, with ``hide`` (e.g. the results
    folder) covered as well as the home and runtime folders.

    A hidden folder that is a system folder (``/``, ``/usr``...) or lies inside another is
    left out. A ``PATH`` entry inside a hidden folder brings back its prefix: the folder above
    it when it is named ``bin``, ``sbin`` or ``shims`` (the rest of the install lives there),
    else the entry itself; so do the targets of the symlinks in it (a virtualenv's ``python``
    pointing into ``~/.pyenv``). The rest of the home folders stays unseen.
    """
    candidates = [*home_folders(), *(Path(p) for p in RUNTIME), *hide]
    hidden: list[Path] = []
    for folder in sorted({_real(p) for p in candidates if p.is_dir()}, key=lambda p: len(p.parts)):
        if str(folder) not in _SYSTEM and not any(folder.is_relative_to(h) for h in (*hidden, *map(Path, PRIVATE))):
            hidden.append(folder)
    exposed: list[Path] = []
    for entry in _path_entries(path):
        for folder in (entry, *(target.parent for target in _link_targets(entry))):
            prefix = _brought_back(folder, hidden)
            if prefix is not None and not any(prefix.is_relative_to(e) for e in exposed):
                exposed = [e for e in exposed if not e.is_relative_to(prefix)] + [prefix]
    return HostView(tuple(map(str, hidden)), tuple(map(str, exposed)))


def _brought_back(folder: Path, hidden: Sequence[Path]) -> Path | None:
    """The folder to bind back for a folder of programs inside a hidden one: its prefix (see
    ``host_view``), or itself when the prefix is a hidden folder; None when nothing hides it."""
    def inside(path: Path) -> bool:
        return any(path.is_relative_to(h) and path != h for h in hidden)

    prefix = folder.parent if folder.name in _TOOL_FOLDERS else folder
    return prefix if inside(prefix) else folder if inside(folder) else None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _path_entries(path: str) -> list[Path]:
    """The absolute folders of a ``PATH`` value, symlinks resolved, in order, once each."""
    entries = [_real(Path(p)) for p in path.split(os.pathsep) if os.path.isabs(p)]
    return [p for p in dict.fromkeys(entries) if _is_folder(p)]


def _is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder this user can look at (one inside a folder closed to it is not)."""
    try:
        return path.is_dir()
    except PermissionError:
        return False


def _link_targets(folder: Path) -> list[Path]:
    """Where the symlinks directly in ``folder`` point, resolved (those that resolve)."""
    try:
        links = [entry for entry in os.scandir(folder) if entry.is_symlink()]
    except OSError:
        return []
    return [_real(Path(link.path)) for link in links if os.path.exists(link.path)]


def bwrap_argv(
    binary: str,
    workspace: Path,
    cwd: Path,
    network: bool = False,
    view: HostView = HostView((), ()),
    seccomp_fd: int | None = None,
    hardened: bool = True,
    status_fd: int | None = None,
) -> list[str]:
    """The bwrap arguments (up to and including ``--``) that confine a command to ``workspace``.

    ``cwd`` is where the command starts (the workspace or a folder in it); ``network`` keeps
    the host's network namespace (the case's ``network: true``); ``view`` says what of the host
    to hide and bring back; ``seccomp_fd`` is a file descriptor the command inherits holding
    the seccomp program (runner.sandbox.seccomp), read by bwrap; ``hardened`` adds a user namespace
    in which no further one can be made (``probe`` says whether this bwrap supports it);
    ``status_fd``, an inherited descriptor bwrap writes its JSON status to (``--json-status-fd``:
    an ``exit-code`` line only once the command itself was started; runner.sandbox.started).
    Append the command's own argv to the result.
    """
    argv = [binary, "--ro-bind", "/", "/"]
    for mount in mount_plan(workspace, view):
        if mount.kind == "bind":  # the hidden folders empty and read-only: a write there fails instead of vanishing
            argv += [flag for folder in view.hidden for flag in ("--remount-ro", folder)]
        argv += [f"--{mount.kind}", mount.path, *((mount.path,) if mount.kind.endswith("bind") else ())]
    argv.append("--unshare-all")
    if network:
        argv.append("--share-net")
    if hardened:
        argv += _HARDENING
    argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if status_fd is not None:
        argv += ["--json-status-fd", str(status_fd)]
    argv += ["--chdir", str(cwd), "--"]
    return argv


def mount_plan(workspace: Path, view: HostView) -> list[Mount]:
    """The mounts ``bwrap_argv`` makes for a command in ``workspace`` that sees ``view``, in order."""
    homes = {str(_real(p)) for p in home_folders()}
    plan = [Mount("dev", "/dev", "system"), Mount("proc", "/proc", "system")]
    plan += [Mount("tmpfs", folder, "private") for folder in PRIVATE if os.path.isdir(folder)]
    plan += [Mount("tmpfs", folder, "home" if folder in homes else "hidden") for folder in view.hidden]
    plan += [Mount("ro-bind", folder, "program") for folder in view.exposed]
    return [*plan, Mount("bind", str(workspace), "workspace")]


def mount_at(path: str, plan: Sequence[Mount]) -> Mount | None:
    """The mount of ``plan`` that decides what a command finds at absolute, normalised ``path``: the last
    one at or above it; None where the read-only root shows the host's file."""
    return next((m for m in reversed(plan) if path == m.path or path.startswith(m.path.rstrip("/") + "/")), None)


def probe(name: str = "bwrap", wrap: Callable[[list[str]], list[str]] = list) -> tuple[str | None, bool, str]:
    """``(path, hardened, "")`` when bwrap at ``name`` (a path or a name on PATH) runs a command
    with the sandbox's own arguments, else ``(None, False, reason)`` with a one-line reason.

    ``hardened`` says whether it also takes the user-namespace hardening (bwrap 0.8 or later on
    a kernel with user namespaces); without it the sandbox still holds, with that one layer
    less. Runs ``true`` under bwrap in a throwaway folder once or twice, its command line passed
    through ``wrap`` (what commands start behind: runner.sandbox.guard); a few milliseconds.
    Raises MachineBusy when the machine refused a trial each time it was made, rather than
    taking that for an answer (runner.sandbox.trial).
    """
    binary = shutil.which(name)
    if binary is None:
        return None, False, f"{name} not found on PATH"
    reason = ""
    with tempfile.TemporaryDirectory(prefix="tooltrial-probe-") as folder:
        workspace = Path(folder).resolve()
        for hardened in (True, False):
            try:
                argv = wrap([*bwrap_argv(binary, workspace, workspace, hardened=hardened), "true"])
                done = trial(argv, PROBE_TIMEOUT, binary)
            except (OSError, subprocess.TimeoutExpired) as e:
                return None, False, f"{binary} could not run: {e}"
            if done.returncode == 0:
                return binary, hardened, ""
            lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
            reason = f"{binary} failed: {lines[-1] if lines else f'exit {done.returncode}'}"
    return None, False, reason
