"""The secrets tooltrial knows, kept out of everything it writes.

A provider that echoes the key it was sent (a 401 body quoting it), a model reply, a tool result or a
command's output may hold a secret of the invocation. ``Secrets.known`` gathers the values tooltrial
knows: every environment variable named like a key (``OPENAI_API_KEY``, ``HF_TOKEN``,
``AWS_SECRET_ACCESS_KEY``: ``SECRET_NAME``) and every variable a ``tooltrial.yml`` alias names as its
``api_key_env``; a run adds its agent endpoint's key (``ENDPOINT_KEY``). ``Secrets.scrub`` replaces each
value, wherever it stands in a run's data, with ``[redacted: NAME]``, naming the secret, never showing it.

A run's record is scrubbed once, where it is made (runner.run.execute, in whatever process runs it), as
are its live events and the replies it keeps in a response cache: every output reads only those, so each
is clean by construction. Only a value as it is is found: not one cut in two (by the head-and-tail cap on
a command's output, or across two texts) nor one encoded (base64, hex, percent-escapes of its characters).
Values shorter than MIN_LENGTH characters are not secrets here: replacing them would mangle ordinary text.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

MIN_LENGTH = 8  # characters: a shorter value (``KEY=1``) is not taken for a secret
ENDPOINT_KEY = "endpoint key"  # how a marker names an external agent's per-run key
# A variable named like a key: a word (between underscores) KEY, APIKEY, API_KEY, TOKEN, SECRET,
# PASSWORD, PASSWD or CREDENTIAL(S). ``KEYRING_BACKEND`` is not one, ``AWS_SECRET_ACCESS_KEY`` is.
SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)", re.IGNORECASE)


def marker(name: str) -> str:
    """What replaces the value of secret ``name``: ``[redacted: NAME]``."""
    return f"[redacted: {name}]"


@dataclass(frozen=True, repr=False)
class Secrets:
    """Values never to write, each with the name its marker gives; picklable, so a worker process or a
    Ray task gets its suite's. Its ``repr`` shows the names only.

    Attributes:
        named: ``(name, value)`` pairs, each value once and at least MIN_LENGTH characters, longest first
            (so a value that holds another is replaced whole).
    """

    named: tuple[tuple[str, str], ...] = ()

    @classmethod
    def known(cls, environ: Mapping[str, str], names: Iterable[str] = ()) -> Secrets:
        """The values in ``environ`` of the variables ``names`` (aliases' ``api_key_env``), then of every
        variable whose name matches SECRET_NAME, in name order; unset, blank and short ones left out."""
        secrets = cls()
        for name in [*dict.fromkeys(names), *sorted(n for n in environ if SECRET_NAME.search(n))]:
            secrets = secrets.plus(name, environ.get(name, ""))
        return secrets

    def plus(self, name: str, value: str) -> Secrets:
        """These and ``value`` named ``name``; these as they are for a value shorter than MIN_LENGTH
        (surrounding blanks aside) or already here."""
        value = value.strip()
        if len(value) < MIN_LENGTH or any(value == v for _, v in self.named):
            return self
        return Secrets(tuple(sorted([*self.named, (name, value)], key=lambda pair: -len(pair[1]))))

    def joined(self, other: Secrets) -> Secrets:
        """These and ``other``'s (a name here wins for a value both hold)."""
        secrets = self
        for name, value in other.named:
            secrets = secrets.plus(name, value)
        return secrets

    @property
    def names(self) -> tuple[str, ...]:
        """The secrets' names, longest value first."""
        return tuple(name for name, _ in self.named)

    def __repr__(self) -> str:
        return f"Secrets({', '.join(self.names)})"

    def redact(self, text: str) -> tuple[str, Counter[str]]:
        """``text`` with each secret's value replaced by its marker, and how many of each were, by name."""
        found: Counter[str] = Counter()
        if not self.named:
            return text, found
        return _replaced(self._pattern, self._by_value, text, found), found

    def scrub(self, value: T) -> tuple[T, Counter[str]]:
        """``value`` with the secrets replaced in every str it holds: itself, or, through dataclasses
        (frozen ones too), lists, tuples and dicts (keys too), their fields and items; other values (numbers,
        enums) are kept. Returns it and the count of replacements by name; what held no secret is the same
        object, a container that did is a shallow copy (``value`` itself is never changed)."""
        found: Counter[str] = Counter()
        if not self.named:
            return value, found
        return _walk(value, functools.partial(_replaced, self._pattern, self._by_value, found=found)), found

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        return re.compile("|".join(re.escape(value) for _, value in self.named))

    @functools.cached_property
    def _by_value(self) -> dict[str, str]:
        return {value: name for name, value in self.named}


def _replaced(pattern: re.Pattern[str], by_value: Mapping[str, str], text: str, found: Counter[str]) -> str:
    if pattern.search(text) is None:
        return text

    def mark(match: re.Match[str]) -> str:
        name = by_value[match.group()]
        found[name] += 1
        return marker(name)

    return pattern.sub(mark, text)


def _walk(value: Any, replace: Callable[[str], str]) -> Any:
    """``value`` with ``replace`` (str -> str) applied to every plain str within (see ``Secrets.scrub``)."""
    kind = type(value)
    if kind is str:
        return replace(value)
    if kind in _ATOMS:  # numbers and None, told apart before the container tests
        return value
    if kind is list or kind is tuple:
        items = [_walk(item, replace) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else kind(items)
    if isinstance(value, dict):
        pairs = [(_walk(k, replace), _walk(v, replace)) for k, v in value.items()]
        same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items()))
        return value if same else dict(pairs)
    changed = {}
    # none for a class itself (its type is no dataclass) or a non-dataclass
    for name in _field_names(kind):  # type: ignore[arg-type]  # mypy#11470: a class is hashable
        old = getattr(value, name)
        new = _walk(old, replace)
        if new is not old:
            changed[name] = new
    if not changed:
        return value
    fresh = copy.copy(value)
    for name, new in changed.items():
        object.__setattr__(fresh, name, new)  # a frozen dataclass too: ``fresh`` is this call's own copy
    return fresh


_ATOMS = frozenset({int, float, bool, type(None)})


@functools.cache  # once a type: a record's scrub took 0.63 ms with dataclasses.fields on every value, 0.45 ms so
def _field_names(kind: type) -> tuple[str, ...]:
    """The field names of dataclass ``kind``, none for any other type."""
    return tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else ()


class RunSecrets:
    """The secrets of one run: its suite's, then those the run makes as it goes (an external agent's endpoint
    key, ``add``ed before the agent starts). ``current`` may be read from any of the run's threads."""

    def __init__(self, secrets: Secrets) -> None:
        self.current = secrets

    def add(self, name: str, value: str) -> None:
        """Know ``value`` as secret ``name`` from now on."""
        self.current = self.current.plus(name, value)
