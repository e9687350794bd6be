"""Remote review store port: a team's shared reuse history, reached over HTTP.

A client looks up the latest record of reuse keys and publishes its own GREEN/RED records.
The domain validates every record it receives (``domain/reviews/remote/records.py``); the
adapter only moves JSON and classifies failures as fail-open (the store is unreachable:
continue without it) or fail-closed (the store refused us: stop with an error).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from artifactize.ports.documents import StoreRecord
from artifactize.ports.ids import ReuseKey

LOOKUP_KEYS_MAX = 1000  # per request; larger lookups are chunked by the client
RELEASE_LEASE_HEADER = "artifactize-release-lease"
"""On ``PUT /v1/entries/{key}``: the holder whose lease of the key to release once stored."""
PUBLISH_BATCH_MAX_ENTRIES = 500  # records per batch publish; larger pushes send several
SHARE_MODES = ("summary", "full")
TOKEN_MAX_CHARS = 4096  # a store token: 1-4096 printable ASCII characters without spaces
# What a token may do: look records up, publish them, publish Human sign-offs.
SCOPE_READ = "read"
SCOPE_PUBLISH = "publish"
SCOPE_HUMAN = "human"
TOKEN_SCOPES = (SCOPE_READ, SCOPE_PUBLISH, SCOPE_HUMAN)


@dataclass(frozen=True)
class Principal:
    """Who a token belongs to, and what it may do (``read``, ``publish``, ``human``)."""

    name: str
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class RemoteSettings:
    """The effective client configuration: from ``<state>/remote.json`` and environment."""

    url: str  # normalized, ends with "/"
    share: str  # summary | full
    token: str | None = field(repr=False)  # a secret: never in a repr, a log or a message
    token_source: str  # env | file | none


class FailureMode(enum.Enum):
    OPEN = "open"  # connection errors, timeouts, HTTP 5xx: warn once, continue locally
    CLOSED = "closed"  # 401/403, TLS failures, other 4xx, invalid answers: exit 2


class RemoteFailure(Exception):
    """``status``: the store's HTTP status, when it answered; ``timed_out``: it did not
    answer within the client's deadline (a request it may still have carried out)."""

    def __init__(
        self,
        mode: FailureMode,
        message: str,
        status: int | None = None,
        *,
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.mode = mode
        self.message = message
        self.status = status
        self.timed_out = timed_out


class RemoteConfigError(Exception):
    """Invalid remote configuration (URL, share mode, token, file); names the source."""


@dataclass(frozen=True)
class RemoteLease:
    """The store's answer about a review lease: ``granted`` to the asker (new or renewed),
    or held by ``principal`` (whose opaque ``holder`` id is another machine's review) until
    ``expires_at``. ``lease_seconds`` is the store's term; holders renew within it."""

    granted: bool
    key: ReuseKey
    holder: str
    principal: str
    acquired_at: str
    expires_at: str
    lease_seconds: int
    latest: tuple[Mapping[str, Any], ...] | None = None
    """With a granted lease, the key's latest record as the store answered it (raw, not yet
    validated): ``()`` for none, ``(record,)``; None when the store did not say (a store
    from before this answer, a token without ``read``), and the holder looks it up."""


@dataclass(frozen=True)
class WaitingPage:
    """One page of the store's announced waiting Human requests: the raw JSON objects (the
    domain validates each, ``waiting_requests.read_listing``) and the cursor of the next
    page (None: this was the last)."""

    requests: list[Mapping[str, Any]]
    next: str | None


class RemoteStore(Protocol):
    settings: RemoteSettings

    async def whoami(self) -> Principal: ...

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        """The store's latest record per found key (raw JSON objects, not yet validated)."""
        ...

    async def publish(self, key: ReuseKey, record: StoreRecord) -> bool:
        """PUT the record; True when created, False when (key, executionId) existed."""
        ...

    async def publish_releasing(
        self, key: ReuseKey, record: StoreRecord, holder: str
    ) -> tuple[bool, bool | None]:
        """``publish``, and then release the lease ``holder`` holds on ``key``, in one
        exchange: (created, released), released None when the store did not say (a store
        from before this: the caller releases the lease itself)."""
        ...

    async def publish_batch(
        self, batch: Sequence[tuple[ReuseKey, StoreRecord]]
    ) -> list[bool] | None:
        """POST up to PUBLISH_BATCH_MAX_ENTRIES records at once, stored all or none; whether
        each was created, in order. None when the store has no batch route (an older
        server): the caller publishes them one by one."""
        ...

    async def acquire_lease(self, key: ReuseKey, holder: str) -> RemoteLease | None:
        """Ask for (or, as its ``holder``, renew) the lease of ``key``; None when the store
        serves no leases (an older server)."""
        ...

    async def release_lease(self, key: ReuseKey, holder: str) -> bool:
        """Give the lease back; whether ``holder`` held it (False from an older server)."""
        ...

    async def list_leases(self) -> list[RemoteLease] | None:
        """The store's live leases (``granted`` False); None from an older server."""
        ...

    async def announce_waiting(self, request_id: str, announcement: Mapping[str, Any]) -> bool:
        """Announce (or renew) a waiting Human request; False when the store serves no
        waiting requests (an older server)."""
        ...

    async def withdraw_waiting(self, request_id: str) -> bool:
        """Withdraw an announcement; whether a live one was there (False from an older
        server)."""
        ...

    async def list_waiting(
        self, repository: str | None, after: str | None, limit: int
    ) -> WaitingPage | None:
        """One page of the live announcements (of ``repository``, or all); None from an
        older server."""
        ...

    async def aclose(self) -> None: ...


class RemoteStores(Protocol):
    def settings(self, state_dir: str) -> RemoteSettings | None:
        """The configured store, or None when none is configured or ARTIFACTIZE_REMOTE=off.
        Raises RemoteConfigError for an invalid configuration."""
        ...

    def open(self, settings: RemoteSettings) -> RemoteStore: ...

    def login(self, state_dir: str, url: str, token: str, share: str) -> RemoteSettings:
        """Store ``token`` (0600, bound to the URL's origin) and write ``remote.json``
        atomically. The caller verifies the token with ``whoami`` first."""
        ...

    def logout(self, state_dir: str) -> bool:
        """Delete the stored token and ``remote.json``; True when anything was removed."""
        ...

    def check_login(self, url: str, share: str) -> str:
        """The normalized store URL of ``remote login URL --share SHARE``; raises
        RemoteConfigError naming the argument and the rule (never echoing the URL)."""
        ...

    def check_token(self, token: str, source: str) -> str:
        """``token`` when it follows the token rule; the error names ``source``, never the
        token."""
        ...

    def switched_off(self) -> str | None:
        """``ARTIFACTIZE_REMOTE=off`` when the environment switches the store off, else None."""
        ...
