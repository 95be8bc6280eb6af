"""Token counts of one reply, as litellm normalised the provider's own figures.

litellm's ``usage`` is the one shape for every provider: ``prompt_tokens`` includes
cached tokens (Anthropic's ``input + cache_read + cache_creation``; Gemini's
``promptTokenCount``), ``completion_tokens`` includes reasoning (Gemini's
``candidates + thoughts``), and the parts are in ``prompt_tokens_details`` /
``completion_tokens_details`` (https://platform.openai.com/docs/api-reference/chat/object).
But litellm fills a usage the provider did not send with zeros or its own
tokenizer's estimate, so whether usage was reported at all is decided apart: by
the raw HTTP body (``runner.providers.parse.parse_usage``), or for a stream by the
provider's chunks. Anthropic sends no thinking-token count; litellm estimates one,
which is not recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.providers.base import Usage
from runner.providers.parse import parse_usage


def reported_in(raw: Mapping[str, Any] | None, usage: Mapping[str, Any]) -> bool:
    """Whether the provider reported usage: the raw body ``raw`` has a usage block; without a raw
    body (litellm kept none), litellm's ``usage`` has some count above zero."""
    if raw is not None:
        return parse_usage(raw) is not None
    return any(_count(usage, key) for key in ("prompt_tokens", "completion_tokens", "total_tokens"))


def usage_from(usage: Any, reported: bool, raw: Mapping[str, Any] | None = None,
               anthropic: bool = False) -> Usage | None:
    """The Usage of litellm's ``usage`` mapping (``response.usage`` dumped), or None when the
    provider did not report any. ``raw`` is the provider's body, when kept; on an ``anthropic``
    route reasoning tokens count only when that body has ``usage.output_tokens_details.thinking_tokens``.

    Each count is decided apart: with ``raw``, a count the body does not hold (Ollama's ``eval_count``
    without ``prompt_eval_count``) is None, not litellm's tokenizer estimate. Counts that are not whole
    numbers of at least 0 (bools, floats, text) are None; cost is left None (the provider fills it from
    litellm's table).
    """
    if not reported or not isinstance(usage, Mapping):
        return None
    prompt_details = _mapping(usage.get("prompt_tokens_details"))
    completion_details = _mapping(usage.get("completion_tokens_details"))
    reasoning = _count(completion_details, "reasoning_tokens")
    if anthropic and _count(_mapping(_mapping(_mapping(raw).get("usage")).get("output_tokens_details")),
                            "thinking_tokens") is None:
        reasoning = None
    prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    total = _count(usage, "total_tokens") or None  # litellm writes 0 for a total left out; Usage adds the parts
    sent = parse_usage(raw) if raw is not None else None
    if sent is not None:  # litellm's normalised figure, where the provider sent that figure at all
        prompt = prompt if sent.prompt_tokens is not None else None
        completion = completion if sent.completion_tokens is not None else None
        total = total if sent.total_tokens is not None else None
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=total,
        reasoning_tokens=reasoning,
        cached_tokens=_first(_count(prompt_details, "cached_tokens"), _count(usage, "cache_read_input_tokens")),
        cache_write_tokens=_first(_count(prompt_details, "cache_creation_tokens"),
                                  _count(usage, "cache_creation_input_tokens")),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _count(mapping: Mapping[str, Any], key: str) -> int | None:
    value = mapping.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _first(*values: int | None) -> int | None:
    return next((v for v in values if v is not None), None)
