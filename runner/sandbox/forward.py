"""One host loopback port reached from inside bubblewrap's own network namespace, and nothing else.

Before the command, a few lines of Python (``_HELPER``, run by tooltrial's own interpreter inside the
sandbox) bind a TCP listener on the sandbox's 127.0.0.1:PORT, hand its descriptor to tooltrial
over the one end of a socket pair it inherited (SCM_RIGHTS, see unix(7)), close that end and exec
the command. tooltrial's thread (``Forward``) accepts on that listener from the host side and
relays each connection to the host's 127.0.0.1:PORT. Nothing of it stays inside: no process (the
helper became the command), no descriptor, no socket(AF_UNIX) call (the seccomp filter keeps
refusing it); the only way out of the namespace is the listener tooltrial holds, which leads to
that one port. Connections open at once and bytes relayed are bounded; everything is closed when
the command ends. docs/safety.md weighs this against the other designs.
"""

from __future__ import annotations

import os
import socket
import sys
import threading

MAX_CONNECTIONS = 32  # open at once; more wait in the listener's backlog
MAX_BYTES = 2**30  # relayed per command, both directions together; past it connections are cut
CONNECT_TIMEOUT = 5.0  # seconds to reach the host port
_STOP_WAIT = 5.0  # seconds to wait for each relay thread once everything is shut down
_CHUNK = 65_536  # bytes per read
_POLL = 0.05  # seconds between looks at whether the forward was stopped while all slots are taken
PYTHON = os.path.realpath(sys.executable)  # the interpreter that runs _HELPER inside

_HELPER = """\
import _socket, os, sys
channel, port = _socket.socket(fileno=int(sys.argv[1])), int(sys.argv[2])
try:
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
except OSError as e:
    sys.exit(f"tooltrial: cannot listen on 127.0.0.1:{port} in the sandbox: {e}")
fd = listener.fileno().to_bytes(4, sys.byteorder)
channel.sendmsg([b"L"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fd)])
listener.close()
channel.close()
os.execvp(sys.argv[3], sys.argv[3:])
"""  # _socket, not socket: the module alone halves the helper's start (about 25 ms instead of 50)


class Forward:
    """The relay of one command's connections to the host's 127.0.0.1:``port``.

    Use: ``prefix()`` goes between bwrap's arguments and the command's, ``inside`` is passed to the
    command (``pass_fds``); once it is started call ``start()``, and ``stop()`` when it has ended
    (also when it could not start). One thread accepts; each connection gets one thread per direction.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self._channel, inside = socket.socketpair()
        self.inside = inside.detach()
        os.set_inheritable(self.inside, True)
        self._inside_open = True
        self._lock = threading.Lock()
        self._stopped = False
        self._sockets: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._slots = threading.Semaphore(MAX_CONNECTIONS)
        self._left = MAX_BYTES
        self._acceptor = threading.Thread(target=self._accept, name=f"tooltrial-forward-{port}", daemon=True)

    def prefix(self) -> list[str]:
        """The helper's command line, to which the command's own argv is appended."""
        return [PYTHON, "-I", "-S", "-c", _HELPER, str(self.inside), str(self.port)]

    def start(self) -> None:
        """Close tooltrial's copy of the inside end (the command holds it now) and start accepting."""
        self._close_inside()
        self._acceptor.start()

    def stop(self) -> None:
        """Shut the listener and every connection, wait for the threads; safe to call once the
        command ended, whether or not ``start`` was called."""
        with self._lock:
            self._stopped = True
            sockets = [self._channel, *self._sockets]
        for sock in sockets:
            _shut(sock)
        self._close_inside()
        if self._acceptor.is_alive():
            self._acceptor.join(_STOP_WAIT)
        for thread in self._threads:
            thread.join(_STOP_WAIT)
        with self._lock:
            sockets = [self._channel, *self._sockets]
        for sock in sockets:
            sock.close()

    def _close_inside(self) -> None:
        with self._lock:
            inside, self._inside_open = self._inside_open, False
        if inside:
            os.close(self.inside)

    def _keep(self, sock: socket.socket) -> bool:
        """Track ``sock`` so ``stop`` shuts it; False (and ``sock`` closed) once stopped."""
        with self._lock:
            if not self._stopped:
                self._sockets.add(sock)
                return True
        sock.close()
        return False

    def _accept(self) -> None:
        listener = self._listener()
        if listener is None or not self._keep(listener):
            return
        while True:
            while not self._slots.acquire(timeout=_POLL):
                if self._stopped:
                    return
            try:
                inside, _ = listener.accept()
            except OSError:  # shut by stop
                return
            if not self._keep(inside):
                return
            try:
                outside = socket.create_connection(("127.0.0.1", self.port), timeout=CONNECT_TIMEOUT)
            except OSError:
                self._drop(inside)
                self._slots.release()
                continue
            outside.settimeout(None)
            if not self._keep(outside):
                self._drop(inside)
                return
            pair = threading.Semaphore(0)
            self._threads = [thread for thread in self._threads if thread.is_alive()]
            for source, target in ((inside, outside), (outside, inside)):
                thread = threading.Thread(target=self._relay, args=(source, target, pair), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _listener(self) -> socket.socket | None:
        """The helper's listener, once it sent it; None when the helper ended without (it failed,
        or the command never started) or ``stop`` came first. The channel is closed after."""
        try:
            _, fds, _, _ = socket.recv_fds(self._channel, 1, 1)
        except OSError:
            return None
        finally:
            _shut(self._channel)
        if len(fds) != 1:
            return None
        listener = socket.socket(fileno=fds[0])
        if listener.family != socket.AF_INET or not listener.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
            listener.close()
            return None
        return listener

    def _relay(self, source: socket.socket, target: socket.socket, pair: threading.Semaphore) -> None:
        """Copy ``source`` to ``target`` until end of file (then half-close ``target``), an error or
        the byte bound; the second direction of a connection to end closes both and frees its slot."""
        try:
            while chunk := source.recv(_CHUNK):
                with self._lock:
                    self._left -= len(chunk)
                    over = self._left < 0
                if over:
                    _shut(source)
                    _shut(target)
                    break
                target.sendall(chunk)
            target.shutdown(socket.SHUT_WR)
        except OSError:  # reset by either side, or shut by stop
            _shut(source)
            _shut(target)
        if pair.acquire(blocking=False):
            self._drop(source)
            self._drop(target)
            self._slots.release()
        else:
            pair.release()

    def _drop(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)
        sock.close()


def _shut(sock: socket.socket) -> None:
    """Shut both directions of ``sock`` (waking threads blocked on it); one already gone is fine."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
