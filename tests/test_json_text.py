"""tooltrial's JSON text (runner.output.store.to_json, orjson underneath): json.dumps's layout, the
same values back, the same bytes after a round trip, for any document a record can hold, surrogates,
integers past 64 bits and nesting orjson refuses included."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from runner.output.store import ascii_json, to_json

_TEXT = st.text(st.characters(exclude_categories=()), max_size=12)  # surrogates too
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63, max_value=2**80),
                    st.floats(allow_nan=False, allow_infinity=False), _TEXT)
DOCUMENTS = st.recursive(_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                          st.dictionaries(_TEXT, inner, max_size=4)), max_leaves=20)


def _joined(value: Any) -> Any:
    """``value`` as json.loads reads it back: a surrogate pair is the character it pairs to."""
    if isinstance(value, str):
        return json.loads(json.dumps(value))
    if isinstance(value, list):
        return [_joined(item) for item in value]
    if isinstance(value, dict):
        return {_joined(key): _joined(item) for key, item in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS)
@example({"s": "x\udcff\ud83d\ude00", "\udcffkey": 2**70, "n": [1.5e-7, 1e-05, -0.0]})
@example([[[[["deep"]]]]])
def test_the_text_reads_back_as_the_document_and_again_as_itself(document: Any) -> None:
    text = to_json(document)
    assert json.loads(text) == _joined(document)
    assert to_json(json.loads(text)) == text
    assert json.loads(ascii_json(text)) == _joined(document) and ascii_json(text).isascii()


def test_the_layout_is_json_dumps_indent_2_and_floats_are_shortest() -> None:
    document = {"a": [1, {"b": None, "c": []}, {}], "é": "line\nbreak\t\u2028", "d": 0.25, "e": 1e-05}
    assert to_json(document) == json.dumps({**document, "e": "E"}, indent=2, ensure_ascii=False).replace('"E"', "0.00001") + "\n"


def test_nesting_deeper_than_orjson_goes_and_floats_json_has_not() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(300):
        inner.append([])
        inner = inner[0]
    assert json.loads(to_json(deep)) == deep
    assert json.loads(to_json({"x": math.nan, "y": math.inf})) == {"x": None, "y": None}  # JSON has no such number
