"""``RemoteSync.announce_waiting``: what ``verify --wait`` tells the team store about the
Human requests it waits for: announced once, renewed only every ANNOUNCE_INTERVAL_SECONDS
or when the claim changed, never for a follower, withdrawn when settled and when the wait
ends, and nothing at all without the ``publish`` scope or from a store without the routes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from artifactize.domain.reviews.human.asking import FOLLOWING_HUMAN
from artifactize.domain.reviews.remote.sync import ANNOUNCE_INTERVAL_SECONDS, RemoteSync
from artifactize.kernel.document_codec import request_from_json
from artifactize.ports.documents import Request
from artifactize.ports.ids import RequestId
from artifactize.ports.review_store import Principal, RemoteSettings
from artifactize.ports.state import HumanClaim, StateStore
from artifactize.ports.statuses import RequestStatus
from tests.fakes.remote_leases import NoLeases

pytestmark = pytest.mark.anyio
SETTINGS = RemoteSettings("https://store.example/", "summary", "tok", "env")


@dataclass
class Saved:
    status: RequestStatus
    data: Request


@dataclass
class StubState:
    requests: dict[str, Saved] = field(default_factory=dict)
    claims: dict[str, HumanClaim] = field(default_factory=dict)

    def get_request(self, request_id: str) -> Saved | None:
        return self.requests.get(request_id)

    def human_claim(self, request_id: str) -> HumanClaim | None:
        return self.claims.get(request_id)


def waiting(request_id: str, **extra: Any) -> Saved:
    data = {
        "id": request_id,
        "runId": request_id.rsplit("-", 1)[0],
        "evalId": "doc/signoff",
        "key": None,
        "title": "Signed off",
        "createdAt": "2026-05-01T10:00:00.000000000Z",
        "source": None,
        **extra,
    }
    return Saved(RequestStatus.WAITING_HUMAN, request_from_json(data))


class AnnouncingStore(NoLeases):
    settings = SETTINGS

    def __init__(self, scopes: Sequence[str] = ("read", "publish"), served: bool = True) -> None:
        self.principal = Principal("ci", tuple(scopes))
        self.served = served
        self.calls: list[tuple[str, str]] = []
        self.bodies: list[Mapping[str, Any]] = []

    async def whoami(self) -> Principal:
        return self.principal

    async def announce_waiting(self, request_id: str, announcement: Mapping[str, Any]) -> bool:
        self.calls.append(("announce", request_id))
        self.bodies.append(announcement)
        return self.served

    async def withdraw_waiting(self, request_id: str) -> bool:
        self.calls.append(("withdraw", request_id))
        return True

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        return []

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        raise AssertionError("nothing is published here")

    async def publish_batch(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        raise AssertionError("nothing is published here")

    async def aclose(self) -> None:
        pass


def warn(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


async def announce(sync: RemoteSync, state: StubState, ids: list[str], now: float) -> None:
    await sync.announce_waiting(
        ids, cast(StateStore, state), now, repository="shop", machine="bob@build-7"
    )


async def test_announced_once_renewed_on_time_or_on_a_new_claim_withdrawn_when_settled() -> None:
    store = AnnouncingStore()
    sync = RemoteSync(store, warn)
    state = StubState({"r-1": waiting("r-1"), "r-2": waiting("r-2", blockedReason=FOLLOWING_HUMAN)})
    await announce(sync, state, ["r-1", "r-2"], 0.0)
    await announce(sync, state, ["r-1", "r-2"], ANNOUNCE_INTERVAL_SECONDS - 0.1)
    assert store.calls == [("announce", "r-1")]  # a follower is not announced
    assert store.bodies[0]["machine"] == "bob@build-7" and store.bodies[0]["claim"] is None
    await announce(sync, state, ["r-1"], ANNOUNCE_INTERVAL_SECONDS)
    assert store.calls[-1] == ("announce", "r-1") and len(store.calls) == 2
    state.claims["r-1"] = HumanClaim(RequestId("r-1"), "carol", "2026-05-01T10:01:00.000000000Z")
    await announce(sync, state, ["r-1"], ANNOUNCE_INTERVAL_SECONDS + 0.2)
    assert len(store.calls) == 3 and store.bodies[-1]["claim"]["reviewer"] == "carol"
    state.requests["r-1"] = Saved(RequestStatus.GREEN, state.requests["r-1"].data)
    await announce(sync, state, ["r-1"], ANNOUNCE_INTERVAL_SECONDS + 0.4)
    assert store.calls[-1] == ("withdraw", "r-1") and sync.announcements == 3
    await sync.withdraw_waiting()
    assert len(store.calls) == 4  # nothing left to withdraw


async def test_the_end_of_the_wait_withdraws_every_announcement() -> None:
    store = AnnouncingStore()
    sync = RemoteSync(store, warn)
    state = StubState({"r-1": waiting("r-1"), "r-2": waiting("r-2")})
    await announce(sync, state, ["r-1", "r-2"], 0.0)
    await sync.withdraw_waiting()
    assert store.calls[2:] == [("withdraw", "r-1"), ("withdraw", "r-2")]


@pytest.mark.parametrize(
    "store", [AnnouncingStore(scopes=("read",)), AnnouncingStore(served=False)], ids=["read", "old"]
)
async def test_nothing_without_publish_and_once_from_an_older_store(store: AnnouncingStore) -> None:
    sync = RemoteSync(store, warn)
    state = StubState({"r-1": waiting("r-1"), "r-2": waiting("r-2")})
    await announce(sync, state, ["r-1", "r-2"], 0.0)
    await announce(sync, state, ["r-1", "r-2"], 100.0)
    assert len(store.calls) == (0 if store.principal.scopes == ("read",) else 1)
