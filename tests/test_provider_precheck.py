"""Provider mistakes told before litellm loads (runner.providers.precheck): a misspelt alias, a provider
without its model, a model string of the wrong shape, a key that is not set; in a fresh interpreter,
litellm is still not imported after the error. Its tables are held to the pinned litellm."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import UserError
from runner.providers.precheck import KEY_VARIABLES, LITELLM_PROVIDERS
from runner.providers.registry import precheck
from runner.spec.config import load_config
from tests.helpers import ROOT, config

_HOW = "(name a model as provider/model, e.g. -p ollama/qwen3 or -p openai/gpt-4o, or an alias from tooltrial.yml)"
_EXPORT = "(export the variable in the shell that runs tooltrial; agent commands never see it)"

# What a fresh interpreter does: for each argv (a JSON list of them), the CLI's answer, and whether litellm is
# imported after all of them.
_PROBE = """\
import json, sys
from runner.cli import main
codes = [main(argv) for argv in json.loads(sys.argv[1])]
print(codes, "litellm" in sys.modules)
"""

MISTAKES = [
    (["-p", "local-opena"], "error: unknown provider 'local-opena' (did you mean 'local-openai'?)"),
    (["-p", "scripted", "-p", "ollama"],
     "error: provider 'ollama' needs a model (use -p ollama/<model>, or add an alias 'ollama' under providers: in tooltrial.yml)"),
    (["-p", "openai/"], f"error: cannot use provider 'openai/': 'openai/' is not provider/model (neither part empty, no blanks) {_HOW}"),
    (["-p", "openai/gpt 4o"],
     f"error: cannot use provider 'openai/gpt 4o': 'openai/gpt 4o' is not provider/model (neither part empty, no blanks) {_HOW}"),
    (["-p", "anthropic/claude-sonnet-4-5"], f"error: cannot use provider 'anthropic/claude-sonnet-4-5': ANTHROPIC_API_KEY is not set {_EXPORT}"),
    (["-p", "ollama/qwen3", "-p", "local-opena"], "error: unknown provider 'local-opena' (did you mean 'local-openai'?)"),
]


def test_provider_mistakes_are_told_before_litellm_is_imported(tmp_path: Path) -> None:
    path = config(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}  # no key of any provider
    base = ["run", str(ROOT / "cases" / "fix.yml"), "--config", str(path), "--results", str(tmp_path / "r")]
    argvs = json.dumps([[*base, *argv] for argv, _ in MISTAKES])
    done = subprocess.run([sys.executable, "-c", _PROBE, argvs], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.stdout == f"{[4] * len(MISTAKES)} False\n"
    assert done.stderr.splitlines() == [error for _, error in MISTAKES]
    assert not (tmp_path / "r").exists()


def test_a_remote_alias_without_its_key_points_at_the_config_without_litellm(tmp_path: Path) -> None:
    path = config(tmp_path, extra="  hosted:\n    model: openai/gpt-4o\n    api_key_env: TOOLTRIAL_TEST_UNSET_KEY\n")
    with pytest.raises(UserError) as caught:
        precheck("hosted", load_config(path), environ={"TOOLTRIAL_TEST_UNSET_KEY": " "})
    assert caught.value.render() == (
        f"{path}:15:18: providers.hosted.api_key_env: environment variable TOOLTRIAL_TEST_UNSET_KEY is not set {_EXPORT}")


@pytest.mark.parametrize("name", ["scripted", "local-openai", "local-ollama", "ollama/qwen3", "gpt-4o", "openai/gpt-4o",
                                  "meta-llama/Llama-3-8b", "hosted_vllm/x"])
def test_names_that_may_work_pass_to_litellm(tmp_path: Path, name: str) -> None:
    precheck(name, load_config(config(tmp_path)), environ={"OPENAI_API_KEY": "sk-x"})


@pytest.mark.usefixtures("litellm_loaded")
def test_the_tables_are_the_pinned_litellms() -> None:
    from runner.providers.litellm import load_litellm, model_problem
    from runner.providers.settings import ModelSettings

    litellm = load_litellm()
    assert LITELLM_PROVIDERS == {str(getattr(p, "value", p)) for p in litellm.provider_list}
    for provider, variables in KEY_VARIABLES.items():
        assert model_problem(ModelSettings(f"{provider}/some-model"), environ={}) == f"{' or '.join(variables)} is not set"
        for variable in variables:
            assert model_problem(ModelSettings(f"{provider}/some-model"), environ={variable: "k"}) is None
