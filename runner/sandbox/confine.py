"""What every command runs under, in each sandbox mode: resource limits and, without bubblewrap, a PID
namespace of its own where this machine allows one (its death with tooltrial: runner.sandbox.guard).

All of it comes from util-linux (``prlimit``, ``setpriv``, ``unshare``; in every Debian and
Ubuntu system) placed in front of the command, rather than a ``preexec_fn``: Python then
keeps its vfork start, which does not copy tooltrial's memory (about 2 ms a command instead
of 14 ms once litellm is loaded).
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
import subprocess

from runner.sandbox.trial import trial

MEMORY_LIMIT = 4 * 2**30  # bytes of data memory per process (RLIMIT_DATA: heap and private writable mappings)
FILE_SIZE_LIMIT = 2**30  # bytes: the largest file a command's process may write (RLIMIT_FSIZE)
CPU_LIMIT_MAX = 7 * 24 * 3600  # seconds: the most CPU time a command is ever given, whatever its timeout
_PRLIMIT_FLAGS = {resource.RLIMIT_DATA: "--data", resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_CPU: "--cpu"}
_PROBE_TIMEOUT = 10.0  # seconds
# Root keeps every capability across exec: the command drops them all, so it cannot
# mount, unmount, read another process's memory or override file permissions.
_NO_CAPABILITIES = ("--inh-caps=-all", "--bounding-set=-all", "--no-new-privs")


def resource_limits(timeout: float) -> dict[int, int]:
    """The rlimits (``resource.RLIMIT_*`` to a value) every command's processes run under.

    Memory: MEMORY_LIMIT bytes of data (address space merely reserved, as runtimes
    do, does not count; an allocation past it fails). Files: FILE_SIZE_LIMIT bytes
    (a write past it gets SIGXFSZ). CPU: ``timeout`` seconds on every CPU of the
    machine, rounded up and at most CPU_LIMIT_MAX, the most a command could use before
    its timeout; it stops a process that escaped the process-group kill (SIGKILL at the
    limit). A hard limit already lower in tooltrial's own process is kept.
    """
    cpu = timeout * (os.cpu_count() or 1)
    wanted = {
        resource.RLIMIT_DATA: MEMORY_LIMIT,
        resource.RLIMIT_FSIZE: FILE_SIZE_LIMIT,
        resource.RLIMIT_CPU: max(1, math.ceil(min(cpu, CPU_LIMIT_MAX))),
    }
    limits = {}
    for kind, value in wanted.items():
        hard = resource.getrlimit(kind)[1]
        limits[kind] = value if hard == resource.RLIM_INFINITY else min(value, hard)
    return limits


@functools.cache
def util_linux() -> tuple[str, str] | None:
    """The paths of util-linux's ``prlimit`` and ``setpriv``, or None where either is missing:
    commands then run without resource limits and parent-death signal."""
    prlimit, setpriv = shutil.which("prlimit"), shutil.which("setpriv")
    return (prlimit, setpriv) if prlimit and setpriv else None


def limited(argv: list[str], timeout: float) -> list[str]:
    """``argv`` behind ``prlimit``, which applies ``resource_limits(timeout)`` (soft and hard)
    before it execs the rest: the limits survive exec and fork, so every process of the command
    has them. ``argv`` as is without util-linux.
    """
    tools = util_linux()
    if tools is None:
        return argv
    flags = [f"{_PRLIMIT_FLAGS[kind]}={value}" for kind, value in resource_limits(timeout).items()]
    return [tools[0], *flags, "--", *argv]


@functools.cache
def namespace_prefix() -> tuple[tuple[str, ...] | None, str]:
    """``(prefix, "")``: the ``unshare`` (and ``setpriv``) arguments that put a command (appended
    after them) in a PID namespace with a fresh ``/proc`` here, or ``(None, reason)`` where this
    machine allows none (no util-linux, or no user namespaces for a user that is not root).

    The command is the namespace's first process: when it exits, or tooltrial dies, the kernel
    kills every process it started, ``setsid``, ``nohup`` and double forks included; its
    ``/proc`` shows only those processes, so no other process's environment (where API keys
    are) is readable; it holds no capability.

    As root: PID and mount namespaces, then every capability dropped. As another user: a user
    namespace mapping that user to itself (its files stay its own) around the same.
    Probed once: runs ``true`` that way. Raises MachineBusy when the machine refused the trial
    each time it was made (runner.sandbox.trial).
    """
    unshare, tools = shutil.which("unshare"), util_linux()
    if unshare is None or tools is None:
        return None, "util-linux's unshare and setpriv are not installed"
    drop = (tools[1], *_NO_CAPABILITIES, "--")
    spaces = ("--pid", "--fork", "--kill-child", "--mount-proc")
    users = [()] if os.geteuid() == 0 else [("--user", "--map-current-user"), ("--user", "--map-root-user")]
    reason = ""
    for user in users:
        prefix = (unshare, *user, *spaces, "--", *drop)
        try:
            done = trial([*prefix, "true"], _PROBE_TIMEOUT, "unshare")
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"unshare could not run: {e}"
        if done.returncode == 0:
            return prefix, ""
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        reason = lines[-1] if lines else f"unshare exited with {done.returncode}"
    return None, reason


def hide_own_environment() -> None:
    """Make tooltrial's own process undumpable (``prctl(PR_SET_DUMPABLE, 0)``): another process of
    the same user, a command without a PID namespace of its own included, can no longer read
    its ``/proc/<pid>/environ`` (where the API keys are) or its memory. Root still can."""
    import ctypes

    pr_set_dumpable = 4
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)
