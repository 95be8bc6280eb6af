"""runner.providers.redact: which values are secrets, how they are replaced, and that scoring does not change.

The attack through the CLI, every output format at once, is tests/test_redaction.py.
"""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from runner.kinds import ErrorKind
from runner.providers.redact import MIN_LENGTH, RunSecrets, Secrets, marker
from runner.providers.registry import resolve_provider
from runner.run.execute import execute
from runner.run.options import Arm, RunOptions
from runner.run.prompts import load_prompt
from runner.run.record import RunRecord
from runner.run.trajectory import Step
from runner.sandbox.command import Sandbox
from tests.helpers import make_case

KEY = "sk-test-0123456789abcdef"


def test_keys_are_the_variables_named_like_keys_and_those_the_config_names() -> None:
    environ = {"OPENAI_API_KEY": KEY, "HF_TOKEN": "hf_abcdefghijkl", "AWS_SECRET_ACCESS_KEY": "aws/secret+value",
               "WATSONX_APIKEY": "watson-key-123", "LOCAL": "local-model-key", "HOME": "/root/somewhere",
               "PYTHON_KEYRING_BACKEND": "keyring.backends.null", "SHORT_KEY": "1234567", "BLANK_TOKEN": "   "}
    secrets = Secrets.known(environ, ["LOCAL", "UNSET"])
    assert sorted(secrets.names) == ["AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "LOCAL", "OPENAI_API_KEY", "WATSONX_APIKEY"]
    assert repr(secrets) == f"Secrets({', '.join(secrets.names)})" and KEY not in repr(secrets)
    assert KEY not in repr(RunOptions(Sandbox(), secrets=secrets))


def test_a_value_is_replaced_by_its_name_and_a_longer_value_wins() -> None:
    secrets = Secrets.known({"OPENAI_API_KEY": KEY, "OTHER_KEY": KEY + "-longer"})
    text, found = secrets.redact(f"a {KEY}-longer b {KEY} c {KEY}")
    assert text == f"a {marker('OTHER_KEY')} b {marker('OPENAI_API_KEY')} c {marker('OPENAI_API_KEY')}"
    assert found == {"OPENAI_API_KEY": 2, "OTHER_KEY": 1}
    assert Secrets().redact(KEY) == (KEY, {})


def test_one_value_under_two_names_keeps_the_first() -> None:
    secrets = Secrets.known({"LOCAL": KEY, "OPENAI_API_KEY": KEY}, ["LOCAL"])
    assert secrets.names == ("LOCAL",)


@dataclass(frozen=True)
class _Inner:
    text: str
    kind: ErrorKind


@dataclass
class _Outer:
    inner: _Inner
    items: list[tuple[str, int]]
    table: dict[str, object]
    number: float = 1.5


def test_scrub_goes_through_dataclasses_frozen_ones_lists_tuples_and_dict_keys_and_changes_nothing_in_place() -> None:
    value = _Outer(_Inner(f"said {KEY}", ErrorKind.AUTH), [(KEY, 1), ("plain", 2)], {KEY: [KEY], "kept": None})
    clean, found = Secrets.known({"OPENAI_API_KEY": KEY}).scrub(value)
    mark = marker("OPENAI_API_KEY")
    expected = _Outer(_Inner(f"said {mark}", ErrorKind.AUTH), [(mark, 1), ("plain", 2)], {mark: [mark], "kept": None})
    assert clean == expected
    assert found == {"OPENAI_API_KEY": 4}
    assert value.inner.text == f"said {KEY}" and value.items[0] == (KEY, 1)  # the given value is left as it was
    assert clean.inner.kind is ErrorKind.AUTH and clean.items[1] is value.items[1]


def test_scrub_returns_the_same_object_when_no_secret_is_in_it() -> None:
    value = _Outer(_Inner("nothing", ErrorKind.AUTH), [("a", 1)], {"b": ["c"]})
    clean, found = Secrets.known({"OPENAI_API_KEY": KEY}).scrub(value)
    assert clean is value and not found


@dataclass
class _Empty:
    pass


def test_scrub_keeps_classes_numbers_and_field_less_dataclasses_and_goes_into_subclassed_dicts() -> None:
    class Table(dict[str, object]):
        pass

    value = [_Outer, _Empty(), True, 3, 2.5, None, Table({"k": f"a {KEY}"})]
    clean, found = Secrets.known({"OPENAI_API_KEY": KEY}).scrub(value)
    assert clean == [_Outer, _Empty(), True, 3, 2.5, None, {"k": f"a {marker('OPENAI_API_KEY')}"}]
    assert clean[0] is _Outer and clean[1] is value[1] and found == {"OPENAI_API_KEY": 1}


def test_secrets_cross_a_process_boundary_and_a_run_adds_its_own() -> None:
    secrets = pickle.loads(pickle.dumps(Secrets.known({"OPENAI_API_KEY": KEY})))
    run = RunSecrets(secrets)
    run.add("endpoint key", "token-of-this-run")
    run.add("too short", "abc")
    assert run.current.names == ("OPENAI_API_KEY", "endpoint key")
    assert run.current.redact("token-of-this-run")[0] == "[redacted: endpoint key]"


_SECRET = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=MIN_LENGTH, max_size=20).map(lambda s: "sk-" + s)


@given(st.lists(_SECRET, min_size=1, max_size=3), st.lists(st.one_of(st.text(max_size=20), _SECRET), max_size=6))
def test_no_value_is_left_after_redaction(values: list[str], pieces: list[str]) -> None:
    secrets = Secrets.known({f"K{i}_KEY": value for i, value in enumerate(values)})
    text, _ = secrets.redact("".join(pieces))
    assert not any(value in text for value in values)


@given(st.text(alphabet=st.characters(blacklist_characters="-"), max_size=60))
def test_text_without_a_secret_is_unchanged(text: str) -> None:
    assert Secrets.known({"OPENAI_API_KEY": KEY}).redact(text) == (text, {})


def _run(secrets: Secrets, content: str) -> RunRecord:
    """A scripted run that writes ``content`` to a file, checks it is there and says it wrote it."""
    write = {"name": "write_file", "arguments": {"path": "out.txt", "content": content}}
    case = make_case(turns=("write it",), script=[{"tool_calls": [write]}, {"content": f"wrote {content}"}],
                     expect={"files": {"out.txt": {"contains": [content]}}, "response_contains": ["wrote"]})
    return execute(case, Arm(resolve_provider("scripted"), load_prompt(None)), RunOptions(Sandbox(), secrets=secrets))


def _scores(record: RunRecord) -> tuple[object, ...]:
    return record.status, record.outcome, record.process, record.failure, [c.passed for c in record.checks]


def test_redaction_changes_no_score_and_leaves_an_honest_run_as_it_was() -> None:
    secrets = Secrets.known({"OPENAI_API_KEY": KEY})
    record = _run(secrets, KEY)
    assert _scores(record) == _scores(_run(Secrets(), KEY)) and record.status == "pass"
    assert isinstance(record.steps[0], Step) and record.steps[0].arguments["content"] == marker("OPENAI_API_KEY")
    assert record.final_reply == f"wrote {marker('OPENAI_API_KEY')}"
    assert any(re.match(r"redacted in this run's record: OPENAI_API_KEY \(\d+ times\); ", w) for w in record.warnings)
    honest = _run(secrets, "hello")
    assert honest.warnings == [] and honest.final_reply == "wrote hello"
    assert _scores(honest) == _scores(_run(Secrets(), "hello"))
