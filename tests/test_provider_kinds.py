"""A kind of provider in one place: the table of provider kinds (runner.providers.registry.PROVIDER_KINDS)
is what ``run``, ``validate``, ``doctor``, tooltrial.yml, judges and simulated users ask of a ``-p`` value,
so a kind added as one row is taken everywhere a name is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from runner.providers.base import Completion
from runner.providers.kind import ProviderKind, ProviderSpec
from runner.providers.probe import OK, Diagnosis, Finding
from runner.providers.registry import PROVIDER_KINDS, kind_of, register_provider_kind
from runner.spec.config import Config
from tests.helpers import run_cli


@dataclass
class Echo:
    """A made-up provider: it answers every request with the text after ``echo:`` in its name, calling no tool."""

    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 deadline: float | None = None) -> Completion:
        return Completion(self.name.removeprefix("echo:"), finish_reason="stop")


def _resolve(name: str, config: Config | None, verbose: bool, stream: bool) -> ProviderSpec:
    return ProviderSpec(name, lambda case: Echo(name))


def _probe(name: str, config: Config | None, call: bool, environ: Mapping[str, str], verbose: bool,
           refused: str | None) -> Diagnosis:
    return Diagnosis(name, name, (Finding("key", OK, "none needed: it says its name"),))


ECHO = ProviderKind("echo", "a provider that says the text after echo:", re.compile("echo:.*", re.DOTALL), _resolve, _probe)


@pytest.fixture
def echo() -> Iterator[None]:
    """The kind ``echo`` (``echo:TEXT`` answers TEXT) in the table of this process, for one test."""
    register_provider_kind(ECHO)
    yield
    PROVIDER_KINDS.remove(ECHO)


def _write(path: Path, cases: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(cases), encoding="utf-8")  # JSON is YAML: the names are written exactly
    return path


def test_a_kind_registered_as_one_row_is_run_validated_and_probed(echo: None, tmp_path: Path) -> None:
    assert [kind.name for kind in PROVIDER_KINDS] == ["scripted", "alias", "scripted-judge", "echo", "model", "bare"]
    verdict = 'echo:{"score": 1, "reasoning": "it said hi"}'
    cases = _write(tmp_path / "greet.yml", [
        {"id": "hi", "turns": ["Say hi."], "expect": {"response_contains": "hi", "trace": {"max_calls": 0}}},
        {"id": "judged", "turns": ["Say hi."], "expect": {"judge": {"rubric": "It says hi.", "model": verdict}}},
        {"id": "talked", "user": {"model": "echo:###STOP###", "persona": "You want a greeting.", "first": "Say hi."},
         "expect": {"response_contains": "hi"}},
    ])
    done = run_cli("run", str(cases), "-p", "echo:hi", "--results", str(tmp_path / "r"), "--output", "json")
    assert (done.returncode, done.stderr.splitlines()[:4]) == (
        0, ["PASS greet/hi", "PASS greet/judged", "PASS greet/talked", "3/3 passed"])
    runs = json.loads(done.stdout)["runs"]
    assert [(r["case"], r["provider"], r["status"]) for r in runs] == [
        ("greet/hi", "echo:hi", "pass"), ("greet/judged", "echo:hi", "pass"), ("greet/talked", "echo:hi", "pass")]
    assert (runs[1]["checks"][0]["score"], runs[2]["user_stop"], [t["by"] for t in runs[2]["user_turns"]]) == (
        1.0, "marker", ["case", "model"])  # the judge's verdict and the user's stop marker, each an echo

    (tmp_path / "tooltrial.yml").write_text('default_provider: "echo:hi"\njudge: "echo:hi"\n', encoding="utf-8")
    config = str(tmp_path / "tooltrial.yml")
    done = run_cli("validate", str(cases), "-c", "greet/hi", "--baseline", "--config", config)
    assert (done.returncode, done.stderr) == (0, "")
    done = run_cli("run", str(cases), "-c", "greet/hi", "--config", config, "--results", str(tmp_path / "r2"))
    assert (done.returncode, done.stdout.splitlines()[:2]) == (0, ["PASS greet/hi", "1/1 passed"])
    done = run_cli("doctor", "--config", config, "--output", "json")
    assert (done.returncode, [(d["name"], d["ok"]) for d in json.loads(done.stdout)]) == (
        0, [("scripted", True), ("echo:hi", True)])
    done = run_cli("doctor", "-p", "echo:hi", "--call", "--output", "json")
    assert (done.returncode, json.loads(done.stdout)) == (0, [{
        "name": "echo:hi", "model": "echo:hi", "ok": True,
        "findings": [{"check": "key", "status": "ok", "detail": "none needed: it says its name"}]}])
    assert run_cli("list", str(cases)).stdout.splitlines()[:3] == ["greet/hi", "greet/judged", "greet/talked"]


def test_a_kind_no_row_takes_is_litellms_bare_name(tmp_path: Path) -> None:
    assert kind_of("echo:hi", ()).name == "bare"
    (tmp_path / "tooltrial.yml").write_text('default_provider: "echo:hi"\n', encoding="utf-8")
    done = run_cli("validate", "cases/fs.yml", "--baseline", "--config", str(tmp_path / "tooltrial.yml"))
    refused = (f"error: {tmp_path / 'tooltrial.yml'}:1:19: default_provider: unknown provider 'echo:hi' "
               "(name an alias under providers, a model such as ollama/qwen3, or scripted)\n")
    assert (done.returncode, done.stderr) == (4, refused)


def test_the_table_refuses_a_second_kind_of_a_name() -> None:
    with pytest.raises(ValueError, match="there is a provider kind 'scripted' already"):
        register_provider_kind(PROVIDER_KINDS[0])
