"""Loading a suite does each piece of work once: a typed scalar is typed once per file, a mock's
schema written again in the same form is neither checked nor turned into JSON again, and a case
that names no tool is not asked which tools it offers; what the user sees stays as it was."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.spec import fastyaml, schemacheck, tracerules
from runner.spec.schemacheck import forget_schema_checks
from tests.helpers import run_cli

MOCK = """\
    - name: weather
      description: The weather in a city.
      parameters:
        type: object
        properties:
          city: {{type: string}}
          days: {{type: {days}, minimum: 1}}
        required: [city]
        additionalProperties: false
      responses:
        - when: {{city: Paris}}
          result: {{sky: sunny, hot: true, cold: false}}
"""
CASE = """\
- id: case-{n}
  turns: [What is the weather in Paris?]
  mocks:
{mock}  expect:
    response_contains: [sunny]
    trace: {{must_include: [weather], max_calls: 2}}
  script:
    - content: It is sunny.
"""


def _suite(folder: Path, count: int, days: str = "integer") -> Path:
    (folder / "cases").mkdir(parents=True, exist_ok=True)
    path = folder / "cases" / "weather.yml"
    path.write_text("".join(CASE.format(n=n, mock=MOCK.format(days=days)) for n in range(count)), encoding="utf-8")
    return path


def _counted(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[Any]:
    """Record the first argument of every call of ``module.name`` (still called through)."""
    calls: list[Any] = []
    real: Callable[..., Any] = getattr(module, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls


def test_a_mock_schema_written_again_the_same_way_is_checked_and_encoded_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _suite(tmp_path, 5)
    forget_schema_checks()
    checked = _counted(monkeypatch, schemacheck, "_schema_problem")
    encoded = _counted(monkeypatch, schemacheck, "canonical_problem")  # called with each canonical JSON text made
    done = run_cli("list", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:5] == [f"weather/case-{n}" for n in range(5)]
    assert len(checked) == 1 and len(encoded) == 1  # five cases, one distinct schema


def test_a_bad_mock_schema_met_again_is_still_reported_at_each_case_that_writes_it(tmp_path: Path) -> None:
    path = _suite(tmp_path, 3, days="integr")
    forget_schema_checks()
    done = run_cli("validate", str(path))
    assert done.returncode == 4
    lines = [line for line in done.stderr.splitlines() if "invalid JSON Schema" in line]
    assert lines == [f"error: {path}:{7 + 20 * n}:9: mocks[0].parameters: invalid JSON Schema at"
                     " 'properties/days/type': 'integr' is not valid under any of the given schemas" for n in range(3)]


def test_a_typed_scalar_is_typed_once_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _suite(tmp_path, 20)
    typed = _counted(monkeypatch, fastyaml, "_plain")
    doc = fastyaml.fast_load(path.read_text(encoding="utf-8"))
    assert doc is not None
    assert doc.data[19]["mocks"][0]["responses"][0]["result"] == {"sky": "sunny", "hot": True, "cold": False}
    assert doc.data[19]["expect"]["trace"]["max_calls"] == 2
    # each distinct plain scalar that may be typed (type, true, false, 1, 2, turns, trace...) once, not once a case
    assert len(typed) == len(set(typed)) and len(typed) < 20


def test_a_case_that_names_no_tool_is_not_asked_which_tools_it_offers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cases").mkdir()
    path = tmp_path / "cases" / "plain.yml"
    path.write_text("".join(f"- id: c{n}\n  turns: [hello]\n  expect: {{response_contains: [hi]}}\n" for n in range(4)),
                    encoding="utf-8")
    asked = _counted(monkeypatch, tracerules, "offered_tools")
    done = run_cli("validate", str(path))
    assert done.returncode == 0, done.stderr
    assert asked == []
