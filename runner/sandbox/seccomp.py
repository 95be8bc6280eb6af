"""The seccomp filter bubblewrap loads before a command: no Unix-domain socket can be opened.

A new network namespace cuts a command off from the host's network and from its
abstract Unix sockets, but not from sockets bound to a path in the file system:
any host service listening at a path the command can see (a database, a Docker
or D-Bus socket, an agent under a home folder) would answer. The filter makes
``socket(AF_UNIX, ...)`` fail with EACCES, so no such connection can be made;
``socketpair`` (pipes between a command's own processes) still works. io_uring,
which can open and connect sockets without the ``socket`` system call, fails
with ENOSYS, as Docker's default profile does. The program is built with
libseccomp (https://github.com/seccomp/libseccomp) through pyseccomp, for this
machine's architecture; system calls of any other ABI (32-bit programs, x32)
kill the process, libseccomp's default for a foreign architecture.
"""

from __future__ import annotations

import errno
import functools
import socket
import tempfile

_IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
_LOW_32_BITS = 0xFFFF_FFFF  # the kernel reads socket()'s domain as an int: compare only those bits


@functools.cache
def socket_filter() -> tuple[bytes | None, str]:
    """``(program, "")``: the filter as a classic BPF program (``struct sock_filter`` array, the form
    ``bwrap --seccomp FD`` reads), or ``(None, reason)`` when libseccomp cannot be loaded here."""
    try:
        import pyseccomp
    except (ImportError, OSError, RuntimeError) as e:  # RuntimeError: pyseccomp finds no libseccomp
        return None, f"libseccomp unavailable ({e})"
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    unix = pyseccomp.Arg(0, pyseccomp.MASKED_EQ, _LOW_32_BITS, socket.AF_UNIX)
    rules.add_rule(pyseccomp.ERRNO(errno.EACCES), "socket", unix)
    for name in _IO_URING:
        rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), name)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read(), ""
