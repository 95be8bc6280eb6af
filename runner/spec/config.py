"""The project config file ``tooltrial.yml``: provider aliases and run defaults.

Found as ``./tooltrial.yml`` or given with ``--config FILE``; validated against
``schemas/config.schema.json`` with the same positioned, did-you-mean errors
as case files. Command-line flags override what it says. Example::

    providers:
      local-openai:
        model: openai/fake
        api_base: http://127.0.0.1:8000/v1
        api_key_env: LOCAL_KEY      # the variable's name, never the key
        temperature: 0
        timeout: 30                 # seconds per request attempt
        retries: {attempts: 4, backoff: 1}
        params: {top_p: 1}          # passed to litellm.completion as given
        stream: true                # replies as streams; each request's time to first token is recorded
        recover_text_calls: true    # run tool calls the model wrote as text (<tool_call>...</tool_call>)
        max_concurrency: 2          # runs of this alias at once (default 1 for a loopback api_base)
    default_provider: local-openai
    jobs: 4
    results_dir: results
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from runner.errors import (
    CaseFileError,
    ConfigError,
    Location,
    UserError,
    UserErrors,
    did_you_mean,
    in_file_order,
)
from runner.names import JUDGE_HINT, provider_kind
from runner.providers.registry import PROVIDER_KINDS
from runner.providers.retry import RetryPolicy
from runner.providers.settings import ModelSettings
from runner.resources import bundled
from runner.spec.agentspec import AgentSpec, agent_of, agent_rule_errors
from runner.spec.positions import Spot
from runner.spec.schema import schema_errors, schema_validator, surely_valid
from runner.spec.source import parse, to_plain

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

CONFIG_NAME = "tooltrial.yml"
# litellm.completion arguments that tooltrial sets itself, and the config key to use instead.
_RESERVED_PARAMS = {
    "model": "model", "messages": "", "tools": "", "stream": "stream", "stream_options": "", "logger_fn": "",
    "api_base": "api_base", "base_url": "api_base", "api_key": "api_key_env", "timeout": "timeout",
    "temperature": "temperature", "max_tokens": "max_tokens", "num_retries": "retries", "max_retries": "retries",
}


@dataclass(frozen=True)
class Config:
    """A loaded project config; every field is optional.

    Attributes:
        path: the file it came from, None when there is none.
        providers: alias -> model settings.
        default_provider: a ``-p`` value used when no ``-p`` is given.
        jobs: runs at once. results_dir: absolute, resolved against the file's folder.
        judge: a ``-p``-style value for ``expect.judge`` when a case names no model.
        agents: name -> external agent program (runner.spec.agentspec), for ``agent: NAME`` and ``--agent NAME``.
    """

    path: Path | None = None
    providers: Mapping[str, ModelSettings] = field(default_factory=dict)
    default_provider: str | None = None
    jobs: int | None = None
    results_dir: Path | None = None
    judge: str | None = None
    agents: Mapping[str, AgentSpec] = field(default_factory=dict)
    spot: Spot | None = field(default=None, repr=False, compare=False)

    @property
    def key_variables(self) -> list[str]:
        """The environment variables its aliases read their keys from (``api_key_env``), in file order, each once."""
        return list(dict.fromkeys(s.api_key_env for s in self.providers.values() if s.api_key_env))

    def error(self, message: str, path: Sequence[str | int] = (), hint: str = "") -> UserError:
        """A ConfigError at ``path`` in the file (``("providers", "x", "model")``), or a plain one without a file."""
        if self.spot is None:
            return ConfigError(message, hint=hint)
        return _as_config(self.spot.error(message, path, hint=hint))


def config_schema() -> dict[str, Any]:
    """The config JSON Schema (draft 2020-12) from the bundled ``schemas/config.schema.json``."""
    return json.loads((bundled("schemas") / "config.schema.json").read_text(encoding="utf-8"))


@functools.cache
def _validator() -> Draft202012Validator:
    return schema_validator(config_schema())  # imports jsonschema: only a config jsonschema-rs rejects pays for it


@functools.cache
def _compiled() -> jsonschema_rs.Validator:
    return jsonschema_rs.Draft202012Validator(config_schema())


def find_config(explicit: str | Path | None = None, cwd: Path | None = None) -> Path | None:
    """``explicit`` when given (ConfigError if it is a folder, saying so, or is not there), else
    ``./tooltrial.yml`` if it exists, else None."""
    if explicit is not None:
        path = Path(explicit)
        if path.is_dir():
            inside = path / CONFIG_NAME
            hint = f"give the file itself: --config {inside}" if inside.is_file() else (
                f"--config takes a file such as {CONFIG_NAME} (its keys: docs/reference/config.md)")
            raise ConfigError(f"--config {path} is a folder, not a config file", hint=hint)
        if not path.is_file():
            raise ConfigError(f"config file not found: {path}", hint="check the path given to --config")
        return path
    found = (cwd or Path.cwd()) / CONFIG_NAME
    return found if found.is_file() else None


def load_config(explicit: str | Path | None = None, cwd: Path | None = None) -> Config:
    """The project config: see ``find_config`` for where it is looked for; an empty Config when there is none.

    Raises UserErrors with every error found (file:line:col, key path, hint).
    """
    path = find_config(explicit, cwd)
    return read_config(path) if path is not None else Config()


def read_config(path: Path) -> Config:
    """Parse and validate one config file. Raises UserErrors listing every problem."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read the config file: {e}", Location(file)) from e
    try:
        root = parse(text, file)
        data = to_plain(root, file)
    except CaseFileError as e:
        raise UserErrors([_as_config(e)]) from e
    if data is None:
        return Config(path=path)
    spot = Spot(file, root, empty="(file)")
    if not isinstance(data, dict):
        raise UserErrors([_as_config(spot.error("expected a mapping of settings", hint="see examples/tooltrial.yml"))])
    errors = [] if surely_valid(_compiled(), data) else [
        _as_config(e) for error in _validator().iter_errors(data) for e in schema_errors(error, spot)]
    errors += _extra_rules(data, spot)
    if errors:
        raise UserErrors(in_file_order(errors))
    results = data.get("results_dir")
    return Config(
        path=path,
        providers={alias: _settings(entry) for alias, entry in data.get("providers", {}).items()},
        default_provider=data.get("default_provider"),
        jobs=data.get("jobs"),
        results_dir=(path.parent / results).resolve() if results else None,
        judge=data.get("judge"),
        agents={name: agent_of(name, entry, path.parent) for name, entry in data.get("agents", {}).items()},
        spot=spot,
    )


def _settings(entry: Mapping[str, Any]) -> ModelSettings:
    retry = RetryPolicy(**entry.get("retries", {}))
    keys = ("model", "api_base", "api_key_env", "temperature", "max_tokens", "timeout", "stream", "recover_text_calls",
            "unwrap_calls", "max_concurrency")
    known = {k: entry[k] for k in keys if k in entry}
    return ModelSettings(**known, params=dict(entry.get("params", {})), retry=retry)


def _extra_rules(data: Mapping[str, Any], spot: Spot) -> list[ConfigError]:
    """What the schema cannot say: reserved params, an alias a provider kind ahead of the aliases would
    take, references to providers that are none or cannot judge. The kinds come from their table
    (runner.providers.registry.PROVIDER_KINDS), read by the one name rule (runner.names.provider_kind)."""
    errors: list[ConfigError] = []
    providers: dict[str, Any] = data["providers"] if isinstance(data.get("providers"), dict) else {}
    for alias, entry in providers.items():
        taken = provider_kind(alias, providers, PROVIDER_KINDS)
        if taken.pattern is not None:
            errors.append(_as_config(spot.error(f"{alias!r} is {taken.about}", ["providers", alias],
                                                key=True, hint="give this alias another name")))
        params = entry.get("params") if isinstance(entry, dict) else None
        for key in params if isinstance(params, dict) else ():
            if key in _RESERVED_PARAMS:
                use = _RESERVED_PARAMS[key]
                hint = f"use the provider's {use!r} key" if use else "tooltrial sets it"
                errors.append(_as_config(spot.error(f"{key!r} cannot be set in params", ["providers", alias, "params", key],
                                                    key=True, hint=hint)))
    for key in ("default_provider", "judge"):
        value = data.get(key)
        if isinstance(value, str) and provider_kind(value, providers, PROVIDER_KINDS).litellm_decides:
            hint = did_you_mean(value, providers, "name an alias under providers, a model such as ollama/qwen3, or scripted")
            errors.append(_as_config(spot.error(f"unknown provider {value!r}", [key], hint=hint)))
    agents: dict[str, Any] = data["agents"] if isinstance(data.get("agents"), dict) else {}
    for name, entry in agents.items():
        errors += [_as_config(e) for e in agent_rule_errors(entry, ["agents", name], spot)]
    judge = data.get("judge")
    why = provider_kind(judge, providers, PROVIDER_KINDS).not_a_judge if isinstance(judge, str) else None
    if why:
        errors.append(_as_config(spot.error(why, ["judge"], hint=JUDGE_HINT)))
    return errors


def _as_config(error: UserError) -> ConfigError:
    return ConfigError(error.message, error.location, error.path, error.hint)
