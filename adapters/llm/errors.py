"""How a failed provider turn becomes a ``ProviderFailure``, shared by the model backends.

Two sources of failure: an HTTP answer that is not 2xx (classified by status and by the
provider's error text), and a transport error (connection refused, reset, timeout). Every
message is redacted of the API key, cleaned of control characters and bounded, because it is
stored with the review and printed to terminals.
"""

from __future__ import annotations

import email.utils
import json
import math
import random
import re
import time
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from artifactize.kernel.bounded_json import JsonRefused, read_json
from artifactize.ports.model import BackendUnavailable, FailureKind, ProviderFailure

MAX_PROVIDER_MESSAGE_CHARS = 4096
"""Longest failure message kept, ellipsis included (reviews-and-store.md §6.4)."""

REDACTED = "[REDACTED]"
ELLIPSIS = "…"

TRANSIENT_STATUSES = frozenset({408, 409, 500, 502, 503, 504, 529})
"""Retried as the SDKs retry them (with 429 and every other 5xx): request timeout, lock
conflict, server errors and Anthropic's overload."""
SERVER_ERROR_STATUSES = range(500, 600)
AUTHENTICATION_STATUSES = frozenset({401, 403})
RATE_LIMIT_STATUS = 429
PAYMENT_REQUIRED_STATUS = 402
SHOULD_RETRY_HEADER = "x-should-retry"
STREAM_STATUS = 0
"""The status of an error event inside a 200 stream: it has none, so its codes decide."""
JITTER_MIN = 0.75
"""The SDKs' backoff jitter: the wait is multiplied by a factor drawn in (0.75, 1]."""

# The provider's own error codes and types decide first (Anthropic ``error.type`` and
# ``error.details.error_code``; OpenAI ``error.code`` and ``error.type``); message words
# only decide when neither is known.
CODE_KINDS: Mapping[str, FailureKind] = {
    # quota and billing
    "insufficient_quota": FailureKind.QUOTA,
    "billing_error": FailureKind.QUOTA,
    "billing_hard_limit_reached": FailureKind.QUOTA,
    "billing_not_active": FailureKind.QUOTA,
    "credit_balance_too_low": FailureKind.QUOTA,
    "insufficient_balance": FailureKind.QUOTA,
    # authentication and permission
    "authentication_error": FailureKind.AUTHENTICATION,
    "permission_error": FailureKind.AUTHENTICATION,
    "invalid_api_key": FailureKind.AUTHENTICATION,
    "invalid_authentication": FailureKind.AUTHENTICATION,
    # rate limits
    "rate_limit_error": FailureKind.RATE_LIMIT,
    "rate_limit_exceeded": FailureKind.RATE_LIMIT,
    # transient
    "overloaded_error": FailureKind.TRANSIENT,
    "api_error": FailureKind.TRANSIENT,
    "server_error": FailureKind.TRANSIENT,
    "timeout_error": FailureKind.TRANSIENT,
    "server_is_overloaded": FailureKind.TRANSIENT,
    # the request itself
    "invalid_request_error": FailureKind.PROVIDER_ERROR,
    "not_found_error": FailureKind.PROVIDER_ERROR,
    "request_too_large": FailureKind.PROVIDER_ERROR,
    "model_not_found": FailureKind.PROVIDER_ERROR,
    "context_length_exceeded": FailureKind.PROVIDER_ERROR,
}
GENERIC_CODES = frozenset({"invalid_request_error", "api_error"})
"""Types so broad (Anthropic's credit-balance 400 is an ``invalid_request_error``) that
they never decide over the status; in a stream's error event, with no status, they do."""

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
    should_retry: bool | None = None,
    streamed: bool = False,
) -> ProviderFailure:
    """A ``ProviderFailure`` whose message went through :func:`safe_message`, with a fresh
    backoff jitter."""
    return ProviderFailure(
        kind,
        safe_message(message, secret),
        retry_after=retry_after,
        usage=usage,
        should_retry=should_retry,
        streamed=streamed,
        backoff_jitter=backoff_jitter(),
    )


def parse_retry_after(
    headers: Mapping[str, str], now: Callable[[], float] = time.time
) -> float | None:
    """Seconds to wait, from ``retry-after-ms`` (OpenAI), else ``Retry-After`` in seconds or
    as an HTTP date (read against ``now``, as the SDKs do; a date past is no wait)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = lowered.get(name)
        if raw is None:
            continue
        try:
            value = float(raw.strip())
        except ValueError:
            value = _http_date_delay(raw, now) if name == "retry-after" else math.nan
        if math.isfinite(value) and value >= 0:
            return value / scale
    return None


def _http_date_delay(raw: str, now: Callable[[], float]) -> float:
    try:
        moment = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError):
        return math.nan
    return max(0.0, moment.timestamp() - now())


def should_retry(headers: Mapping[str, str]) -> bool | None:
    """The provider's ``x-should-retry: true|false``; None when absent or anything else."""
    lowered = {key.lower(): value for key, value in headers.items()}
    value = lowered.get(SHOULD_RETRY_HEADER, "").strip().lower()
    return {"true": True, "false": False}.get(value)


def backoff_jitter() -> float:
    """A factor in (0.75, 1] for the loop's own backoff, as the SDKs draw it."""
    return 1.0 - (1.0 - JITTER_MIN) * random.random()


@dataclass(frozen=True)
class ErrorDetails:
    """What a provider's error body says: its message, its codes (most specific first:
    Anthropic ``error.details.error_code``, then ``error.code``, then ``error.type``) and
    the text searched for words when no code is known."""

    message: str
    codes: tuple[str, ...]
    searchable: str


def error_details(body: bytes) -> ErrorDetails:
    """The details of ``{"error": {"message", "type", "code"?, "details"?}}`` (both
    providers); anything else falls back to the body as text so the reader still sees
    what came back."""
    try:
        data: Any = read_json(body)
    except JsonRefused:
        text = body.decode("utf-8", errors="replace")
        return ErrorDetails(text, (), text)
    return error_object_details(data.get("error") if isinstance(data, dict) else None, body)


def error_object_details(error: Any, body: bytes = b"") -> ErrorDetails:
    if isinstance(error, dict):
        message = error.get("message")
        details = error.get("details")
        nested = details.get("error_code") if isinstance(details, dict) else None
        codes = tuple(
            value.strip().lower()
            for value in (nested, error.get("code"), error.get("type"))
            if isinstance(value, str) and value.strip()
        )
        text = message if isinstance(message, str) else json.dumps(error, ensure_ascii=False)
        return ErrorDetails(text, codes, " ".join([text, *codes]))
    if isinstance(error, str):
        return ErrorDetails(error, (), error)
    text = body.decode("utf-8", errors="replace")
    return ErrorDetails(text, (), text)


def kind_of_codes(codes: tuple[str, ...]) -> FailureKind | None:
    """The kind the most specific known code names; generic types come last."""
    known = [code for code in codes if code in CODE_KINDS]
    specific = [code for code in known if code not in GENERIC_CODES]
    for code in specific or known:
        return CODE_KINDS[code]
    return None


def classify_status(status: int, searchable: str, codes: tuple[str, ...] = ()) -> FailureKind:
    """The failure kind of a non-2xx answer (reviews-and-store.md §6.4): the provider's
    specific error code first, then the status, then the words of the message."""
    lowered = searchable.lower()
    known = [code for code in codes if code in CODE_KINDS and code not in GENERIC_CODES]
    if known:
        return CODE_KINDS[known[0]]
    if status == STREAM_STATUS:
        by_type = kind_of_codes(codes)
        if by_type is not None:
            return by_type
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
    if status in TRANSIENT_STATUSES or status in SERVER_ERROR_STATUSES:
        return FailureKind.TRANSIENT
    if OVERLOADED_WORD in lowered:
        return FailureKind.TRANSIENT
    return FailureKind.PROVIDER_ERROR


def status_failure(
    provider: str, status: int, headers: Mapping[str, str], body: bytes, secret: str
) -> ProviderFailure:
    """``"<Provider> returned HTTP <status>: <error.message>"`` with its kind and wait."""
    details = error_details(body)
    kind = classify_status(status, details.searchable, details.codes)
    detail = clean_text(details.message) or "no error message"
    return failure(
        kind,
        f"{provider} returned HTTP {status}: {detail}",
        secret,
        retry_after=parse_retry_after(headers),
        should_retry=should_retry(headers),
    )


def transport_failure(
    provider: str, error: httpx2.HTTPError, secret: str, *, streamed: bool = False
) -> ProviderFailure:
    """Connection refused/reset, timeouts and broken answers are TRANSIENT; a request we
    could not even form (bad URL scheme, invalid header) is a PROVIDER_ERROR. ``streamed``:
    output had already arrived, so the turn cannot be retried."""
    transient = isinstance(
        error,
        httpx2.TimeoutException
        | httpx2.NetworkError
        | httpx2.RemoteProtocolError
        | httpx2.ProxyError,
    )
    kind = FailureKind.TRANSIENT if transient else FailureKind.PROVIDER_ERROR
    reason = str(error) or "no detail"
    return failure(
        kind,
        f"{provider} request failed ({type(error).__name__}): {reason}",
        secret,
        streamed=streamed,
    )


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
