"""What this machine gives a sandbox mode, found out once per invocation by the process that chose the sandbox, and
handed as is to the worker processes and Ray tasks that rebuild it: none of them probes again, so none can decide,
on a busy machine, to confine its runs less than the suite said.
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.sandbox.confine import namespace_prefix
from runner.sandbox.guard import guard_prefix
from runner.sandbox.seccomp import socket_filter


@dataclass(frozen=True)
class Probed:
    """What a sandbox mode has here (picklable).

    Attributes:
        filter: the seccomp program bubblewrap loads (runner.sandbox.seccomp); None in mode ``none`` or without
            libseccomp.
        namespace: mode ``none``'s PID-namespace prefix (runner.sandbox.confine.namespace_prefix); None under
            bubblewrap or where the machine allows none.
        guard: the prefix every command starts behind (runner.sandbox.guard.guard_prefix); None where the machine
            makes no such namespace.
        weaknesses: what the mode cannot guarantee here, one sentence each.
    """

    filter: bytes | None
    namespace: tuple[str, ...] | None
    guard: tuple[str, ...] | None
    weaknesses: tuple[str, ...]


def probe_machine(mode: str) -> Probed:
    """The Probed of sandbox ``mode`` (``bwrap`` or ``none``) on this machine; a few milliseconds once a process.
    Raises MachineBusy when a trial was refused each time it was made (runner.sandbox.trial)."""
    weaknesses = []
    program = namespace = None
    if mode == "bwrap":
        program, missing = socket_filter()
        if missing:
            weaknesses.append(f"commands can reach the host's Unix sockets: {missing}")
    else:
        namespace, missing = namespace_prefix()
        if namespace is None:
            weaknesses.append(f"no PID namespace for commands ({missing}): they can read the environment of your "
                              "other processes and leave processes running")
    guard, missing = guard_prefix()
    if guard is None and (mode == "bwrap" or namespace is not None):  # else the sentence above says it
        weaknesses.append(f"a command started just as tooltrial is killed may outlive it ({missing})")
    return Probed(program, namespace, guard, tuple(weaknesses))
