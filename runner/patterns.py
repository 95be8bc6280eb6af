"""Regular expressions as case authors write them (Python syntax plus Ruby's anchors), and the
``pattern`` keywords of tooltrial's JSON Schemas as JSON Schema reads them.

They are compiled with the ``regex`` package (https://github.com/mrabarnett/mrab-regex),
which accepts Python's ``re`` syntax and, unlike ``re``, can stop a search that
runs too long: a pattern that backtracks without end on a long model reply
fails its check instead of stalling the run.
"""

from __future__ import annotations

import functools
import re

import regex

PATTERN_TIMEOUT = 2.0  # seconds one search of a case's pattern may take (processor time, as regex counts it)

# An unescaped "\z": preceded by an even number of backslashes (pairs are literal backslashes).
_RUBY_END = re.compile(r"(?<!\\)((?:\\\\)*)\\z")
# The parts of a schema pattern that decide what a "$" is: an escape, a whole character class, or "$" itself.
_SCHEMA_PART = re.compile(r"\\.|\[(?:\\.|[^\]\\])*\]|\$", re.DOTALL)


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Compile a case's regex: Python syntax, where Ruby's ``\\z`` means end of text.

    ``\\A`` is the same in both; ``\\z`` becomes Python's ``\\Z``, while an escaped
    backslash followed by ``z`` (``\\\\z``) is left alone. Raises ``regex.error``
    when the pattern does not compile.
    """
    return regex.compile(_RUBY_END.sub(lambda m: m.group(1) + r"\Z", pattern))


def pattern_found(pattern: str, text: str) -> bool:
    """Whether the case regex ``pattern`` matches somewhere in ``text``.

    Raises ``regex.error`` when it does not compile, TimeoutError when the search
    takes longer than PATTERN_TIMEOUT seconds.
    """
    return compile_pattern(pattern).search(text, timeout=PATTERN_TIMEOUT, concurrent=True) is not None


def quoted(pattern: str) -> str:
    """``pattern`` in quotes for a message, as its author wrote it: ``'(?<!\\d)'``, its backslashes
    single; in double quotes when it holds a single quote and no double one. Only a pattern that
    holds both quotes, or a character printed otherwise than itself (a newline, a control), is shown
    as Python writes it (``repr``)."""
    if pattern.isprintable():
        if "'" not in pattern:
            return f"'{pattern}'"
        if '"' not in pattern:
            return f'"{pattern}"'
    return repr(pattern)


def too_slow(pattern: str) -> str:
    """The message for ``pattern`` when its search timed out."""
    return f"/{pattern}/ took longer than {PATTERN_TIMEOUT:g} s to search; simplify the pattern"


@functools.cache
def compile_schema_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a JSON Schema ``pattern`` with its ECMA-262 meaning of ``$``: the end of the text.

    Python's ``$`` also matches just before a final newline, so ``"fix\\n"`` would pass
    ``^[a-z]+$``; each ``$`` that is neither escaped nor inside a character class becomes ``\\Z``.
    """
    return re.compile(_SCHEMA_PART.sub(lambda m: r"\Z" if m.group() == "$" else m.group(), pattern))
