"""Regular expressions as case authors write them (Python syntax plus Ruby's anchors), and the
``pattern`` keywords of tooltrial's JSON Schemas as JSON Schema reads them."""

from __future__ import annotations

import functools
import re

# An unescaped "\z": preceded by an even number of backslashes (pairs are literal backslashes).
_RUBY_END = re.compile(r"(?<!\\)((?:\\\\)*)\\z")
# The parts of a schema pattern that decide what a "$" is: an escape, a whole character class, or "$" itself.
_SCHEMA_PART = re.compile(r"\\.|\[(?:\\.|[^\]\\])*\]|\$", re.DOTALL)


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a case's regex: Python syntax, where Ruby's ``\\z`` means end of text.

    ``\\A`` is the same in both; ``\\z`` becomes Python's ``\\Z``, while an escaped
    backslash followed by ``z`` (``\\\\z``) is left alone. Raises ``re.error``
    when the pattern does not compile.
    """
    return re.compile(_RUBY_END.sub(lambda m: m.group(1) + r"\Z", pattern))


@functools.cache
def compile_schema_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a JSON Schema ``pattern`` with its ECMA-262 meaning of ``$``: the end of the text.

    Python's ``$`` also matches just before a final newline, so ``"fix\\n"`` would pass
    ``^[a-z]+$``; each ``$`` that is neither escaped nor inside a character class becomes ``\\Z``.
    """
    return re.compile(_SCHEMA_PART.sub(lambda m: r"\Z" if m.group() == "$" else m.group(), pattern))
