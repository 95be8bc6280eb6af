"""bubblewrap (https://github.com/containers/bubblewrap): the command line that confines one
command, and the probe that tells whether bwrap works on this machine.

Inside the sandbox the root file system is read-only, the workspace is the only
writable host folder (bound at its own path, so paths in prompts stay valid),
``/tmp`` is a private tmpfs, ``/proc`` and ``/dev`` are fresh, and every namespace
(user, IPC, PID, network, UTS, cgroup) is new: no network unless asked, no view of
the host's processes. The command dies with bwrap and runs in its own session.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

PROBE_TIMEOUT = 10.0  # seconds


def bwrap_argv(binary: str, workspace: Path, cwd: Path, network: bool = False) -> list[str]:
    """The bwrap arguments (up to and including ``--``) that confine a command to ``workspace``.

    ``cwd`` is where the command starts (the workspace or a folder in it);
    ``network`` keeps the host's network namespace (the case's ``network: true``).
    Append the command's own argv to the result.
    """
    argv = [
        binary,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--bind", str(workspace), str(workspace),
        "--unshare-all",
    ]
    if network:
        argv.append("--share-net")
    argv += ["--die-with-parent", "--new-session", "--chdir", str(cwd), "--"]
    return argv


def probe(name: str = "bwrap") -> tuple[str | None, str]:
    """``(path, "")`` when bwrap at ``name`` (a path or a name on PATH) runs a command with the
    sandbox's own arguments, else ``(None, reason)`` with a one-line reason.

    Runs ``true`` once under bwrap in a throwaway folder; takes a few milliseconds.
    """
    binary = shutil.which(name)
    if binary is None:
        return None, f"{name} not found on PATH"
    with tempfile.TemporaryDirectory(prefix="tooltrial-probe-") as folder:
        workspace = Path(folder).resolve()
        try:
            done = subprocess.run(
                [*bwrap_argv(binary, workspace, workspace), "true"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=PROBE_TIMEOUT,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return None, f"{binary} could not run: {e}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
        return None, f"{binary} failed: {lines[-1] if lines else f'exit {done.returncode}'}"
    return binary, ""
