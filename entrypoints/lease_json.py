"""A review lease as JSON: the team store's wire answer and ``remote status --json`` show
the same five fields, each in the key order its readers have always seen (the two orders
differ, and both stay byte-compatible)."""

from __future__ import annotations

from artifactize.ports.review_store import RemoteLease
from artifactize.ports.store_server_storage import Lease

# Each JSON key and the lease attribute it shows.
_ATTRIBUTES = {
    "key": "key",
    "principal": "principal",
    "holder": "holder",
    "acquiredAt": "acquired_at",
    "expiresAt": "expires_at",
}
# The store server's order (its HTTP answers) and the client's (``remote status --json``).
SERVER_ORDER = ("key", "holder", "principal", "acquiredAt", "expiresAt")
CLIENT_ORDER = ("key", "principal", "holder", "acquiredAt", "expiresAt")


def lease_json(lease: Lease | RemoteLease, order: tuple[str, ...]) -> dict[str, str]:
    """The lease's fields under their JSON keys, in ``order``."""
    return {name: getattr(lease, _ATTRIBUTES[name]) for name in order}
