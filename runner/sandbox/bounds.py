"""What one command runs under besides its command line, folder and environment (runner.sandbox.command.Sandbox.run):
what bounds it (``Bounds``: time, output, Ctrl-C) and what of the host it may reach (``Access``: the network, one
forwarded port, more program folders).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from runner.text import OUTPUT_LIMIT


@dataclass(frozen=True)
class Bounds:
    """What bounds one command.

    Attributes:
        timeout: seconds it may take; when they pass, its whole process group is stopped and the result is
            ``timed_out``.
        output_limit: bytes of its output kept (of each stream, when read apart), head and tail with a marker line.
        cancel: once set (the suite's Ctrl-C), the command is stopped as its timeout stops it; None: never.
    """

    timeout: float
    output_limit: int = OUTPUT_LIMIT
    cancel: threading.Event | None = None


@dataclass(frozen=True)
class Access:
    """What of the host one command may reach besides its folder.

    Attributes:
        network: under bwrap, keep the host network and its Unix sockets (in mode ``none`` they are there anyway).
        forward: a TCP port (1-65535) of the host's 127.0.0.1 that the command reaches at the same address: under
            bwrap without ``network`` the only host address it reaches, relayed by runner.sandbox.forward (bounded
            connections and bytes); elsewhere the host loopback is reachable anyway. None: no port is forwarded.
        visible: more folders of programs (an external agent's own) brought back read-only from hidden homes under
            bwrap, as ``PATH``'s are.
        readable: more host folders (absolute) bound read-only at their own paths under bwrap, over the private
            ``/tmp`` too: the files an ``expect.check`` command reads (runner.checks.command).

    Raises ValueError for a ``forward`` port outside 1-65535.
    """

    network: bool = False
    forward: int | None = None
    visible: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.forward is not None and not 0 < self.forward < 65536:
            raise ValueError(f"forward port {self.forward} is not a TCP port (1-65535)")


NO_ACCESS = Access()  # no host network, no forwarded port, no more program folders
