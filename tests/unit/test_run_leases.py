"""Review leases in ``verify`` (domain, fake store): the holder reviews and releases, a
waiter reuses the holder's verdict as a join, a lapsed lease is taken over, and a store that
does not answer (or serves no leases) means a local review."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest

from artifactize.domain.reviews.remote.records import build_record
from artifactize.domain.reviews.remote.sync import RemoteSync
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.leases import LEASE_POLL_SECONDS, WAITING_FOR_LEASE
from artifactize.kernel.document_codec import execution_json
from artifactize.ports.review_store import FailureMode, Principal, RemoteFailure, RemoteSettings
from tests.fakes.remote_leases import MemoryLeases, NoLeases
from tests.support.documents import opaque
from tests.unit.test_verify_gates import World

pytestmark = pytest.mark.anyio
SETTINGS = RemoteSettings("https://store.example/", "summary", "tok", "env")
EVAL = "app/check"  # a runtime eval; its gate is ignored so it runs at once


class LeasingStore(MemoryLeases):
    """A store with leases, records a teammate may publish, and our publications."""

    def __init__(self, scopes: Sequence[str] = ("read", "publish")) -> None:
        super().__init__(lease_seconds=3)
        self.settings = SETTINGS
        self.scopes = tuple(scopes)
        self.records: list[Mapping[str, Any]] = []
        self.published: list[str] = []
        self.failure: RemoteFailure | None = None
        self.lookups: list[list[str]] = []
        self.answers_latest = False  # True: a grant carries the key's latest record

    async def whoami(self) -> Principal:
        return Principal("ci", self.scopes)

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        self.lookups.append(list(keys))
        return [r for r in self.records if r["key"] in keys]

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        self.published.append(key)
        return True

    async def acquire_lease(self, key: str, holder: str) -> Any:
        if self.failure is not None:
            raise self.failure
        lease = await super().acquire_lease(key, holder)
        if lease is not None and lease.granted and self.answers_latest:
            latest = tuple(r for r in self.records if r["key"] == key)
            return dataclasses.replace(lease, latest=latest)
        return lease

    async def aclose(self) -> None:
        pass


class NoLeaseStore(NoLeases, LeasingStore):
    pass


class LeaseWorld(World):
    def __init__(self, store: Any) -> None:
        super().__init__()
        self.warnings: list[str] = []
        self.remote = RemoteSync(store, self.warnings.append)

    def ports(self) -> VerifyPorts:
        return dataclasses.replace(super().ports(), remote=self.remote)

    async def sleep(self, seconds: float) -> None:
        """The fake sleep, but yielding like a real one, so the renewing task and the
        review take turns."""
        await anyio.lowlevel.checkpoint()
        await super().sleep(seconds)

    async def check(self) -> dict[str, Any]:
        requests = await self.verify(EVAL, ignore_gates=True)
        check: dict[str, Any] = requests[EVAL]
        return check


async def teammate_record() -> dict[str, Any]:
    """The summary record of ``app/check`` as a teammate's own Run produced it."""
    teammate = World()
    requests = await teammate.verify(EVAL, ignore_gates=True)
    execution = teammate.state.executions[requests[EVAL]["executionId"]]
    record: dict[str, Any] = opaque(
        build_record(
            cast(Any, execution_json(execution.data)), execution.data.kinds or {}, "summary"
        )
    )
    return record


async def test_the_holder_reviews_publishes_and_releases() -> None:
    store = LeasingStore()
    world = LeaseWorld(store)
    check = await world.check()
    assert check["status"] == "GREEN" and len(world.runner.specs) == 1
    key = check["key"]
    assert store.published == [key]
    holder = check["executionId"]
    assert store.calls[0] == ("acquire", key, holder)
    assert store.calls[-1] == ("release", key, holder)
    assert {call[2] for call in store.calls} == {holder}
    assert store.held == {} and world.remote.leases_taken == 1


async def test_a_store_that_releases_with_the_verdict_is_not_asked_to_release_again() -> None:
    store = LeasingStore()
    store.releases_on_publish = True
    world = LeaseWorld(store)
    check = await world.check()
    key, holder = check["key"], check["executionId"]
    assert store.published == [key] and store.held == {}
    assert [call[0] for call in store.calls] == ["acquire", "publish+release"]
    assert store.calls[-1] == ("publish+release", key, holder)


async def test_a_grant_that_answers_the_latest_record_saves_the_lookup() -> None:
    older = LeasingStore()  # a store from before the answer: the holder asks after the grant
    await LeaseWorld(older).check()
    store = LeasingStore()
    store.answers_latest = True
    world = LeaseWorld(store)
    check = await world.check()
    assert check["status"] == "GREEN" and len(world.runner.specs) == 1
    assert len(older.lookups) == 2 and len(store.lookups) == 1  # the Run's first mirror only


async def test_a_record_answered_with_the_grant_is_reused_not_reviewed_again() -> None:
    record = await teammate_record()
    store = LeasingStore()
    store.answers_latest = True
    store.records.append(record)
    world = LeaseWorld(store)

    async def published_after_the_runs_mirror(keys: Sequence[str]) -> list[Mapping[str, Any]]:
        store.lookups.append(list(keys))
        return []  # the teammate publishes only after this Run looked its keys up

    store.lookup = published_after_the_runs_mirror  # type: ignore[method-assign]
    check = await world.check()
    assert check["status"] == "GREEN" and world.runner.specs == []
    assert check["source"]["kind"] == "remote" and store.published == []
    assert store.calls[-1][0] == "release"


async def test_a_waiter_reuses_the_holders_verdict_as_a_join() -> None:
    record = await teammate_record()
    store = LeasingStore()
    store.held[record["key"]] = ("other-machine", 1_000.0)  # live for the whole test
    world = LeaseWorld(store)
    polls = 0

    async def holder_publishes() -> None:
        nonlocal polls
        polls += 1
        if polls == 3:
            store.records.append(record)
            del store.held[record["key"]]

    world.during_sleep = holder_publishes
    check = await world.check()
    assert (check["status"], check["source"]["kind"]) == ("GREEN", "joined")
    assert world.runner.specs == [] and world.run["executionsStarted"] == 0
    assert LEASE_POLL_SECONDS in world.sleeps
    assert store.published == []
    saved = world.state.requests[check["id"]]
    assert saved.data.status == "GREEN"


async def test_the_waiting_request_says_who_reviews() -> None:
    record = await teammate_record()
    store = LeasingStore()
    store.held[record["key"]] = ("other-machine", 1_000.0)
    world = LeaseWorld(store)
    seen: list[str | None] = []

    async def look() -> None:
        (request,) = [r for r in world.state.all_requests() if r.eval_id == EVAL]
        seen.append(request.data.blocked_reason)
        store.records.append(record)

    world.during_sleep = look
    await world.check()
    assert seen[0] == WAITING_FOR_LEASE.format(principal="ci", expires="t1000")


async def test_a_lapsed_lease_is_taken_over() -> None:
    record = await teammate_record()
    store = LeasingStore()
    store.held[record["key"]] = ("dead-machine", 2.0)  # never renewed: lapses at t=2
    world = LeaseWorld(store)

    async def time_passes() -> None:
        store.now += LEASE_POLL_SECONDS

    world.during_sleep = time_passes
    check = await world.check()
    assert check["status"] == "GREEN" and len(world.runner.specs) == 1
    assert check["source"] is None or check["source"]["kind"] != "joined"
    assert store.published == [record["key"]]
    assert store.held == {}  # taken over, then released after publishing


async def test_a_store_that_does_not_answer_means_a_local_review() -> None:
    store = LeasingStore()
    store.failure = RemoteFailure(FailureMode.OPEN, "The remote store is unreachable")
    world = LeaseWorld(store)
    check = await world.check()
    assert check["status"] == "GREEN" and len(world.runner.specs) == 1
    assert len(world.warnings) == 1 and ". Continuing without" in world.warnings[0]
    assert store.published == []  # the store stays off for the rest of the Run


async def test_a_store_without_leases_or_without_publish_reviews_locally() -> None:
    for store in (NoLeaseStore(), LeasingStore(scopes=("read",))):
        world = LeaseWorld(store)
        check = await world.check()
        assert check["status"] == "GREEN" and len(world.runner.specs) == 1
        assert world.remote.leases_taken == 0 and world.warnings == []


async def test_a_forced_run_takes_no_lease() -> None:
    store = LeasingStore()
    world = LeaseWorld(store)
    requests = await world.verify(EVAL, ignore_gates=True, force=True)
    assert requests[EVAL]["status"] == "GREEN"
    assert store.calls == []


async def test_the_holder_renews_while_the_review_runs() -> None:
    store = LeasingStore()
    world = LeaseWorld(store)
    renewals: list[float] = []
    original = world.runner.run

    async def slow_run(*args: Any, **kwargs: Any) -> Any:
        for _ in range(4):  # the review takes four renewal intervals
            await world.ports().sleep(1.0)
            renewals.append(store.now)
        return await original(*args, **kwargs)

    world.runner.run = slow_run  # type: ignore[method-assign]
    check = await world.check()
    acquires = [c for c in store.calls if c[0] == "acquire"]
    assert check["status"] == "GREEN"
    assert len(acquires) >= 2  # the first take, then renewals by the same holder
    assert {c[2] for c in acquires} == {check["executionId"]}
