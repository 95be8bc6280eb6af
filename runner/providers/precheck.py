"""What can be wrong with a ``-p`` value that tooltrial tells before it loads litellm (which takes
many seconds): a provider without its model, a misspelt alias, a model string of the wrong shape, a key variable
that is not set.

The checks here, each the ``precheck`` of one of litellm's provider kinds (runner.providers.live),
read only the name, ``tooltrial.yml`` and the environment. What only litellm knows (whether it has a
provider of that prefix, the keys of providers not in KEY_VARIABLES) is checked after, by
runner.providers.registry.resolve_provider.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.errors import UserError, did_you_mean
from runner.names import SCRIPTED

if TYPE_CHECKING:
    from runner.providers.settings import ModelSettings
    from runner.spec.config import Config

MODEL_HINT = "name a model as provider/model, e.g. -p ollama/qwen3 or -p openai/gpt-4o, or an alias from tooltrial.yml"
KEY_HINT = "export the variable in the shell that runs tooltrial; agent commands never see it"

# provider prefix -> the key variables litellm reads for it, any one of them enough (tests/test_provider_precheck.py
# holds each to litellm.validate_environment); a provider not listed here is checked once litellm is loaded
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
}
# litellm.provider_list of the pinned litellm, read without loading it (tests/test_provider_precheck.py holds the two equal)
LITELLM_PROVIDERS = frozenset(["a2a", "a2a_agent", "abliteration", "ai21", "ai21_chat", "aiand", "aiml", "aiohttp_openai", "amazon_nova", "anthropic", "anthropic_text", "apertis", "assemblyai", "auto_router", "aws_polly", "aws_textract", "azure", "azure_ai", "azure_speech", "azure_text", "baseten", "bedrock", "bedrock_mantle", "bespoke", "bigmodel", "black_forest_labs", "bytez", "cerebras", "charity_engine", "chatgpt", "chutes", "clarifai", "clf_ai_gateway", "cloudflare", "codestral", "cognition", "cohere", "cohere_chat", "cometapi", "compactifai", "coralbricks", "cortecs", "cursor", "custom", "custom_openai", "darkbloom", "dashscope", "databricks", "databricks_agent", "datarobot", "deepgram", "deepinfra", "deepseek", "docker_model_runner", "dotprompt", "edenai", "elevenlabs", "empiriolabs", "empower", "eu_jev", "fal_ai", "featherless_ai", "fireworks_ai", "friendliai", "galadriel", "gdc", "gemini", "gigachat", "github", "github_copilot", "gradient_ai", "groq", "helicone", "heroku", "hosted_vllm", "hostinger_router", "huggingface", "humanloop", "hyperbolic", "inception", "inferenceapis", "infinity", "jina_ai", "kyma", "lambda_ai", "langflow", "langfuse", "langgraph", "laya", "lemonade", "libertai", "litellm_agent", "litellm_proxy", "llamafile", "lm_studio", "manus", "maritalk", "meta", "meta_llama", "microsoft_365_copilot", "milvus", "minimax", "mistral", "modelscope", "mongodb", "moonshot", "morph", "nace", "nadir", "nano-gpt", "nebius", "neosantara", "nlp_cloud", "novita", "nscale", "nvidia_nim", "nvidia_riva", "oci", "ollama", "ollama_chat", "oobabooga", "openai", "openai_like", "opencode_go", "openinfer", "openrouter", "opensearch", "ovhcloud", "parallel_ai", "parasail", "perplexity", "petals", "pg_vector", "pinstripes", "poe", "predibase", "prism", "publicai", "qwen_ai_platform", "qwencloud", "ragflow", "recraft", "reducto", "refuseless", "reka", "replicate", "runwayml", "s3_vectors", "sagemaker", "sagemaker_chat", "sagemaker_nova", "sail", "sambanova", "sap", "scaledown", "scaleway", "scx-ai", "snowflake", "soniox", "stability", "strands_decider", "streamlake", "synthetic", "tencent", "tensormesh", "text-completion-codestral", "text-completion-inception", "text-completion-openai", "together_ai", "topaz", "transcribe", "triton", "typesafe", "v0", "valkey", "vercel_ai_gateway", "vertex_ai", "vertex_ai_beta", "vllm", "volcengine", "voyage", "wally", "wandb", "watsonx", "watsonx_text", "xai", "xiaomi_mimo", "xinference", "zai", "zerogpu"])
_MODEL_SHAPE = re.compile(r"[^/\s]+/\S+")  # provider/model: no blank, neither part empty


def precheck_alias(name: str, config: Config | None, environ: Mapping[str, str]) -> None:
    """The alias kind's precheck: the alias's ``api_key_env`` unset or blank (unless its server is on this
    machine), its model not ``provider/model``. Raises ConfigError at its entry in the config file."""
    assert config is not None
    settings = config.providers[name]
    missing = missing_key(settings, environ)
    if missing:
        raise config.error(missing, ["providers", name, "api_key_env"], hint=KEY_HINT)
    shape = _shape_problem(settings.model)
    if shape:
        raise config.error(shape, ["providers", name, "model"], hint=MODEL_HINT)


def precheck_model(name: str, config: Config | None, environ: Mapping[str, str]) -> None:
    """The model kind's precheck: a model string that is not ``provider/model``, or of a provider in
    KEY_VARIABLES whose key is not in ``environ``. Raises UserError."""
    from runner.providers.litellm import key_from  # tooltrial's module, not litellm: only live names pay for it

    shape = _shape_problem(name)
    if shape:
        raise UserError(f"cannot use provider {name!r}: {shape}", hint=MODEL_HINT)
    variables = KEY_VARIABLES.get(name.split("/", 1)[0], ())
    if variables and not any(key_from(v, environ) for v in variables):
        raise UserError(f"cannot use provider {name!r}: {' or '.join(variables)} is not set", hint=KEY_HINT)


def precheck_bare(name: str, config: Config | None, environ: Mapping[str, str]) -> None:
    """The bare kind's precheck: a provider's name without its model (``ollama``), a name close to an alias
    or ``scripted`` (did-you-mean). Raises UserError."""
    if name in LITELLM_PROVIDERS:
        raise UserError(f"provider {name!r} needs a model",
                        hint=f"use -p {name}/<model>, or add an alias {name!r} under providers: in tooltrial.yml")
    close = did_you_mean(name, [*(config.providers if config else {}), SCRIPTED])
    if close:
        raise UserError(f"unknown provider {name!r}", hint=close)


def missing_key(settings: ModelSettings, environ: Mapping[str, str] = os.environ) -> str | None:
    """``environment variable X is not set`` for an ``api_key_env`` that is unset or blank, for a
    server that is not on this machine; else None."""
    from runner.providers.litellm import is_local, key_from

    variable = settings.api_key_env
    if variable and not key_from(variable, environ) and not is_local(settings.api_base):
        return f"environment variable {variable} is not set"
    return None


def _shape_problem(model: str) -> str | None:
    """Why ``model`` is no ``provider/model`` string (a blank, an empty part), or None."""
    if "/" in model and not _MODEL_SHAPE.fullmatch(model):
        return f"{model!r} is not provider/model (neither part empty, no blanks)"
    return None
