"""Where the bundled schemas, cases, fixtures and prompts live, installed or not.

In a source checkout (editable install, ``python -m runner``) they are the
top-level folders beside ``runner/``; in a wheel they are packaged as
``runner.data.<kind>`` (see pyproject.toml) and found with importlib.resources.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_KINDS = ("schemas", "cases", "fixtures", "prompts")
_CHECKOUT = Path(__file__).resolve().parent.parent


def bundled(kind: str) -> Path:
    """The folder of one bundled data kind (``schemas``, ``cases``, ``fixtures``, ``prompts``).

    Raises ValueError for an unknown kind.
    """
    if kind not in _KINDS:
        raise ValueError(f"unknown bundled data kind {kind!r}")
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / kind).is_dir():
        return _CHECKOUT / kind
    return Path(str(resources.files("runner.data") / kind))
