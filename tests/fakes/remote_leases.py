"""Lease methods for fake remote stores.

``NoLeases`` is a store from before leases and waiting requests (every lease or waiting
call answers "not served"), for fakes that exercise other routes. ``MemoryLeases`` keeps leases in memory, by the fake's
own clock (``now`` in seconds), for the domain's lease rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from artifactize.ports.ids import ReuseKey
from artifactize.ports.review_store import RemoteLease, WaitingPage


class NoWaiting:
    async def announce_waiting(self, request_id: str, announcement: Mapping[str, Any]) -> bool:
        return False

    async def withdraw_waiting(self, request_id: str) -> bool:
        return False

    async def list_waiting(
        self, repository: str | None, after: str | None, limit: int
    ) -> WaitingPage | None:
        return None


class NoLeases(NoWaiting):
    async def acquire_lease(self, key: str, holder: str) -> RemoteLease | None:
        return None

    async def publish_releasing(
        self, key: str, record: Mapping[str, Any], holder: str
    ) -> tuple[bool, bool | None]:
        """A store from before leases: the record published, nothing said of a lease."""
        created: bool = await self.publish(key, record)  # type: ignore[attr-defined]
        return created, None

    async def release_lease(self, key: str, holder: str) -> bool:
        return False

    async def list_leases(self) -> list[RemoteLease] | None:
        return None


@dataclass
class MemoryLeases(NoWaiting):
    """Leases of ``lease_seconds`` that expire when ``now`` passes them; every call is
    recorded in ``calls`` as (action, key, holder)."""

    lease_seconds: int = 3
    principal: str = "ci"
    now: float = 0.0
    held: dict[str, tuple[str, float]] = field(default_factory=dict)
    calls: list[tuple[str, str, str]] = field(default_factory=list)
    releases_on_publish: bool = False

    def _view(self, key: str, granted: bool) -> RemoteLease:
        holder, expires = self.held[key]
        return RemoteLease(
            granted,
            ReuseKey(key),
            holder,
            self.principal,
            "t0",
            f"t{expires:g}",
            self.lease_seconds,
        )

    async def acquire_lease(self, key: str, holder: str) -> RemoteLease | None:
        self.calls.append(("acquire", key, holder))
        current = self.held.get(key)
        if current is not None and current[0] != holder and current[1] > self.now:
            return self._view(key, False)
        self.held[key] = (holder, self.now + self.lease_seconds)
        return self._view(key, True)

    async def release_lease(self, key: str, holder: str) -> bool:
        self.calls.append(("release", key, holder))
        return await self._released(key, holder)

    async def _released(self, key: str, holder: str) -> bool:
        if self.held.get(key, ("", 0.0))[0] != holder:
            return False
        del self.held[key]
        return True

    async def list_leases(self) -> list[RemoteLease] | None:
        return [self._view(key, False) for key in sorted(self.held)]

    async def publish_releasing(
        self, key: str, record: Mapping[str, Any], holder: str
    ) -> tuple[bool, bool | None]:
        """Published, then the holder's lease released, as the store does in one exchange
        (``releases_on_publish`` False: a store that does not, and says nothing)."""
        created: bool = await self.publish(key, record)  # type: ignore[attr-defined]
        if not self.releases_on_publish:
            return created, None
        self.calls.append(("publish+release", key, holder))
        return created, await self._released(key, holder)
