"""Finished runs as OpenTelemetry traces: one trace per run, a span for the run, each model request
and each tool call, built with the official SDK (``opentelemetry-sdk``, the ``otel`` extra).

The spans are made from the run records after the matrix is done (data flows one way: nothing
instruments the running threads), at the times the records kept (``started`` and ``duration`` of
the run and of each call, ``started`` and ``latency`` of each request). Model requests and tool
calls carry the OpenTelemetry GenAI semantic-convention attributes (semantic conventions 1.37+,
https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): ``gen_ai.operation.name``
``chat`` or ``execute_tool``, ``gen_ai.provider.name`` (and the older ``gen_ai.system``),
``gen_ai.request.model``, ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``; what only tooltrial knows is under ``tooltrial.*``.
Prompts, messages sent, reply text, tool arguments and results can hold secrets: they are exported only
with ``content`` (``--otel-content``; what each request carried: runner.output.otelinput).
runner.output.otlp writes the spans as OTLP JSON lines or sends them.

Nothing here imports OpenTelemetry until spans are made; ``require_otel`` says which extra is missing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner import __version__
from runner.errors import UserError
from runner.names import SCRIPTED
from runner.output.otelinput import request_content
from runner.run.record import RunRecord
from runner.run.requests import RequestStats
from runner.run.trajectory import Step
from runner.text import first_line

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan, Tracer
    from opentelemetry.trace import Span

SERVICE = "tooltrial"
# litellm provider prefixes whose GenAI name (gen_ai.provider.name's well-known values) differs or is known
_PROVIDER_NAMES = {
    "openai": "openai", "text-completion-openai": "openai", "azure": "azure.ai.openai", "azure_ai": "azure.ai.inference",
    "anthropic": "anthropic", "gemini": "gcp.gemini", "vertex_ai": "gcp.vertex_ai", "bedrock": "aws.bedrock",
    "cohere": "cohere", "cohere_chat": "cohere", "watsonx": "ibm.watsonx.ai", "perplexity": "perplexity",
    "xai": "x_ai", "deepseek": "deepseek", "groq": "groq", "mistral": "mistral_ai", "ollama_chat": "ollama",
}


@dataclass(frozen=True)
class OtelTarget:
    """Where and what to export.

    Attributes:
        file: the OTLP JSON lines file (``--otel``), or None.
        endpoint: the OTLP/HTTP traces URL (``--otel-endpoint``, ``/v1/traces`` added to a bare host), or None.
        content: also export what each request carried, reply text, reasoning, tool arguments and results
            (``--otel-content``).
        models: each arm's provider label -> the litellm model string it sends (an alias's ``model``).
    """

    file: Path | None = None
    endpoint: str | None = None
    content: bool = False
    models: Mapping[str, str] = field(default_factory=dict)


def require_otel(flag: str) -> None:
    """Import the OpenTelemetry SDK and OTLP/HTTP exporter once, so a missing extra is a UserError
    naming it before any run starts (``flag`` is the option that needs it)."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as e:
        raise UserError(f"{flag} needs OpenTelemetry, which is not installed ({e.name or e})",
                        hint="install tooltrial's otel extra: pip install 'tooltrial[otel]'") from e


def provider_and_model(model: str) -> tuple[str, str]:
    """``(gen_ai.provider.name, gen_ai.request.model)`` of a litellm model string: ``openai/gpt-4o`` ->
    ``("openai", "gpt-4o")``, ``ollama/qwen3`` -> ``("ollama", "qwen3")``, ``scripted`` -> ``("scripted",
    "scripted")``; a prefix the conventions do not name stays litellm's; a bare model is ``litellm``'s."""
    if model == SCRIPTED:
        return SCRIPTED, SCRIPTED
    prefix, slash, rest = model.partition("/")
    if not slash:
        return "litellm", model
    return _PROVIDER_NAMES.get(prefix, prefix), rest


def run_spans(records: Iterable[RunRecord], target: OtelTarget) -> list[list[ReadableSpan]]:
    """The finished spans of each record, one list (one trace) per run, in order; a record without a
    start time (written before tooltrial kept one) gives an empty list."""
    return list(each_run_spans(records, target))


def each_run_spans(records: Iterable[RunRecord], target: OtelTarget) -> Iterator[list[ReadableSpan]]:
    """``run_spans`` one run at a time: each record's trace made as the record is reached, so a reader
    of the records one by one (runner.output.scan.Runs) holds one run's spans at once."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": SERVICE, "service.version": __version__}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tooltrial", __version__)
    try:
        for record in records:
            if record.started is not None:
                _run_trace(tracer, record, record.started, target)
            spans = list(memory.get_finished_spans())
            memory.clear()
            yield spans
    finally:
        provider.shutdown()


def _ns(seconds: float) -> int:
    """Epoch seconds as OpenTelemetry's epoch nanoseconds, whole seconds apart so none are lost to rounding."""
    whole = math.floor(seconds)
    return whole * 1_000_000_000 + round((seconds - whole) * 1e9)


def _run_trace(tracer: Tracer, record: RunRecord, started: float, target: OtelTarget) -> None:
    """The spans of the run that began at ``started`` (epoch seconds): its own, its requests' and its calls'."""
    from opentelemetry.context import Context
    from opentelemetry.trace import SpanKind, set_span_in_context

    run = tracer.start_span(f"run {record.case}", Context(), SpanKind.INTERNAL, _run_attributes(record, target),
                            start_time=_ns(started))
    if record.status == "error":
        _failed(run, str(record.error_kind or "error"), first_line(record.cause, ""))
    inside = set_span_in_context(run, Context())
    system, model = provider_and_model(target.models.get(record.provider, record.provider))
    for request in record.model_requests:
        if request.started is not None:
            carried = _carried(record, request) if target.content else None
            _request_span(tracer, inside, request, request.started, (system, model), carried)
    for step in record.steps:
        if step.started is not None:
            _tool_span(tracer, inside, step, step.started, target.content)
    run.end(end_time=_ns(started + record.duration))


def _run_attributes(record: RunRecord, target: OtelTarget) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "tooltrial.case": record.case, "tooltrial.arm": record.arm, "tooltrial.provider": record.provider,
        "tooltrial.prompt": record.prompt, "tooltrial.tool_defs": record.tool_defs, "tooltrial.run": record.run, "tooltrial.status": str(record.status),
        "tooltrial.outcome": record.outcome, "tooltrial.process": record.process,
        "tooltrial.failure": None if record.failure is None else str(record.failure),
        "tooltrial.error_kind": None if record.error_kind is None else str(record.error_kind),
        "tooltrial.cause": first_line(record.cause, "") or None,
        "tooltrial.requests": record.requests, "tooltrial.calls": record.calls,
        "tooltrial.checks.failed": [c.check for c in record.failed_checks] or None,
        "tooltrial.judge.calibration": [c.calibration.status for c in record.checks if c.calibration] or None,
        "gen_ai.usage.input_tokens": record.tokens.prompt_tokens, "gen_ai.usage.output_tokens": record.tokens.completion_tokens,
        "tooltrial.cost": record.cost,
    }
    if target.content and record.final_reply:
        attributes["tooltrial.final_reply"] = record.final_reply
    return _known(attributes)


def _carried(record: RunRecord, request: RequestStats) -> dict[str, str]:
    """The content attributes of what ``request`` carried (runner.output.otelinput); none for a record that does
    not say (one of an earlier version, or a request whose body did not read)."""
    if request.messages is None:
        return {}
    start, end = request.messages
    return request_content(record.messages[start:end], record.tools)


def _request_span(tracer: Tracer, parent: Context, request: RequestStats, started: float, reached: tuple[str, str],
                  carried: dict[str, str] | None) -> None:
    """The span of model request ``request``, sent at ``started`` to ``reached`` (provider name, model); with
    ``carried`` (``--otel-content``: the content attributes of what it carried) its input and its reply too."""
    from opentelemetry.trace import SpanKind

    system, model = reached
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": system, "gen_ai.system": system,
        "gen_ai.request.model": model, "gen_ai.request.stream": request.streamed,
        "gen_ai.response.finish_reasons": [request.finish_reason] if request.finish_reason else None,
        "gen_ai.usage.input_tokens": request.prompt_tokens, "gen_ai.usage.output_tokens": request.completion_tokens,
        "gen_ai.usage.reasoning.output_tokens": request.reasoning_tokens,
        "gen_ai.usage.cache_read.input_tokens": request.cached_tokens,
        "gen_ai.usage.cache_creation.input_tokens": request.cache_write_tokens,
        "gen_ai.response.time_to_first_chunk": request.ttft,
        "tooltrial.request.index": request.index, "tooltrial.request.turn": request.turn,
        "tooltrial.request.outcome": request.outcome, "tooltrial.request.attempts": len(request.attempts) or None,
        "tooltrial.cost": request.cost,
    }
    if carried is not None:
        attributes.update(carried)
        attributes["gen_ai.output.messages"] = json.dumps([_output_message(request)])
    span = tracer.start_span(f"chat {model}", parent, SpanKind.CLIENT, _known(attributes),
                             start_time=_ns(started))
    if request.finish_reason is None and request.attempts:  # failed for good: its last try says how
        last = request.attempts[-1]
        _failed(span, str(last.error_kind or "error"), last.message or "")
    span.end(end_time=_ns(started + request.latency))


def _output_message(request: RequestStats) -> dict[str, Any]:
    """The reply as the conventions' output message: role, parts (text, reasoning, tool calls), finish reason."""
    parts: list[dict[str, Any]] = []
    if request.reasoning:
        parts.append({"type": "reasoning", "content": request.reasoning})
    if request.text:
        parts.append({"type": "text", "content": request.text})
    parts.extend({"type": "tool_call", "id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
                 for c in request.tool_calls)
    return {"role": "assistant", "parts": parts, "finish_reason": request.finish_reason}


def _tool_span(tracer: Tracer, parent: Context, step: Step, started: float, content: bool) -> None:
    """The span of tool call ``step``, begun at ``started``."""
    from opentelemetry.trace import SpanKind

    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step.name, "gen_ai.tool.call.id": step.call_id,
        "gen_ai.tool.type": "function", "tooltrial.tool.status": step.status, "tooltrial.tool.is_error": step.is_error,
        "tooltrial.request.index": step.request, "tooltrial.turn": step.turn,
    }
    if content:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(step.arguments)
        attributes["gen_ai.tool.call.result"] = step.result
    span = tracer.start_span(f"execute_tool {step.name}", parent, SpanKind.INTERNAL, _known(attributes),
                             start_time=_ns(started))
    if step.is_error:  # the result's text only with content: it is the tool's output
        _failed(span, "tool_error", first_line(step.result, "") if content else "")
    span.end(end_time=_ns(started + step.duration))


def _failed(span: Span, kind: str, message: str) -> None:
    """Mark ``span`` failed: ``error.type`` ``kind`` and status ERROR with ``message`` (none when empty)."""
    from opentelemetry.trace import Status, StatusCode

    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, message or None))


def _known(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes with a value (OpenTelemetry has no null), their text valid UTF-8: a model's reply
    may hold lone surrogates, which protobuf cannot encode (each becomes ``?``)."""
    return {k: _utf8(v) for k, v in attributes.items() if v is not None}


def _utf8(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, list):
        return [_utf8(v) for v in value]
    return value
