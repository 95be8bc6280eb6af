"""Untrusted text (model replies, command output, file names) made safe for where it goes, and short enough.

Three sinks cannot carry everything a Python ``str`` can hold:

- a terminal runs control sequences (``ESC]0;title BEL`` sets its title, ``ESC[2J``
  clears it) and reorders text at bidi controls (U+202E);
- XML 1.0 has no way to write most control characters, lone surrogates, U+FFFE or U+FFFF
  (https://www.w3.org/TR/xml/#charsets), so a JUnit file holding one is not well-formed;
- UTF-8 (the results files, HTTP bodies to a provider) cannot encode a lone surrogate,
  which is how Python holds the bytes of a file name that is not UTF-8 (``os.fsdecode``
  turns byte 0xff into U+DCFF) and what a JSON ``"\\ud800"`` decodes to.

``printable`` serves the first two, ``encodable`` the third; ``cap_text`` keeps the head and
tail of a text too long for where it goes (a tool result, a report), marking the cut. Both write what they escape
in Python's notation, so it stays visible: ``\\x1b``, ``\\u202e``, and an undecodable
byte of a file name as ``\\xff``. A backslash itself is left as it is.

``first_line`` reads the first line of a message (an error, a run's cause) the same way everywhere.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, bidi and line/paragraph separators,
# surrogates, and the two non-characters XML 1.0 excludes.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
                          "\ud800-\udfff\ufffe\uffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_BYTES = range(0xDC80, 0xDD00)  # os.fsdecode's "surrogateescape" of the bytes 0x80-0xff


def _notation(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code in _ESCAPED_BYTES:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on, or XML 1.0 cannot hold, escaped.

    Tabs and newlines are kept (layout); everything else below U+0020, DEL and the C1
    controls become ``\\xNN``; bidi controls, U+2028/U+2029, U+FFFE/U+FFFF and lone surrogates
    ``\\uNNNN``, but a surrogate escaping an undecodable byte becomes that byte, ``\\xNN``.
    """
    return _UNPRINTABLE.sub(_notation, text)


def encodable(text: str) -> str:
    """``text`` with its lone surrogates escaped (as ``printable`` writes them), so it encodes
    as UTF-8; every other character is kept."""
    return _SURROGATE.sub(_notation, text)


OUTPUT_LIMIT = 30_000  # characters of a tool result, bytes of a command's output


def elide(head: str, tail: str, cut: int, unit: str, verb: str = "cut") -> str:
    """Join what was kept of a long text around a marker line saying how much was cut
    (``[... 12 bytes cut ...]``; ``verb`` may say it otherwise: ``left out``)."""
    newline = "" if head.endswith("\n") else "\n"
    return f"{head}{newline}[... {cut} {unit} {verb} ...]\n{tail}"


def cap_text(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` unchanged when at most ``limit`` characters, else its head and tail around a marker."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return elide(text[:half], text[len(text) - (limit - half) :], len(text) - limit, "characters")


def first_line(text: str | None, default: str) -> str:
    """The first line of ``text`` (an error message, a run's cause), or ``default`` when there is no text."""
    return text.splitlines()[0] if text else default


def plural(count: int, noun: str) -> str:
    """``1 run``, ``0 runs``, ``2 runs``: ``count`` and ``noun`` (that takes an ``s``) agreeing."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
