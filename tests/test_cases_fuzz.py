"""Property: whatever YAML a case file holds, loading gives cases or a positioned CaseFileError, nothing else."""

from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import CaseFileError, ConfigError, UserErrors
from runner.spec.casefile import load_file, validate_file
from runner.spec.config import read_config
from tests.strategies import REAL_KEYS, check, check_case_file, files

# Examples of the YAML-text property: modest for the suite's time; TOOLTRIAL_FUZZ_EXAMPLES=10000 searches deep.
FUZZ_EXAMPLES = int(os.environ.get("TOOLTRIAL_FUZZ_EXAMPLES", "150"))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files)
def test_any_yaml_data_loads_or_fails_with_a_located_error(data: Any) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check(data, Path(folder))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="- :[]{}#&*!|>'\"\t\n abc1", max_size=40))
def test_any_text_loads_or_fails_with_a_located_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.yml"
        path.write_text(text, encoding="utf-8")
        try:
            load_file(path, fixtures_dir=Path(folder))
        except CaseFileError as e:
            assert e.location and e.location.line


# YAML *text* from fragments: what the data strategies above cannot write (yaml.safe_dump never emits them).
TAGS = (
    "!", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!map", "!!seq", "!!timestamp", "!!merge", "!!binary",
    "!!set", "!!omap", "!!pairs", "!foo", "!e!x", "!!python/object/apply:os.system", "!!python/name:os.system",
    "!<tag:yaml.org,2002:str>", "!<tag:example.com,2000:x>", "!%41", "!!",
)  # fmt: skip
ODD = (
    ".inf", "-.inf", ".nan", ".NaN", "0x1F", "0o17", "0b101", "1_000", "1e3", "1e999", "-0", "+1", ".5", "1:20",
    "2024-13-45", "2024-01-01", "2001-12-14t21:59:43.10-05:00", "~", "null", "yes", "on", "=", "<<", "''", '""',
    "'a''b'", '"\\u0000"', '"\\ud800"', '"\\x1b[2J"', "aGVsbG8=", "9" * 4400, "1" * 400 + ".0", "é", "a b", "-",
    "'\t'", "x\ty",
)  # fmt: skip
WORDS = ("a", "b", "hi", "echo hi", "fix-test", "1", "0", "true", "bash")
NAMES = ("a", "b", "c")  # anchor names: an alias may come before, inside or after its anchor
FILE_KEYS = (*REAL_KEYS, "providers", "default_provider", "jobs", "results_dir", "model", "api_base", "retries",
             "attempts", "backoff", "params", "command_timeout", "network", "min_pass_rate", "max_cost")  # fmt: skip


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("text", ["[!!str a, !!int x]\n", "[<<, !!int x]\n", "%YAML 1.1\n---\n[=, !!int x]\n"])
def test_a_failed_load_leaves_no_generator_that_prints_an_error_when_collected(text: str, tmp_path: Path) -> None:
    path = tmp_path / "g.yml"
    path.write_text(text, encoding="utf-8")
    (message,) = [error.render() for error in validate_file(path, fixtures_dir=tmp_path)]  # no error kept alive
    assert message.startswith(f"{path}:")
    gc.collect()  # ruamel's generator for !!str and a lone <<, left unfinished, raised a ConstructorError here


@st.composite
def yaml_scalar(draw: st.DrawFn, keys: bool = False) -> str:
    return draw(st.sampled_from(FILE_KEYS if keys else WORDS) | st.sampled_from(ODD))


@st.composite
def yaml_node(draw: st.DrawFn, depth: int = 0, key: bool = False) -> str:
    """One flow-style value: an alias, or properties (anchor, tag) before a scalar, list or mapping."""
    if draw(st.integers(0, 9)) == 0:
        return f"*{draw(st.sampled_from(NAMES))}"
    props = ""
    if draw(st.integers(0, 4)) == 0:
        props += f"&{draw(st.sampled_from(NAMES))} "
    if draw(st.integers(0, 3)) == 0:
        props += f"{draw(st.sampled_from(TAGS))} "
    kind = draw(st.integers(0, 5 if depth < 3 else 0))
    if kind in (0, 1, 2):
        return props + draw(yaml_scalar(keys=key))
    if kind == 3:
        return props + "[" + ", ".join(draw(st.lists(yaml_node(depth + 1), max_size=3))) + "]"
    pairs = draw(st.lists(st.tuples(yaml_key(depth + 1), yaml_node(depth + 1)), max_size=3))
    return props + "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


@st.composite
def yaml_key(draw: st.DrawFn, depth: int, pad: str | None = None) -> str:
    """A mapping key: text, an odd scalar, a merge key, an alias, a tagged or complex key
    (``? [a]``, its value on the next line at ``pad`` in a block mapping)."""
    choice = draw(st.integers(0, 9))
    if choice == 0:
        return "<<"
    if choice == 1:
        return f"*{draw(st.sampled_from(NAMES))} "  # an alias key needs a space before ':'
    if choice == 2:
        return f"? {draw(yaml_node(depth))}" + ("" if pad is None else f"\n{pad}")
    return draw(yaml_node(depth, key=True)) if choice == 3 else draw(st.sampled_from(FILE_KEYS))


@st.composite
def yaml_block(draw: st.DrawFn, indent: int = 0, depth: int = 0, mapping: bool = False) -> str:
    """Block-style lines at ``indent``: a mapping (always when ``mapping``) or a list of values, flow or block."""
    pad = " " * indent
    lines = []
    if mapping or depth >= 2 or draw(st.booleans()):
        for _ in range(draw(st.integers(1, 4))):
            key = draw(yaml_key(depth + 1, pad))
            if draw(st.booleans()) and depth < 2:
                anchor = f" &{draw(st.sampled_from(NAMES))}" if draw(st.integers(0, 3)) == 0 else ""
                lines.append(f"{pad}{key}:{anchor}\n" + draw(yaml_block(indent + 2, depth + 1)))
            else:
                lines.append(f"{pad}{key}: {draw(yaml_node(depth + 1))}\n")
    else:
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.booleans()) and depth < 2:
                block = draw(yaml_block(indent + 2, depth + 1))
                lines.append(f"{pad}- {block[indent + 2:]}")
            else:
                lines.append(f"{pad}- {draw(yaml_node(depth + 1))}\n")
    return "".join(lines)


@st.composite
def yaml_cases(draw: st.DrawFn) -> str:
    """Cases that mostly validate, with fragments mixed in: a list of them, maybe under anchored defaults."""
    cases = [f"- id: {word}\n  turns: [hi]\n  script: [{{content: hi}}]\n" + draw(yaml_block(2, 1))
             for word in draw(st.lists(st.sampled_from(["a", "b", "fix-test"]), min_size=1, max_size=3))]
    if draw(st.booleans()):
        return "".join(cases)
    merged = "".join(case.replace("- id:", "- <<: *d\n  id:", 1) for case in cases)
    return "defaults: &d\n" + draw(yaml_block(2, 1, True)) + "cases:\n" + merged


@st.composite
def yaml_files(draw: st.DrawFn) -> str:
    """A whole file: block or flow body, maybe a BOM, ``%YAML``/``%TAG`` directives, ``---``, several documents."""
    body = draw(st.one_of(yaml_cases(), yaml_cases(), yaml_block(), yaml_node().map(lambda node: node + "\n")))
    head = draw(st.sampled_from(["", "", "---\n", "%YAML 1.2\n---\n", "%YAML 1.1\n---\n",
                                 "%TAG !e! tag:example.com,2000:\n---\n", "\ufeff", "--- !foo\n"]))
    tail = draw(st.sampled_from(["", "", "...\n", "---\n- id: b\n", "--- *a\n", "\t\n"]))
    return head + body + tail


def check_text(text: str, folder: Path) -> None:
    """``text`` as a case file and as a config file: loaded, or the project's user errors, each with a line."""
    path = folder / "fuzz.yml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    check_case_file(path, folder)
    try:
        read_config(path)
    except UserErrors as e:
        assert e.errors and all(isinstance(one, ConfigError) and one.location and one.location.line for one in e.errors)
    except ConfigError as e:  # a file it cannot read
        assert e.location


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.filterwarnings("ignore::ruamel.yaml.error.MantissaNoDotYAML1_1Warning")  # ruamel's advice on %YAML 1.1 1e3
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_files())
def test_any_yaml_text_with_tags_anchors_and_odd_scalars_loads_or_fails_with_a_located_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        check_text(text, Path(folder))
