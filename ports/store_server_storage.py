"""Review store server port: the storage behind ``artifactize server`` (tokens and records).

The HTTP layer (``entrypoints/store_server.py``) authenticates every request, checks
the record envelope and then calls this port; the CLI (``artifactize server token …``,
``server rm``) calls it directly, possibly while a server process uses the same store.

Tokens are secrets: the port hands a token out exactly once (``IssuedToken``) and keeps
only its SHA-256. ``TokenInfo`` never carries the token or its hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from artifactize.ports.review_store import SCOPE_HUMAN as SCOPE_HUMAN
from artifactize.ports.review_store import SCOPE_PUBLISH as SCOPE_PUBLISH
from artifactize.ports.review_store import SCOPE_READ as SCOPE_READ
from artifactize.ports.review_store import TOKEN_SCOPES as TOKEN_SCOPES
from artifactize.ports.review_store import Principal


class ReviewStoreDbError(Exception):
    """The store cannot be used: the file is not a regular file, has a foreign or newer
    schema, or the database failed. The message names the file or the URL (never its
    password)."""


class TokenRequestError(Exception):
    """A token command that cannot be carried out: invalid name or scopes, a name already
    used, or an unknown name. The message names the input and the rule."""


@dataclass(frozen=True)
class IssuedToken:
    """A new token; ``token`` is shown once and never stored."""

    name: str
    scopes: tuple[str, ...]
    token: str
    created_at: str


@dataclass(frozen=True)
class TokenInfo:
    """What ``token list`` shows: never the token, never its hash."""

    name: str
    scopes: tuple[str, ...]
    created_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class Revocation:
    """The outcome of ``token revoke``; ``revoked_at`` is the first revocation's time."""

    name: str
    revoked_at: str
    purged_entries: int


@dataclass(frozen=True)
class StoreEntry:
    """One published record: indexed columns plus the record's JSON text (``data``).

    ``completed_at`` is the record's ``completedAt`` in the fixed-width stored form, so text
    order is time order."""

    key: str
    execution_id: str
    publisher: str
    completed_at: str
    data: str


@dataclass(frozen=True)
class Lease:
    """A client's claim to review ``key`` until ``expires_at`` (the store's clock).

    ``holder`` is the client's opaque id for one review; ``principal`` its token's name."""

    key: str
    holder: str
    principal: str
    acquired_at: str
    expires_at: str


@dataclass(frozen=True)
class LeaseAnswer:
    """The outcome of asking for a lease: ``granted`` (``lease`` is the caller's, new or
    renewed), or not (``lease`` is the live one someone else holds)."""

    granted: bool
    lease: Lease


@dataclass(frozen=True)
class WaitingEntry:
    """A waiting Human request a client announced: the indexed columns plus the
    announcement's JSON text (``data``, as sent). ``created_at`` is in the stored form;
    ``expires_at`` (the store's clock) is set by the store."""

    request_id: str
    repository: str
    publisher: str
    created_at: str
    data: str
    expires_at: str = ""


class ReviewStoreDb(Protocol):
    def add_token(self, name: str, scopes: Sequence[str]) -> IssuedToken:
        """Create a token. Raises TokenRequestError for an invalid name or scopes, or a name
        that was ever used (revoked names too)."""
        ...

    def list_tokens(self) -> list[TokenInfo]:
        """Every token, revoked ones included, by name."""
        ...

    def revoke_token(self, name: str, *, purge: bool) -> Revocation:
        """Revoke ``name`` at once (repeatable: the first ``revoked_at`` stays); with
        ``purge``, delete every record it published. TokenRequestError if unknown."""
        ...

    def authenticate(self, token: str) -> Principal | None:
        """The owner of a live token; None for an unknown or revoked one."""
        ...

    def lookup(self, keys: Sequence[str]) -> list[str]:
        """The latest record (by ``completed_at``, then storage order) of each found key,
        as JSON text; marks each returned record as just used."""
        ...

    def put(self, entry: StoreEntry) -> bool:
        """Store ``entry``; False (and no change) when (key, execution_id) exists. May
        evict least recently used records, never the one just stored."""
        ...

    def put_many(self, batch: Sequence[StoreEntry]) -> list[bool]:
        """``put`` of each entry in order, in one transaction (all or nothing); whether each
        was created. A later entry may evict an earlier one, as a later ``put`` would."""
        ...

    def remove(self, key: str) -> bool:
        """Delete every record of ``key``; whether there was any."""
        ...

    def acquire_lease(self, key: str, holder: str, principal: str, seconds: int) -> LeaseAnswer:
        """Take (or, for the same ``holder``, renew) the lease of ``key`` for ``seconds``,
        unless another holder's lease is still live; one transaction, first asker wins."""
        ...

    def release_lease(self, key: str, holder: str) -> bool:
        """Drop ``holder``'s lease of ``key``; whether it held one."""
        ...

    def list_leases(self) -> list[Lease]:
        """The live leases, by key."""
        ...

    def announce_waiting(self, entry: WaitingEntry, seconds: int) -> str:
        """Store (or renew, replacing the document and publisher) the announcement of
        ``entry.request_id`` for ``seconds``; returns its ``expires_at``. Expired
        announcements are deleted in the same transaction."""
        ...

    def withdraw_waiting(self, request_id: str) -> bool:
        """Delete the announcement of ``request_id``; whether there was a live one."""
        ...

    def list_waiting(
        self, repository: str | None, after: str | None, limit: int
    ) -> list[WaitingEntry]:
        """At most ``limit`` live announcements (of ``repository``, or of every one when
        None) whose request ID sorts after ``after``, in byte order of request ID."""
        ...

    def ping(self) -> None:
        """Raise ReviewStoreDbError unless the database answers (the health check)."""
        ...

    def close(self) -> None: ...
