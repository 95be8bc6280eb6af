"""The console every command prints through: colour only on a real terminal, no wrapping of run
lines, a closed output ends the command as runner.errors says.

Text that tooltrial did not write itself (a check message quoting a reply or a file, an
error cause quoting a command's output or a provider's message, a case's description, an
arm's name) reaches the terminal only through ``shown``: as a rich Text, so ``[...]`` is
not read as markup, with control characters escaped (runner.text.printable), so it cannot
move the cursor, clear the screen, retitle the window or reverse the line.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.text import Text

from runner.text import printable

_WIDE = 400  # columns


def shown(text: str, style: str = "") -> Text:
    """``text`` as a rich Text that prints as it reads: control characters escaped
    (runner.text.printable; newlines and tabs kept), no markup."""
    return Text(printable(text), style=style)


def make_console(stream=None) -> Console:
    """A console that colours only real terminals and never wraps or highlights run lines.

    Output that is not a terminal (a pipe, a CI log) has no width to fit: unless
    ``COLUMNS`` says otherwise, tables there print at their natural width.
    """
    console = _Console(file=stream, highlight=False, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = _WIDE
    return console


class _Console(Console):
    def on_broken_pipe(self) -> None:
        """A closed output (``| head``) raises BrokenPipeError, which the caller handles (during the
        runs: stop as on Ctrl-C; after: print no more), where rich would exit with 1, the agent's failure code."""
        self.quiet = True
        raise BrokenPipeError
