"""Regular expressions as case authors write them (Python syntax plus Ruby's anchors)."""

from __future__ import annotations

import re

# An unescaped "\z": preceded by an even number of backslashes (pairs are literal backslashes).
_RUBY_END = re.compile(r"(?<!\\)((?:\\\\)*)\\z")


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a case's regex: Python syntax, where Ruby's ``\\z`` means end of text.

    ``\\A`` is the same in both; ``\\z`` becomes Python's ``\\Z``, while an escaped
    backslash followed by ``z`` (``\\\\z``) is left alone. Raises ``re.error``
    when the pattern does not compile.
    """
    return re.compile(_RUBY_END.sub(lambda m: m.group(1) + r"\Z", pattern))
