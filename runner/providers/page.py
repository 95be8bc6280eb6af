"""An HTML page where a model's reply should be: what a proxy or gateway in front of the provider
sends with a success status (``200 text/html <html><title>502 Bad Gateway</title>...``).

The OpenAI client reads such a stream as one with no event (an empty reply) and such a body as
text litellm cannot use (an error without the status or the content type). So a page is recognised
from the HTTP response itself: a stream's before its first chunk is read (the ``response`` of the
wrapper's ``completion_stream``, or, where litellm opens the stream on the first read, as it opens), a body's from the failed request's traceback, the only place litellm
keeps it. It becomes ``NotAReply``, an ``openai.APIError`` that runner.providers.errors classifies as
``malformed_response`` with the page's own status and that runner.providers.retry retries.

Imported only where a live request is made (runner.providers.litellm), as it imports the OpenAI client.
An HTTP response is httpx's (the OpenAI client's and litellm's), known by its class, as in runner.providers.errors.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from typing import Any

import openai

from runner.providers.errors import causes, response_text

PAGE_TYPES = frozenset({"text/html", "application/xhtml+xml"})
READ_LIMIT = 65536  # bytes of a streamed page read for its title
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_TITLE_LIMIT = 200  # characters of a page's title kept in the message


class NotAReply(openai.APIError):
    """A page sent where a reply should be. ``status_code`` is its HTTP status (200...), ``content_type``
    its media type (``text/html``), ``title`` its ``<title>`` (else ``no title``); the message reads
    ``HTTP 200 text/html, not a reply: 502 Bad Gateway``."""

    def __init__(self, response: Any, body: str) -> None:
        self.status_code = response.status_code
        self.content_type = media_type(response)
        self.title = title_of(body)
        super().__init__(f"HTTP {self.status_code} {self.content_type}, not a reply: {self.title}",
                         response.request, body=None)


def media_type(response: Any) -> str:
    """The response's ``Content-Type`` without its parameters, lower-cased (``""`` when none)."""
    return response.headers.get("content-type", "").split(";")[0].strip().lower()


def is_page(response: Any) -> bool:
    """Whether ``response`` is an ``httpx.Response`` holding an HTML page sent with a success status (2xx)."""
    return _is_response(response) and response.is_success and media_type(response) in PAGE_TYPES


def _is_response(value: Any) -> bool:
    return type(value).__name__ == "Response" and type(value).__module__.startswith("httpx")


def title_of(body: str) -> str:
    """The text of the page's ``<title>``, entities decoded and blanks joined, at most _TITLE_LIMIT
    characters; ``no title`` when it has none."""
    found = _TITLE.search(body)
    words = " ".join(html.unescape(found.group(1)).split()) if found else ""
    return words[:_TITLE_LIMIT] or "no title"


def check_stream(wrapper: Any) -> None:
    """Raise NotAReply when the HTTP response under ``wrapper`` (litellm's CustomStreamWrapper, not yet
    read) is a page: at most READ_LIMIT bytes of it are read for its title and the response is closed.

    The response is the ``httpx.Response`` the wrapper's ``completion_stream`` holds (the OpenAI client's
    ``Stream.response``, litellm's Anthropic, Ollama and Gemini iterators'). litellm's Gemini route opens
    its stream on the first read (the wrapper's ``make_call``): there the same check is made as it opens,
    and the NotAReply raised inside litellm's read is found again by ``page_under``."""
    stream = getattr(wrapper, "completion_stream", None)
    make_call = getattr(wrapper, "make_call", None)
    if stream is None and callable(make_call):
        def opened(*args: Any, **kwargs: Any) -> Any:
            _refuse_page(made := make_call(*args, **kwargs))
            return made

        wrapper.make_call = opened
    else:
        _refuse_page(stream)


def _refuse_page(stream: Any) -> None:
    """Raise NotAReply when ``stream`` (a stream object of the OpenAI client or litellm) holds a page."""
    held = vars(stream).values() if hasattr(stream, "__dict__") else ()
    response = next((value for value in held if is_page(value)), None)
    if response is None:
        return
    head = b""
    try:
        for data in response.iter_bytes():
            head += data
            if len(head) >= READ_LIMIT:
                break
    finally:
        response.close()
    raise NotAReply(response, head[:READ_LIMIT].decode(response.encoding or "utf-8", errors="replace"))


def page_under(error: BaseException) -> NotAReply | None:
    """The NotAReply for ``error``, what litellm raised: one among its causes (raised by ``check_stream``
    inside litellm's first read of a stream, which litellm wrapped), else, for a body it could not read,
    one made when the response it read is a page; else None. The response is found among the local values
    of the frames the error and its causes passed through (an ``httpx.Response``, or the OpenAI client's
    response wrapper holding one as ``http_response``)."""
    raised = next((one for one in causes(error) if isinstance(one, NotAReply)), None)
    if raised is not None:
        return raised
    for response in _responses(error):
        if is_page(response):
            return NotAReply(response, response_text(response))
    return None


def _responses(error: BaseException) -> Iterator[Any]:
    for one in causes(error):
        trace = one.__traceback__
        while trace is not None:
            for value in trace.tb_frame.f_locals.values():
                inner = vars(value).get("http_response") if hasattr(value, "__dict__") else None
                for found in (value, inner):
                    if _is_response(found):
                        yield found
            trace = trace.tb_next
