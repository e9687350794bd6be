"""The HTTP exchange shared by the model backends: one JSON POST, bounded, no retries.

The client never follows redirects, ignores proxy variables (so ``HTTP_PROXY`` cannot reroute
a loopback test endpoint or see the API key), and has only a connect timeout: the review
deadline is enforced by the caller with an anyio cancel scope, which interrupts any await.

Failures are raised outside the ``except`` blocks on purpose: a chained httpx2 exception
would keep a reference to the request, and with it the API key header.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx2

from adapters.http_clients import new_http_client
from adapters.llm.errors import malformed, status_failure, transport_failure
from ports.bounded_json import JsonRefused, read_json
from ports.model import ProviderFailure

CONNECT_TIMEOUT_SECONDS = 10.0
MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""Largest successful answer read (decoded); a turn's JSON is far smaller."""
MAX_ERROR_BODY_BYTES = 64 * 1024
"""Of a non-2xx answer only this much is read: enough for the error message."""


def new_provider_client() -> httpx2.AsyncClient:
    """A client for one backend; the backend closes it in ``aclose``."""
    return new_http_client(total=None, connect=CONNECT_TIMEOUT_SECONDS)


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
                    problem = malformed(provider, f"the answer exceeds {limit} bytes.", secret)
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
