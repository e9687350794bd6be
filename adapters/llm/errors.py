"""How a failed provider turn becomes a ``ProviderFailure``, shared by the model backends.

Two sources of failure: an HTTP answer that is not 2xx (classified by status and by the
provider's error text), and a transport error (connection refused, reset, timeout). Every
message is redacted of the API key, cleaned of control characters and bounded, because it is
stored with the review and printed to terminals.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

import httpx2

from ports.bounded_json import JsonRefused, read_json
from ports.model import BackendUnavailable, FailureKind, ProviderFailure

MAX_PROVIDER_MESSAGE_CHARS = 4096
"""Longest failure message kept, ellipsis included (reviews-and-store.md §6.4)."""

REDACTED = "[REDACTED]"
ELLIPSIS = "…"

TRANSIENT_STATUSES = frozenset({500, 502, 503, 504, 529})
AUTHENTICATION_STATUSES = frozenset({401, 403})
RATE_LIMIT_STATUS = 429
PAYMENT_REQUIRED_STATUS = 402

# A 429 that mentions any of these is an exhausted quota, not a burst limit: retrying is
# pointless and the backend should stop for the rest of the Run.
QUOTA_WORDS = ("quota", "billing", "credit", "insufficient")
# Anthropic answers an empty prepaid balance with a plain 400 ("Your credit balance is too
# low ..."); narrower words keep ordinary 400s ("insufficient context") out of QUOTA.
QUOTA_WORDS_ON_400 = ("quota", "billing", "credit balance")
OVERLOADED_WORD = "overloaded"

_WHITESPACE_RUN = re.compile(r"\s+")


def redact(text: str, secret: str) -> str:
    """``text`` with every occurrence of ``secret`` replaced; an empty secret changes nothing."""
    return text.replace(secret, REDACTED) if secret else text


def clean_text(text: str) -> str:
    """Control and format characters (ANSI escapes, bidi overrides, NUL) become spaces, and
    whitespace runs collapse, so a provider cannot paint the reviewer's terminal."""
    chars = [" " if unicodedata.category(char) in ("Cc", "Cf") else char for char in text]
    return _WHITESPACE_RUN.sub(" ", "".join(chars)).strip()


def bound_message(text: str, limit: int = MAX_PROVIDER_MESSAGE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when anything was cut."""
    if len(text) <= limit:
        return text
    return text[: limit - len(ELLIPSIS)] + ELLIPSIS


def safe_message(text: str, secret: str) -> str:
    """Redact before and after cleaning (so no rewrite of the text can surface the key) and
    bound last, so truncation can never leave a prefix of the key behind."""
    return bound_message(redact(clean_text(redact(text, secret)), secret))


def failure(
    kind: FailureKind,
    message: str,
    secret: str,
    *,
    retry_after: float | None = None,
    usage: Mapping[str, int] | None = None,
) -> ProviderFailure:
    """A ``ProviderFailure`` whose message went through :func:`safe_message`."""
    return ProviderFailure(
        kind, safe_message(message, secret), retry_after=retry_after, usage=usage
    )


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (OpenAI) or ``Retry-After`` in seconds.

    An HTTP-date ``Retry-After`` is ignored: the loop falls back to its own backoff, and the
    adapter need not trust the provider's clock."""
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            value = float(raw.strip())
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return value / scale
    return None


def error_details(body: bytes) -> tuple[str, str]:
    """(the provider's error message, the text searched for QUOTA/overloaded words).

    Both providers answer ``{"error": {"message", "type", "code"?}}``; anything else falls
    back to the body as text so the reader still sees what came back."""
    try:
        data: Any = read_json(body)
    except JsonRefused:
        text = body.decode("utf-8", errors="replace")
        return text, text
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        words = [str(error.get(key) or "") for key in ("type", "code")]
        text = message if isinstance(message, str) else json.dumps(error, ensure_ascii=False)
        return text, " ".join([text, *words])
    if isinstance(error, str):
        return error, error
    text = body.decode("utf-8", errors="replace")
    return text, text


def classify_status(status: int, searchable: str) -> FailureKind:
    """The failure kind of a non-2xx answer (reviews-and-store.md §6.4)."""
    lowered = searchable.lower()
    if status in AUTHENTICATION_STATUSES:
        return FailureKind.AUTHENTICATION
    if status == RATE_LIMIT_STATUS:
        if any(word in lowered for word in QUOTA_WORDS):
            return FailureKind.QUOTA
        return FailureKind.RATE_LIMIT
    if status == PAYMENT_REQUIRED_STATUS:
        return FailureKind.QUOTA
    if status == 400 and any(word in lowered for word in QUOTA_WORDS_ON_400):
        return FailureKind.QUOTA
    if status in TRANSIENT_STATUSES or OVERLOADED_WORD in lowered:
        return FailureKind.TRANSIENT
    return FailureKind.PROVIDER_ERROR


def status_failure(
    provider: str, status: int, headers: Mapping[str, str], body: bytes, secret: str
) -> ProviderFailure:
    """``"<Provider> returned HTTP <status>: <error.message>"`` with its kind and wait."""
    message, searchable = error_details(body)
    kind = classify_status(status, searchable)
    detail = clean_text(message) or "no error message"
    return failure(
        kind,
        f"{provider} returned HTTP {status}: {detail}",
        secret,
        retry_after=parse_retry_after(headers),
    )


def transport_failure(provider: str, error: httpx2.HTTPError, secret: str) -> ProviderFailure:
    """Connection refused/reset, timeouts and broken answers are TRANSIENT; a request we
    could not even form (bad URL scheme, invalid header) is a PROVIDER_ERROR."""
    transient = isinstance(
        error, httpx2.TimeoutException | httpx2.NetworkError | httpx2.RemoteProtocolError
    )
    kind = FailureKind.TRANSIENT if transient else FailureKind.PROVIDER_ERROR
    reason = str(error) or "no detail"
    return failure(kind, f"{provider} request failed ({type(error).__name__}): {reason}", secret)


def malformed(
    provider: str, detail: str, secret: str, usage: Mapping[str, int] | None = None
) -> ProviderFailure:
    """A 2xx answer we cannot read: a PROVIDER_ERROR that keeps any usage already reported."""
    return failure(
        FailureKind.PROVIDER_ERROR,
        f"{provider} response is malformed: {detail}",
        secret,
        usage=usage,
    )


class UnsupportedReasoning(BackendUnavailable, ValueError):
    """A reasoning value the backend does not accept, raised by ``turn`` before connecting.

    It is a ``BackendUnavailable`` (a port type the domain can catch: the profile cannot run
    on this backend at all) and a ``ValueError`` (it is a bad input, not a provider failure).
    Declaration checks should refuse such values earlier; this is the last line."""

    def __init__(self, backend: str, value: str, allowed: tuple[str, ...]) -> None:
        super().__init__(
            f"Reasoning {value!r} is not supported by the {backend} backend; "
            f"use one of: {', '.join(allowed)}."
        )
        self.value = value
        self.allowed = allowed
