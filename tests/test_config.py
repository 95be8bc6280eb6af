"""tooltrial.yml: loading, defaults, and the exact text of every kind of error."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.errors import ConfigError, UserErrors
from runner.providers.retry import RetryPolicy
from runner.providers.settings import ModelSettings
from runner.spec.config import Config, config_schema, load_config, read_config

ROOT = Path(__file__).resolve().parent.parent


def write(tmp_path: Path, text: str, name: str = "tooltrial.yml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(UserErrors) as caught:
        read_config(path)
    return [e.render() for e in caught.value.errors]


def test_the_shipped_example_is_valid() -> None:
    config = load_config(ROOT / "examples" / "tooltrial.yml")
    local = config.providers["local-openai"]
    assert local == ModelSettings(model="openai/fake", api_base="http://127.0.0.1:8000/v1", api_key_env="LOCAL_KEY",
                                  temperature=0, max_tokens=512, timeout=30, max_concurrency=1)
    assert config.providers["ollama"].params == {"keep_alive": "10m"}
    assert config.providers["gpt"].retry == RetryPolicy(attempts=5, backoff=2, max_backoff=60)
    assert (config.default_provider, config.jobs, config.judge) == ("scripted", 4, "gpt")
    assert config.results_dir == (ROOT / "examples" / "results").resolve()


def test_found_in_the_current_folder_or_absent(tmp_path: Path) -> None:
    assert load_config(cwd=tmp_path) == Config()
    write(tmp_path, "providers:\n  box: {model: ollama/qwen3}\n")
    assert load_config(cwd=tmp_path).providers["box"].model == "ollama/qwen3"


def test_explicit_path_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.yml")
    assert caught.value.render() == f"config file not found: {tmp_path / 'nope.yml'} (check the path given to --config)"


def test_empty_file_is_an_empty_config(tmp_path: Path) -> None:
    assert read_config(write(tmp_path, "# nothing yet\n")).providers == {}


def test_unknown_keys_are_rejected_with_did_you_mean(tmp_path: Path) -> None:
    path = write(tmp_path, """\
providers:
  local:
    model: openai/x
    api_bse: http://127.0.0.1:8000/v1
    retries: {attempt: 3}
jobz: 2
""")
    assert errors_of(path) == [
        f"{path}:4:5: providers.local: unknown key 'api_bse' (did you mean 'api_base'?)",
        f"{path}:5:15: providers.local.retries: unknown key 'attempt' (did you mean 'attempts'?)",
        f"{path}:6:1: (file): unknown key 'jobz' (did you mean 'jobs'?)",
    ]


def test_wrong_values(tmp_path: Path) -> None:
    path = write(tmp_path, """\
providers:
  Local:
    model: 3
  other:
    api_key_env: sk-abc123
    timeout: 0
jobs: 0
""")
    assert errors_of(path) == [
        (f"{path}:2:3: providers: 'Local' is not a valid name "
         "(use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit)"),
        f"{path}:3:12: providers.Local.model: expected a string, got a number (put it in quotes to make it text)",
        f"{path}:5:5: providers.other: missing required key 'model'",
        (f"{path}:5:18: providers.other.api_key_env: 'sk-abc123' is not a valid name "
         "(use letters, digits and '_', not starting with a digit)"),
        f"{path}:6:14: providers.other.timeout: must be greater than 0, got 0",
        f"{path}:7:7: jobs: must be at least 1, got 0",
    ]


def test_names_ending_in_a_newline_are_not_valid(tmp_path: Path) -> None:
    path = write(tmp_path, 'providers:\n  "local\\n": {model: openai/x, api_key_env: "KEY\\n"}\n')
    assert errors_of(path) == [
        (f"{path}:2:3: providers: 'local\\n' is not a valid name "
         "(use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit)"),
        (f"{path}:2:45: providers.local\n.api_key_env: 'KEY\\n' is not a valid name "
         "(use letters, digits and '_', not starting with a digit)"),
    ]


def test_rules_beyond_the_schema(tmp_path: Path) -> None:
    path = write(tmp_path, """\
providers:
  local-openai:
    model: openai/x
    params: {api_key: secret, num_retries: 3, top_p: 1}
  scripted: {model: openai/y}
default_provider: local-opnai
judge: nobody
""")
    assert errors_of(path) == [
        (f"{path}:4:14: providers.local-openai.params.api_key: 'api_key' cannot be set in params "
         "(use the provider's 'api_key_env' key)"),
        (f"{path}:4:31: providers.local-openai.params.num_retries: 'num_retries' cannot be set in params "
         "(use the provider's 'retries' key)"),
        f"{path}:5:3: providers.scripted: 'scripted' is the built-in offline provider (give this alias another name)",
        f"{path}:6:19: default_provider: unknown provider 'local-opnai' (did you mean 'local-openai'?)",
        (f"{path}:7:8: judge: unknown provider 'nobody' "
         "(name an alias under providers, a model such as ollama/qwen3, or scripted)"),
    ]


def test_yaml_syntax_and_duplicate_keys_are_positioned(tmp_path: Path) -> None:
    broken = write(tmp_path, "providers:\n  a: {model: [x\n", "broken.yml")
    (only,) = errors_of(broken)
    assert only == (f"{broken}:2:14: invalid YAML: '[' is not closed"
                    " (close it with ']' before line 3, column 1, and separate its items with ', ')")
    twice = write(tmp_path, "jobs: 1\njobs: 2\n", "twice.yml")
    assert errors_of(twice) == [f"{twice}:2:1: duplicate key 'jobs' (a key may appear once per mapping)"]


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- providers\n")
    assert errors_of(path) == [f"{path}:1:1: (file): expected a mapping of settings (see examples/tooltrial.yml)"]


def test_errors_are_config_errors_exit_4(tmp_path: Path) -> None:
    with pytest.raises(UserErrors) as caught:
        read_config(write(tmp_path, "jobs: many\n"))
    assert all(isinstance(e, ConfigError) for e in caught.value.errors)
    assert caught.value.exit_code == 4


def test_the_schema_is_draft_2020_12_and_closed() -> None:
    schema = config_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["additionalProperties"] is False


_VALUES = st.none() | st.booleans() | st.integers(-2, 5) | st.sampled_from(["", "x", "openai/x", "sk-1", "scripted"])
_KEYS = st.sampled_from(["providers", "default_provider", "jobs", "results_dir", "judge", "model", "api_base",
                         "timeout", "retries", "attempts", "params", "local", "scripted", "api_key", "Bad"])
_YAMLISH = st.recursive(_VALUES, lambda inner: st.dictionaries(_KEYS, inner, max_size=4) | st.lists(inner, max_size=2),
                        max_leaves=10)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.dictionaries(_KEYS, _YAMLISH, max_size=4))
def test_any_mapping_loads_or_gives_positioned_config_errors(tmp_path: Path, data) -> None:
    import json

    path = write(tmp_path, json.dumps(data))  # JSON is YAML
    try:
        config = read_config(path)
    except UserErrors as e:
        assert e.errors and all(isinstance(one, ConfigError) and one.location.line for one in e.errors)
    else:
        assert all(isinstance(s, ModelSettings) for s in config.providers.values())
