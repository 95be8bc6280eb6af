"""The model endpoint of one external-agent run: a loopback HTTP server that speaks OpenAI chat
completions (``POST /v1/chat/completions``) and Anthropic Messages (``POST /v1/messages``), JSON and
streams, plus ``GET /v1/models``; it hands each request to the arm's provider (already wrapped in the
turn limit, runner.providers.limits) and records every one.

One server per run, on a port the OS picks: it starts in about a millisecond, and a run's requests
need no routing. litellm's proxy was not used: it needs the ``proxy`` extra (FastAPI, uvicorn and more)
and seconds to start, for what is here one small handler (runner.endpoint.handler: the HTTP, and the
bounds a request is held to before its body is read). Requests are answered one at a time, in the
order they come (the scripted provider's replies are in order).
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Self

from runner.endpoint.chat import chat_error, chat_reply, chat_stream, read_chat
from runner.endpoint.handler import Handler, Server
from runner.endpoint.messages import messages_error, messages_reply, messages_stream, read_messages
from runner.endpoint.wire import WireError, WireRequest, parse_body, text_of
from runner.kinds import ErrorKind, StopReason
from runner.providers.base import Completion, OutOfTime, Provider, ProviderError, ToolCall, Usage
from runner.providers.limits import TurnLimitExceeded
from runner.run.events import CallDone, Event, RequestDone
from runner.run.transcript import Transcript

_STATUS = {ErrorKind.RATE_LIMIT: 429, ErrorKind.QUOTA_EXHAUSTED: 429, ErrorKind.AUTH: 401, ErrorKind.BAD_REQUEST: 400,
           ErrorKind.CONTEXT_OVERFLOW: 400, ErrorKind.SERVER_ERROR: 500, ErrorKind.PROVIDER_TIMEOUT: 504,
           ErrorKind.TIMEOUT: 504, ErrorKind.CONNECTION: 502, ErrorKind.MALFORMED_RESPONSE: 502}
UNSERVED_KEPT = 5  # requests to unserved routes named in the run's warning
_UNREADABLE = "tooltrial's endpoint could not read the request: "  # how the error of a request it could not read starts


@dataclass(frozen=True)
class Exchange:
    """One request the endpoint answered (a refused token not counted).

    Attributes:
        turn: the 0-based case turn (agent invocation) it came in.
        api: ``chat`` or ``messages``; status: the HTTP status answered.
        request: what was read from it, None when its body could not be read (or was not: runner.endpoint.handler).
        completion: the provider's reply, None when none was given (refused, failed).
        error: the message of an answer that was an error, else None.
        started: when it came, epoch seconds; duration: seconds to answer it.
        messages: ``(start, end)``: the messages it carried are ``messages[start:end]`` of the endpoint's
            ``transcript``; None when its body was not read.
        asked: whether it went to the model (answered, or failed there), not refused before.
    """

    turn: int
    api: str
    status: int
    request: WireRequest | None
    completion: Completion | None
    error: str | None
    started: float
    duration: float
    messages: tuple[int, int] | None = None
    asked: bool = False


class Endpoint:
    """The endpoint of one run. ``provider`` answers every model request; ``deadline`` is the run's
    end (``time.monotonic()``). Use as a context manager: serving on entry, closed on exit.

    ``turn`` is set by the caller before each agent invocation. ``stopped`` (the given event, else
    one of its own) is set once a request ends the run (turn limit, provider failure): ``stop`` and
    ``stop_message`` say why; every later request gets the same error. ``refused``: requests turned away for a missing or wrong key (401);
    ``unserved``: ``METHOD /path`` of each request to a route it does not serve (404), the first few. A request
    with the key to a route it serves is an Exchange whatever its body, one it could not read too (400, 408, 411, 413).
    ``transcript`` holds each request's messages as the agent sent them (the history it sends again kept once)
    and the tools of its first request that offered any; its ``spans`` are those of the requests that went to
    the model. ``tell``, when given (``run --live``), is told each request answered and each call whose result
    the agent sent back (runner.run.events), in the thread that serves the request.
    """

    def __init__(self, provider: Provider, deadline: float | None = None, model: str = "tooltrial",
                 stopped: threading.Event | None = None, tell: Callable[[Event], None] | None = None) -> None:
        self.provider, self.deadline, self.model = provider, deadline, model
        self.token = secrets.token_urlsafe(24)
        self.exchanges: list[Exchange] = []
        self.turn = 0
        self.refused = 0
        self.unserved: list[str] = []
        self.stop: StopReason | None = None
        self.stop_message: str | None = None
        self.stopped = stopped if stopped is not None else threading.Event()
        self._lock = threading.Lock()
        self._server: Server | None = None
        self._status = 400
        self._tell = tell
        self._pending: dict[str, tuple[ToolCall, float]] = {}  # call id -> (ToolCall, when its reply went), untold
        self._answered = 0
        self.transcript = Transcript()
        self._start = 0  # where the last request's messages start in the transcript

    def __enter__(self) -> Self:
        server = Server(("127.0.0.1", 0), Handler)
        server.endpoint = self  # type: ignore[attr-defined]  # what Handler answers with
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True,
                         name="tooltrial-endpoint").start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def port(self) -> int:
        """The TCP port it listens on, on 127.0.0.1."""
        assert self._server is not None, "the endpoint is not started"
        return int(self._server.server_address[1])

    def env(self) -> dict[str, str]:
        """The variables an agent finds the endpoint by: OpenAI's and Anthropic's base URL and key
        variables (the key is this run's token), and ``TOOLTRIAL_MODEL``."""
        base = f"http://127.0.0.1:{self.port}"
        return {"OPENAI_BASE_URL": f"{base}/v1", "OPENAI_API_BASE": f"{base}/v1", "OPENAI_API_KEY": self.token,
                "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": self.token, "TOOLTRIAL_MODEL": self.model}

    def authorized(self, headers: Any) -> bool:
        """Whether a request carries this run's token (``Authorization: Bearer`` or ``x-api-key``)."""
        given = headers.get("x-api-key") or (headers.get("authorization") or "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), self.token.encode())

    def answer(self, api: str, body: bytes) -> tuple[int, Iterable[bytes], bool]:
        """The answer to one model request of format ``api`` (``chat`` or ``messages``): its HTTP status,
        body chunks, and whether they are a stream of server-sent events. Never raises for the agent's input."""
        started, clock = time.time(), time.monotonic()
        request: WireRequest | None = None
        completion: Completion | None = None
        error: str | None = None
        span: tuple[int, int] | None = None
        asked = False
        with self._lock:
            try:
                request = (read_chat if api == "chat" else read_messages)(parse_body(body))
                span = self._carry(request)
                self._tell_results(request)
                if self.stop is not None:
                    raise _Refused(self._status, self.stop_message or self.stop)
                asked = True
                completion = self._complete(request)
            except (ValueError, WireError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
                status, error = 400, f"{_UNREADABLE}{e}"
            except _Refused as e:
                status, error = e.status, str(e)
                asked = asked and self.stop is not StopReason.TURN_LIMIT  # the turn limit refuses before sending
            else:
                status, error = 200, None
                self._tell_reply(completion, time.monotonic() - clock)
            self.exchanges.append(Exchange(self.turn, api, status, request, completion, error, started,
                                           time.monotonic() - clock, span, asked))
            if asked and span is not None:
                self.transcript.spans.append(span)
        if completion is None:
            return status, [_error_body(api, status, error or "")], False
        reply_id = f"{'chatcmpl-' if api == 'chat' else 'msg_'}tooltrial{len(self.exchanges)}"
        model = (request.model or self.model) if request is not None else self.model
        if request is not None and request.stream:
            chunks = (chat_stream(completion, model, reply_id, request.include_usage) if api == "chat"
                      else messages_stream(completion, model, reply_id))
            return 200, chunks, True
        reply = chat_reply(completion, model, reply_id) if api == "chat" else messages_reply(completion, model, reply_id)
        return 200, [json.dumps(reply).encode()], False

    def _carry(self, request: WireRequest) -> tuple[int, int]:
        """Put ``request``'s messages in the transcript; return their span. Where they begin with the messages
        from the last request's start to the end of the transcript (the history sent again), only the new ones
        are added; otherwise all of them, from the end."""
        held, sent = self.transcript.messages, request.sent
        start, kept = self._start, len(self.transcript.messages) - self._start
        if len(sent) < kept or any(held[start + i] != sent[i] for i in range(kept)):
            start, kept = len(held), 0
        held.extend(dict(m) for m in sent[kept:])
        if not self.transcript.tools:
            self.transcript.tools = [dict(t) for t in request.sent_tools]
        self._start = start
        return start, start + len(sent)

    def _complete(self, request: WireRequest) -> Completion:
        """The provider's reply; a turn limit passed or a provider failure ends the run (``stop``) and
        raises _Refused with the status the agent gets."""
        try:
            return self.provider.complete(request.messages, request.tools, self.deadline)
        except TurnLimitExceeded as e:
            raise self._end(StopReason.TURN_LIMIT, f"{e}: the agent's requests past it are refused", 400) from e
        except OutOfTime as e:
            raise self._end(StopReason.TIMEOUT, str(e), 504) from e
        except ProviderError as e:
            status = e.status if e.status is not None and 400 <= e.status < 600 else _STATUS.get(e.kind, 400)
            raise self._end(StopReason(e.kind), str(e), status) from e

    def _tell_reply(self, completion: Completion, latency: float) -> None:
        """RequestDone for a reply; its calls wait for their results."""
        now = time.monotonic()
        self._pending.update((call.id, (call, now)) for call in completion.tool_calls)
        if self._tell is not None:
            usage = completion.usage or Usage()  # none reported: both counts None
            self._tell(RequestDone(self._answered, self.turn, completion.finish_reason, usage.prompt_tokens,
                                   usage.completion_tokens, latency, len(completion.tool_calls)))
        self._answered += 1

    def _tell_results(self, request: WireRequest) -> None:
        """CallDone for each call whose result ``request`` brings back first."""
        for message in request.messages:
            call_id = message.get("tool_call_id")
            told = self._pending.pop(call_id, None) if message.get("role") == "tool" and isinstance(call_id, str) else None
            if told is not None and self._tell is not None:
                call, replied = told
                self._tell(CallDone(call.name, call.arguments, "executed", call_id in request.failed_results,
                                    text_of(message.get("content")), time.monotonic() - replied))

    def _end(self, reason: StopReason, message: str, status: int) -> _Refused:
        """Stop the run for ``reason``; the refusal the agent gets, this time and each later one."""
        self.stop, self.stop_message, self._status = reason, message, status
        self.stopped.set()
        return _Refused(status, message)

    def not_served(self, method: str, path: str) -> None:
        """Note a request to a route this endpoint does not serve (the first UNSERVED_KEPT, each cut to 80 characters)."""
        with self._lock:
            if len(self.unserved) < UNSERVED_KEPT:
                self.unserved.append(f"{method} {path[:80]}")

    def refuse(self) -> None:
        """Count a request turned away for its key."""
        with self._lock:
            self.refused += 1

    def refuse_unread(self, api: str, status: int, why: str) -> bytes:
        """Record a request of format ``api`` answered ``status`` before its body was read (runner.endpoint.handler:
        its length missing, unreadable or too large, its body not all sent in time, or its headers not all sent in time when its
        key came before the stall), ``why`` its reason; return the error body it gets."""
        error = f"{_UNREADABLE}{why}"
        with self._lock:
            self.exchanges.append(Exchange(self.turn, api, status, None, None, error, time.time(), 0.0))
        return _error_body(api, status, error)


def _error_body(api: str, status: int, text: str) -> bytes:
    """The JSON error body of format ``api`` (``chat``: OpenAI's, ``messages``: Anthropic's)."""
    return json.dumps(chat_error(status, "tooltrial", text) if api == "chat" else messages_error(status, text)).encode()


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
