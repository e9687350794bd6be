"""The remote review store over HTTP (httpx2): ``whoami``, ``lookup``, ``publish`` and leases.

Bounded and predictable: 2 s to connect, 5 s for a whole exchange (an anyio deadline over
the request and the body), no redirects (a store that redirects is misconfigured, and a
redirect could carry the token elsewhere), no retries, proxy variables ignored, answers
read up to a size limit. Every failure is a ``RemoteFailure`` classified as

- fail-open (the store is unavailable: continue without it): connection errors, timeouts,
  HTTP 5xx;
- fail-closed (the store refused us or answered nonsense: stop): 401/403, TLS failures,
  every other 4xx (410 included), redirects, answers that are not the expected JSON.

The token travels only in the ``Authorization`` header. It is redacted from every message
built from the store's answer, and failures are raised outside ``except`` blocks so no
chained httpx2 exception keeps the request (and its header) alive.
"""

from __future__ import annotations

import dataclasses
import json
import re
import ssl
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

import anyio
import httpx2

from artifactize.adapters.http_clients import new_http_client
from artifactize.adapters.llm.errors import bound_message, clean_text, redact
from artifactize.kernel.bounded_json import JsonRefused, RefusedValue, read_json, read_json_batch
from artifactize.ports.review_store import (
    LOOKUP_KEYS_MAX,
    PUBLISH_BATCH_MAX_ENTRIES,
    RELEASE_LEASE_HEADER,
    FailureMode,
    Principal,
    RemoteFailure,
    RemoteLease,
    RemoteSettings,
    WaitingPage,
)

CONNECT_TIMEOUT_SECONDS = 2.0
TOTAL_TIMEOUT_SECONDS = 5.0
ANSWER_MAX_BYTES = 64 * 1024 * 1024
"""Largest successful answer read; a lookup of 1000 summary records is far smaller."""
ERROR_BODY_MAX_BYTES = 64 * 1024
"""Of an error answer only this much is read: enough for its ``error`` text."""
MESSAGE_MAX_CHARS = 500
"""The store's (or the TLS library's) text is cut to this length in a message."""
NO_TOKEN_MESSAGE = (
    "No remote token; run `artifactize remote login URL` or set ARTIFACTIZE_REMOTE_TOKEN."
)
WHOAMI_ROUTE = "v1/whoami"
LOOKUP_ROUTE = "v1/lookup"
ENTRIES_ROUTE = "v1/entries/"
LEASES_ROUTE = "v1/leases"
WAITING_ROUTE = "v1/waiting"
# A store from before leases answers their routes with these: it serves no leases.
NO_LEASE_STATUSES = (404, 405)
_KEY = re.compile(r"[0-9a-f]{64}")
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,200}")


def new_store_client() -> httpx2.AsyncClient:
    return new_http_client(total=TOTAL_TIMEOUT_SECONDS, connect=CONNECT_TIMEOUT_SECONDS)


class HttpRemoteStore:
    """``RemoteStore`` over HTTP; one connection pool, closed by ``aclose``."""

    def __init__(self, settings: RemoteSettings, client: httpx2.AsyncClient | None = None) -> None:
        self.settings = settings
        self._client = client if client is not None else new_store_client()

    def __repr__(self) -> str:
        return f"HttpRemoteStore(url={self.settings.url!r})"

    async def whoami(self) -> Principal:
        data = await self._exchange("GET", WHOAMI_ROUTE, None)
        name = data.get("principal")
        scopes = data.get("scopes")
        if not (
            isinstance(name, str)
            and name
            and isinstance(scopes, list)
            and all(isinstance(scope, str) for scope in scopes)
        ):
            self._invalid("whoami", "expected {principal, scopes}")
        return Principal(name=name, scopes=tuple(scopes))

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        entries: list[Mapping[str, Any]] = []
        for start in range(0, len(keys), LOOKUP_KEYS_MAX):
            chunk = list(keys[start : start + LOOKUP_KEYS_MAX])
            data = await self._exchange("POST", LOOKUP_ROUTE, {"keys": chunk}, batch=True)
            found = data.get("entries")
            # An entry the bounded reader refused (a RefusedValue, or one inside) is kept
            # for the caller to skip with a warning: one bad record must not cost the batch.
            if not isinstance(found, list) or not all(
                isinstance(e, (dict, RefusedValue)) for e in found
            ):
                self._invalid("lookup", "expected {entries: [object, …]}")
            entries.extend(found)
        return entries

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        if not _KEY.fullmatch(key):
            raise RemoteFailure(
                FailureMode.CLOSED, "A reuse key to publish must be 64 lowercase hex characters."
            )
        created, _released = await self._put(key, record, None)
        return created

    async def publish_releasing(
        self, key: str, record: Mapping[str, Any], holder: str
    ) -> tuple[bool, bool | None]:
        self._check_key(key, "publish")
        return await self._put(key, record, holder)

    async def _put(
        self, key: str, record: Mapping[str, Any], holder: str | None
    ) -> tuple[bool, bool | None]:
        headers = None if holder is None else {RELEASE_LEASE_HEADER: holder}
        data = await self._exchange("PUT", ENTRIES_ROUTE + key, record, extra_headers=headers)
        created, released = data.get("created"), data.get("released")
        if not isinstance(created, bool):
            self._invalid("publish", "expected {created: true|false}")
        if released is not None and not isinstance(released, bool):
            self._invalid("publish", "expected released: true|false")
        return created, released if holder is not None else None

    async def publish_batch(
        self, batch: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[bool] | None:
        if not 0 < len(batch) <= PUBLISH_BATCH_MAX_ENTRIES:
            raise RemoteFailure(
                FailureMode.CLOSED,
                f"A batch publish takes 1 to {PUBLISH_BATCH_MAX_ENTRIES} records, not {len(batch)}.",
            )
        for key, _record in batch:
            self._check_key(key, "publish")
        body = {"entries": [{"key": key, "record": record} for key, record in batch]}
        data = await self._optional_exchange("POST", ENTRIES_ROUTE.rstrip("/"), body)
        if data is None:
            return None
        created = data.get("created")
        if not (
            isinstance(created, list)
            and len(created) == len(batch)
            and all(isinstance(flag, bool) for flag in created)
        ):
            self._invalid("publish", f"expected {{created: [true|false, …]}} of {len(batch)}")
        return created

    async def acquire_lease(self, key: str, holder: str) -> RemoteLease | None:
        self._check_key(key, "lease")
        route = f"{LEASES_ROUTE}/{key}"
        # read as a lookup is read: a refused latest record is skipped, not the lease
        data = await self._optional_exchange("POST", route, {"holder": holder}, batch=True)
        if data is None:
            return None
        lease = _lease(data, "granted")
        if lease is None:
            self._invalid("lease", "expected {granted, key, holder, principal, expiresAt, …}")
        if "latest" not in data:
            return lease
        latest = data["latest"]
        if latest is not None and not isinstance(latest, (dict, RefusedValue)):
            self._invalid("lease", "expected latest: a record or null")
        # a refused record stays in place, as in ``lookup``'s entries, for the mirror to skip
        answered: tuple[Any, ...] = () if latest is None else (latest,)
        return dataclasses.replace(lease, latest=answered)

    async def release_lease(self, key: str, holder: str) -> bool:
        self._check_key(key, "release")
        route = f"{LEASES_ROUTE}/{key}/release"
        data = await self._optional_exchange("POST", route, {"holder": holder})
        if data is None:
            return False
        released = data.get("released")
        if not isinstance(released, bool):
            self._invalid("release", "expected {released: true|false}")
        return released

    async def list_leases(self) -> list[RemoteLease] | None:
        data = await self._optional_exchange("GET", LEASES_ROUTE, None)
        if data is None:
            return None
        found = data.get("leases")
        seconds = data.get("leaseSeconds")
        if not isinstance(found, list):
            self._invalid("leases", "expected {leases: [object, …], leaseSeconds}")
        leases = [
            _lease({**item, "granted": False, "leaseSeconds": seconds}, "granted")
            if isinstance(item, dict)
            else None
            for item in found
        ]
        checked = [lease for lease in leases if lease is not None]
        if len(checked) != len(found):
            self._invalid("leases", "expected {leases: [object, …], leaseSeconds}")
        return checked

    async def announce_waiting(self, request_id: str, announcement: Mapping[str, Any]) -> bool:
        self._check_request_id(request_id)
        data = await self._optional_exchange("PUT", f"{WAITING_ROUTE}/{request_id}", announcement)
        if data is None:
            return False
        if not isinstance(data.get("expiresAt"), str):
            self._invalid("waiting", "expected {expiresAt, waitingSeconds}")
        return True

    async def withdraw_waiting(self, request_id: str) -> bool:
        self._check_request_id(request_id)
        data = await self._optional_exchange("DELETE", f"{WAITING_ROUTE}/{request_id}", None)
        if data is None:
            return False
        withdrawn = data.get("withdrawn")
        if not isinstance(withdrawn, bool):
            self._invalid("waiting", "expected {withdrawn: true|false}")
        return withdrawn

    async def list_waiting(
        self, repository: str | None, after: str | None, limit: int
    ) -> WaitingPage | None:
        if after is not None:
            self._check_request_id(after)
        query = {"limit": str(limit)}
        if repository is not None:
            query["repository"] = repository
        if after is not None:
            query["after"] = after
        route = f"{WAITING_ROUTE}?{urllib.parse.urlencode(query)}"
        data = await self._optional_exchange("GET", route, None)
        if data is None:
            return None
        found, cursor = data.get("requests"), data.get("next")
        if (
            not isinstance(found, list)
            or not all(isinstance(item, dict) for item in found)
            or not (cursor is None or (isinstance(cursor, str) and _REQUEST_ID.fullmatch(cursor)))
        ):
            self._invalid(WAITING_ROUTE, "expected {requests: [object, …], next: ID|null}")
        return WaitingPage(found, cursor)

    def _check_request_id(self, request_id: str) -> None:
        if not _REQUEST_ID.fullmatch(request_id):
            raise RemoteFailure(
                FailureMode.CLOSED, "A request ID must be 1-200 of [A-Za-z0-9._:-]."
            )

    def _check_key(self, key: str, action: str) -> None:
        if not _KEY.fullmatch(key):
            raise RemoteFailure(
                FailureMode.CLOSED, f"A reuse key to {action} must be 64 lowercase hex characters."
            )

    async def _optional_exchange(
        self, method: str, route: str, body: Mapping[str, Any] | None, *, batch: bool = False
    ) -> dict[str, Any] | None:
        """``_exchange``, but None when the store has no such route (an older server: no
        leases, no waiting requests, no batch publish)."""
        try:
            return await self._exchange(method, route, body, batch=batch)
        except RemoteFailure as failure:
            if failure.status in NO_LEASE_STATUSES:
                return None
            raise

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- one exchange ----------------------------------------------------------------------

    async def _exchange(
        self,
        method: str,
        route: str,
        body: Mapping[str, Any] | None,
        *,
        batch: bool = False,
        extra_headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        headers = {"accept": "application/json", **(extra_headers or {})}
        content: bytes | None = None
        if body is not None:
            headers["content-type"] = "application/json"
            content = json.dumps(
                body, ensure_ascii=False, separators=(",", ":"), allow_nan=False
            ).encode("utf-8")
        if self.settings.token is not None:
            headers["authorization"] = f"Bearer {self.settings.token}"
        problem: RemoteFailure | None = None
        status, payload, over = 0, b"", False
        try:
            with anyio.fail_after(TOTAL_TIMEOUT_SECONDS):
                async with self._client.stream(
                    method, self.settings.url + route, content=content, headers=headers
                ) as answer:
                    status = answer.status_code
                    ok = 200 <= status < 300
                    limit = ANSWER_MAX_BYTES if ok else ERROR_BODY_MAX_BYTES
                    payload, over = await _read_at_most(answer, limit)
        except (TimeoutError, httpx2.TimeoutException):
            problem = RemoteFailure(
                FailureMode.OPEN,
                f"The remote store at {self.settings.url} did not answer within "
                f"{TOTAL_TIMEOUT_SECONDS:g} s",
                timed_out=True,
            )
        except httpx2.HTTPError as error:
            problem = self._transport_failure(error)
        if problem is not None:
            raise problem
        return self._answer(route, status, payload, over, batch)

    def _answer(
        self, route: str, status: int, payload: bytes, over: bool, batch: bool = False
    ) -> dict[str, Any]:
        if 200 <= status < 300:
            if over:
                self._invalid(route, f"the answer exceeds {ANSWER_MAX_BYTES} bytes")
            data = _json_object(payload, batch)
            if data is None:
                self._invalid(route, f"HTTP {status} with a body that is not a JSON object")
            return data
        text = self._error_text(payload)
        detail = f": {text}" if text else "."
        if status >= 500:
            reason = f"The remote store failed (HTTP {status})"
            raise RemoteFailure(FailureMode.OPEN, reason + (f": {text}" if text else ""), status)
        if status in (401, 403):
            if self.settings.token is None:
                message = NO_TOKEN_MESSAGE
            elif status == 403 and text:  # a valid token without the scope this route needs
                message = f"The remote store refused the request (HTTP {status}){detail}"
            else:
                message = f"The remote store rejected the token (HTTP {status}){detail}"
            raise RemoteFailure(FailureMode.CLOSED, message, status)
        if 300 <= status < 400:
            raise RemoteFailure(
                FailureMode.CLOSED,
                f"The remote store answered with a redirect (HTTP {status}), which is never "
                "followed; check the store URL.",
                status,
            )
        raise RemoteFailure(
            FailureMode.CLOSED,
            f"The remote store refused the request (HTTP {status}){detail}",
            status,
        )

    def _error_text(self, payload: bytes) -> str:
        """The store's ``error`` text, cleaned of control characters, redacted, bounded."""
        data = _json_object(payload)
        text = data.get("error") if data is not None else None
        return self._safe(text) if isinstance(text, str) else ""

    def _safe(self, text: str) -> str:
        token = self.settings.token or ""
        return bound_message(redact(clean_text(redact(text, token)), token), MESSAGE_MAX_CHARS)

    def _transport_failure(self, error: httpx2.HTTPError) -> RemoteFailure:
        tls = _tls_error(error)
        if tls is not None:
            detail = getattr(tls, "verify_message", None) or tls.reason or str(tls)
            reason = self._safe(str(detail)) or type(tls).__name__
            return RemoteFailure(FailureMode.CLOSED, f"TLS with the remote store failed: {reason}.")
        detail = self._safe(str(error)) or type(error).__name__
        if isinstance(error, httpx2.TransportError):
            return RemoteFailure(
                FailureMode.OPEN,
                f"The remote store at {self.settings.url} is unreachable ({detail})",
            )
        return RemoteFailure(
            FailureMode.CLOSED, f"The remote store's answer could not be read: {detail}."
        )

    def _invalid(self, route: str, problem: str) -> NoReturn:
        raise RemoteFailure(
            FailureMode.CLOSED, f"The remote store gave an invalid answer to {route}: {problem}."
        )


async def _read_at_most(answer: httpx2.Response, limit: int) -> tuple[bytes, bool]:
    """(up to ``limit`` decoded bytes, whether more followed); stops reading past the limit."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in answer.aiter_bytes():
        if len(chunk) > limit - size:
            chunks.append(chunk[: limit - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _lease(data: Mapping[str, Any], granted_field: str) -> RemoteLease | None:
    """The lease in a store answer, or None when a field is missing or of the wrong type."""
    texts = ("key", "holder", "principal", "acquiredAt", "expiresAt")
    granted = data.get(granted_field)
    seconds = data.get("leaseSeconds")
    if not isinstance(granted, bool) or not all(isinstance(data.get(f), str) for f in texts):
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds < 1:
        return None
    return RemoteLease(
        granted,
        data["key"],
        data["holder"],
        data["principal"],
        data["acquiredAt"],
        data["expiresAt"],
        seconds,
    )


def _json_object(payload: bytes, batch: bool = False) -> dict[str, Any] | None:
    """The JSON object in ``payload``; None for anything the bounded reader refuses. With
    ``batch``, refused numbers and objects stay in place as ``RefusedValue``s."""
    try:
        data = read_json_batch(payload) if batch else read_json(payload)
    except JsonRefused:
        return None
    return data if isinstance(data, dict) else None


def _tls_error(error: BaseException) -> ssl.SSLError | None:
    """The ``ssl.SSLError`` behind a transport error, if the failure was TLS."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ssl.SSLError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
