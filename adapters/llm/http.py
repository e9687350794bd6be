"""The HTTP exchange shared by the model backends: one JSON POST per turn, streamed as
server-sent events, bounded, no retries (the Agent loop retries).

The client never follows redirects and never reads proxy variables itself: the backend
chooses the proxy (``proxies.proxy_for``; never for loopback, so ``HTTP_PROXY`` cannot see a
local endpoint's traffic). A turn has a connect timeout and, while streaming, an idle-read
timeout; the review deadline is enforced by the caller with an anyio cancel scope, which
interrupts any await.

Failures are raised outside the ``except`` blocks on purpose: a chained httpx2 exception
would keep a reference to the request, and with it the API key header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

import httpx2

from artifactize.adapters.http_clients import new_http_client
from artifactize.adapters.llm.errors import failure, malformed, status_failure, transport_failure
from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.model import FailureKind, ProviderFailure

CONNECT_TIMEOUT_SECONDS = 10.0
MIB = 1024 * 1024
MAX_RESPONSE_BYTES = 32 * MIB
"""Largest successful answer read (decoded); a turn's JSON is far smaller."""
MAX_ERROR_BODY_BYTES = 64 * 1024
"""Of a non-2xx answer only this much is read: enough for the error message."""


def new_provider_client(proxy: str | None = None) -> httpx2.AsyncClient:
    """A client for one backend, through ``proxy`` when one is in effect; the backend
    closes it in ``aclose``."""
    return new_http_client(total=None, connect=CONNECT_TIMEOUT_SECONDS, proxy=proxy)


def size_text(limit: int) -> str:
    """A limit as messages name it: ``32 MiB`` when whole mebibytes, else in bytes."""
    return f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"


def encode_json(body: Mapping[str, Any]) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities are refused rather than sent as invalid JSON."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


async def _read_at_most(response: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """(up to ``limit`` decoded bytes, whether more followed). Stops reading past the limit."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


async def post_json(
    client: httpx2.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    *,
    provider: str,
    secret: str,
    limit: int = MAX_RESPONSE_BYTES,
) -> dict[str, Any]:
    """POST ``body`` and return the JSON object answered with a 2xx status.

    Raises ``ProviderFailure`` for transport errors, non-2xx answers, answers over ``limit``
    bytes and answers that are not a JSON object. ``secret`` is redacted from every message.
    """
    content = encode_json(body)
    request_headers = {"content-type": "application/json", "accept": "application/json"}
    request_headers.update(headers)
    problem: ProviderFailure | None = None
    status = 0
    payload = b""
    try:
        async with client.stream("POST", url, content=content, headers=request_headers) as answer:
            status = answer.status_code
            if 200 <= status < 300:
                payload, over = await _read_at_most(answer, limit)
                if over:
                    problem = malformed(provider, f"the answer exceeds {size_text(limit)}.", secret)
            else:
                error_body, _ = await _read_at_most(answer, MAX_ERROR_BODY_BYTES)
                problem = status_failure(provider, status, answer.headers, error_body, secret)
    except httpx2.HTTPError as error:
        problem = transport_failure(provider, error, secret)
    if problem is not None:
        raise problem
    return _json_object(payload, provider, secret)


def _json_object(payload: bytes, provider: str, secret: str) -> dict[str, Any]:
    problem: ProviderFailure | None = None
    data: Any = None
    try:
        data = read_json(payload)
    except JsonRefused as exc:
        detail = "" if exc.syntax else f" we accept: {exc.reason}"
        problem = malformed(provider, f"the answer is not JSON{detail}.", secret)
    if problem is not None:
        raise problem
    if not isinstance(data, dict):
        raise malformed(provider, "the answer is not a JSON object.", secret)
    return data


STREAM_IDLE_TIMEOUT_SECONDS = 120.0
"""Longest silence between two reads of a streamed answer; the review deadline still bounds
the whole turn. A provider thinking for long sends keep-alive events (Anthropic ``ping``)."""
MAX_STREAM_EVENT_BYTES = 8 * MIB
"""Largest single server-sent event; one event carries at most one output item."""
MAX_STREAM_BYTES = MAX_RESPONSE_BYTES
"""Largest streamed answer: the data of all its events together (UTF-8), the same bound as
an answer sent as one JSON object. Without it a stream of events each under
``MAX_STREAM_EVENT_BYTES`` could grow an answer (and the conversation saved and sent back
with it) without end; with it a turn holds at most a few times this much in memory."""
EVENT_STREAM = "text/event-stream"
DONE_DATA = "[DONE]"  # Chat Completions' end marker


class StreamAssembler(Protocol):
    """Builds a backend's final answer from its server-sent events.

    ``feed`` takes each event's name and parsed JSON data (may raise ``ProviderFailure``
    for an error event); ``finish`` returns the answer as the non-streaming API would have
    sent it, or raises ``IncompleteStream`` when the final event never came. ``started``:
    some output arrived, so the turn can no longer be retried."""

    started: bool

    def feed(self, event: str, data: Any) -> None: ...

    def finish(self) -> dict[str, Any]: ...


class IncompleteStream(Exception):
    """Raised by ``StreamAssembler.finish`` when the stream ended before its final event."""


async def post_turn(
    client: httpx2.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    assembler: StreamAssembler,
    *,
    provider: str,
    secret: str,
    idle_timeout: float = STREAM_IDLE_TIMEOUT_SECONDS,
    max_event_bytes: int = MAX_STREAM_EVENT_BYTES,
    max_stream_bytes: int = MAX_STREAM_BYTES,
) -> dict[str, Any]:
    """POST a streaming turn and return the final answer as one JSON object.

    An answer of ``text/event-stream`` goes through ``assembler``; a server that ignores
    ``stream`` and answers one JSON object is read as ``post_json`` reads it. Raises
    ``ProviderFailure`` as ``post_json`` does, and TRANSIENT (not to be retried once output
    arrived) when the stream stalls past ``idle_timeout`` or ends before its final event.
    Each event is read by the bounded JSON reader; an event over ``max_event_bytes``, a
    stream over ``max_stream_bytes`` or an event the reader refuses is a PROVIDER_ERROR."""
    content = encode_json(body)
    request_headers = {
        "content-type": "application/json",
        "accept": f"{EVENT_STREAM}, application/json",
    }
    request_headers.update(headers)
    timeout = httpx2.Timeout(None, connect=CONNECT_TIMEOUT_SECONDS, read=idle_timeout)
    problem: ProviderFailure | None = None
    payload: bytes | None = None
    result: dict[str, Any] | None = None
    try:
        async with client.stream(
            "POST", url, content=content, headers=request_headers, timeout=timeout
        ) as answer:
            status = answer.status_code
            kind = answer.headers.get("content-type", "").partition(";")[0].strip().lower()
            if not 200 <= status < 300:
                error_body, _ = await _read_at_most(answer, MAX_ERROR_BODY_BYTES)
                problem = status_failure(provider, status, answer.headers, error_body, secret)
            elif kind == EVENT_STREAM:
                limits = (max_event_bytes, max_stream_bytes)
                result = await _read_events(answer, assembler, provider, secret, limits)
            else:
                payload, over = await _read_at_most(answer, MAX_RESPONSE_BYTES)
                if over:
                    problem = malformed(
                        provider, f"the answer exceeds {size_text(MAX_RESPONSE_BYTES)}.", secret
                    )
    except ProviderFailure as failed:
        problem = failed
    except httpx2.HTTPError as error:
        problem = transport_failure(provider, error, secret, streamed=assembler.started)
    if problem is not None:
        raise problem
    if result is not None:
        return result
    return _json_object(payload or b"", provider, secret)


async def _read_events(
    answer: httpx2.Response,
    assembler: StreamAssembler,
    provider: str,
    secret: str,
    limits: tuple[int, int],
) -> dict[str, Any]:
    """Feed each event of ``answer`` to ``assembler`` within ``limits`` (bytes per event, in
    total) and return its answer; the stream is left unread past the first refusal."""
    max_event_bytes, max_stream_bytes = limits
    problem: ProviderFailure | None = None
    total = 0
    try:
        async for event in httpx2.EventSource(answer, max_event_size=max_event_bytes):
            total += _utf8_size(event.data)
            if total > max_stream_bytes:
                detail = f"the streamed answer exceeds {size_text(max_stream_bytes)}."
                problem = malformed(provider, detail, secret)
                break
            if event.data.strip() == DONE_DATA:
                assembler.feed(DONE_DATA, None)
                break
            if not event.data:
                continue  # a keep-alive
            problem = _feed(assembler, event, provider, secret)
            if problem is not None:
                break
    except httpx2.SSEError:  # only an event past max_event_size: the content type was checked
        detail = f"a stream event exceeds {size_text(max_event_bytes)}."
        problem = malformed(provider, detail, secret)
    if problem is not None:
        problem.streamed = assembler.started
        raise problem
    try:
        return assembler.finish()
    except IncompleteStream as error:
        problem = failure(
            FailureKind.TRANSIENT,
            f"{provider} stream ended before its final event ({error}).",
            secret,
            streamed=True,
        )
    raise problem


def _feed(
    assembler: StreamAssembler, event: httpx2.ServerSentEvent, provider: str, secret: str
) -> ProviderFailure | None:
    """Read one event with the bounded reader (depth, NaN, duplicate keys) and feed it; the
    refusal, if any, as a failure to raise."""
    try:
        data = read_json(event.data)
    except JsonRefused as exc:
        detail = "" if exc.syntax else f" we accept: {exc.reason}"
        return malformed(provider, f"stream event {event.event!r} is not JSON{detail}.", secret)
    assembler.feed(event.event, data)
    return None


def _utf8_size(text: str) -> int:
    """The UTF-8 size of ``text``, without encoding it when it is ASCII (most events)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))
