"""`python -m runner` is the `tooltrial` command; ``console`` is the installed script's entry point."""

import atexit
import os
import sys


def console() -> None:
    """Run ``tooltrial`` on ``sys.argv`` (runner.cli.app.main) and exit with its code, skipping the teardown of
    the interpreter's modules that follows the exit handlers (``_leave``).

    Its exit handler is registered before ``runner.cli.app`` is imported, so every handler registered later
    (by logging, multiprocessing, litellm, ``weakref.finalize``) runs before it: exit handlers run last
    registered first, after the threads that are not daemons have ended.
    """
    ended: list[int] = []
    atexit.register(_leave, ended)
    from runner.cli.app import main  # after the registration above

    ended.append(main())
    sys.exit(ended[0])


def _leave(ended: list[int]) -> None:
    """End the process with the code ``ended`` holds, stdout and stderr flushed: what Python would still do is
    free every module's objects one by one, about 0.15 s of CPU after litellm's import (docs/performance.md,
    figure (h)), which the system does at once. Nothing when ``ended`` is empty (``main`` raised)."""
    if ended:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(ended[0])


if __name__ == "__main__":
    console()
