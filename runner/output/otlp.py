"""Spans (runner.output.otel) out in the OpenTelemetry protocol: OTLP JSON lines to a file, or
OTLP/HTTP (protobuf) to a collector with the official exporter (``opentelemetry-exporter-otlp-proto-http``).

The file holds one ``ExportTraceServiceRequest`` per line, one run's trace each, in the OTLP/JSON
encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding): protobuf's JSON
mapping with lowerCamelCase keys, enums as integers, and trace and span ids as hex strings, not
base64 (the one place OTLP/JSON departs from protobuf's mapping). This is the format of the
OpenTelemetry Collector's file exporter, which its ``otlpjsonfile`` receiver reads back.
``otel_target`` and ``write_traces`` are the ``otel`` row of the table of formats (runner.output.formats).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from runner.errors import UserError
from runner.output.finish import NotWritten, cannot_write
from runner.output.otel import OtelTarget, each_run_spans, require_otel, run_spans
from runner.output.store import write_replace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from runner.output.finish import Ending

TRACES_PATH = "/v1/traces"
EXPORT_TIMEOUT = 10.0  # seconds for one export request, the exporter's retries of a transient failure included
BATCH_RUNS = 100  # runs' spans per OTLP/HTTP request: well under the exporter's 64 MiB request limit
_ID_KEYS = ("traceId", "spanId", "parentSpanId")
_EXPORTER_LOG = "opentelemetry.exporter.otlp.proto.http.trace_exporter"  # the exporter's logger


def otel_target(values: Mapping[str, Any]) -> OtelTarget:
    """The export that ``--otel``, ``--otel-endpoint`` and ``--otel-content`` ask for (their values by name),
    checked before anything runs. Raises UserError for an endpoint that is not an http(s) URL, the otel
    extra not installed, or ``--otel-content`` alone."""
    file, url, content = values["otel"], values["otel_endpoint"], values["otel_content"]
    endpoint = traces_url(url) if url else None
    if file or endpoint:
        require_otel("--otel" if file else "--otel-endpoint")
    elif content:
        raise UserError("--otel-content needs --otel FILE or --otel-endpoint URL", hint="add one, or leave --otel-content out")
    return OtelTarget(file, endpoint, content)


def write_traces(target: OtelTarget, ending: Ending) -> None:
    """Write the traces of the finished runs to ``target.file`` (OTLP JSON lines), then send them to
    ``target.endpoint``, each model named as the ending's ``models`` say, a run at a time; the spans are
    held only when both want them. Raises NotWritten with a line for a file that cannot be written and one
    for a collector that does not take the traces (the other is still tried)."""
    target, records = replace(target, models=ending.models), ending.runs.records
    traces = run_spans(records(), target) if target.file is not None and target.endpoint is not None else None
    failed: list[str] = []
    if target.file is not None:
        try:
            write_replace(target.file, each_json_line(traces or each_run_spans(records(), target)))
        except OSError as e:
            failed.append(cannot_write(target.file, e))
    if target.endpoint is not None:
        refused = send(traces or each_run_spans(records(), target), target.endpoint)
        failed.extend([refused] if refused else [])
    if failed:
        raise NotWritten(*failed)


def traces_url(url: str) -> str:
    """The OTLP/HTTP traces URL of ``--otel-endpoint``'s value: a URL with no path gets ``/v1/traces``
    (as ``OTEL_EXPORTER_OTLP_ENDPOINT`` does), any other is used as given. Raises UserError for
    anything but an http(s) URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UserError(f"--otel-endpoint {url!r} is not an http(s) URL",
                        hint="give the collector's OTLP/HTTP address, e.g. http://localhost:4318")
    if parts.path in ("", "/"):
        return urlunsplit(parts._replace(path=TRACES_PATH))
    return url


def json_lines(traces: Iterable[Sequence[ReadableSpan]]) -> str:
    """One OTLP/JSON ``ExportTraceServiceRequest`` line per non-empty trace, each ending in a newline."""
    return "".join(each_json_line(traces))


def each_json_line(traces: Iterable[Sequence[ReadableSpan]]) -> Iterator[str]:
    """``json_lines``'s lines one at a time, each trace encoded as it is reached."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    for spans in traces:
        if spans:
            document = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
            yield json.dumps(_hex_ids(document), separators=(",", ":")) + "\n"


def _hex_ids(value: Any) -> Any:
    """``value`` (protobuf's JSON mapping) with every trace and span id as hex instead of base64."""
    if isinstance(value, dict):
        return {k: base64.b64decode(v).hex() if k in _ID_KEYS and isinstance(v, str) else _hex_ids(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


def send(traces: Iterable[Sequence[ReadableSpan]], url: str) -> str | None:
    """POST the spans to the OTLP/HTTP traces ``url``, ``BATCH_RUNS`` runs a request; None when the
    collector took them all, else one line saying what it answered (the exporter's own log line)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=url, timeout=EXPORT_TIMEOUT)
    try:
        with _exporter_log() as said:
            for batch in _batches(traces):
                if exporter.export(batch) is not SpanExportResult.SUCCESS:
                    why = said.messages[-1] if said.messages else "it did not accept the spans"
                    last = f" (the last error: {said.transient[-1]})" if said.transient else ""
                    return f"cannot export the traces to {url}: {why}{last}"
    finally:
        exporter.shutdown()
    return None


def _batches(traces: Iterable[Sequence[ReadableSpan]]) -> Iterator[list[ReadableSpan]]:
    """The spans of ``BATCH_RUNS`` traces at a time, as the traces come; empty batches left out."""
    batch: list[ReadableSpan] = []
    for place, spans in enumerate(traces, start=1):
        batch.extend(spans)
        if place % BATCH_RUNS == 0:
            if batch:
                yield batch
            batch = []
    if batch:
        yield batch


class _Said(logging.Handler):
    """Keeps the messages logged to it, instead of letting Python print them on stderr, and the
    errors of the retried tries (``Transient error %s ...``: a retry that timed out names none)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.transient: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        if str(record.msg).startswith("Transient error") and isinstance(record.args, tuple) and record.args:
            self.transient.append(str(record.args[0]))


@contextlib.contextmanager
def _exporter_log() -> Iterator[_Said]:
    """While open, the OTLP/HTTP exporter's log lines (why an export failed) are kept, not printed."""
    logger = logging.getLogger(_EXPORTER_LOG)
    said, propagate = _Said(), logger.propagate
    logger.addHandler(said)
    logger.propagate = False
    try:
        yield said
    finally:
        logger.removeHandler(said)
        logger.propagate = propagate
