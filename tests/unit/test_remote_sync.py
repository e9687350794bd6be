"""``RemoteSync.refresh``: at most one store lookup per key per REFRESH_INTERVAL_SECONDS,
and the Human wait loop of ``verify`` refreshes through it (never with ``force``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from artifactize.domain.reviews.human.asking import HUMAN_POLL_SECONDS
from artifactize.domain.reviews.remote.records import build_record
from artifactize.domain.reviews.remote.sync import REFRESH_INTERVAL_SECONDS, RemoteSync
from artifactize.domain.reviews.run.context import VerifyPorts
from artifactize.domain.reviews.run.policy import VerifyOptions
from artifactize.domain.reviews.run.selection import select_evals
from artifactize.domain.use_cases.verify import Verify
from artifactize.kernel.document_codec import execution_json
from artifactize.ports.review_store import Principal, RemoteSettings
from artifactize.ports.state import StateStore
from tests.fakes.processes import FakeClock
from tests.fakes.remote_leases import NoLeases
from tests.unit.test_verify import Setup, backends
from tests.unit.test_verify_gates import World

pytestmark = pytest.mark.anyio
SETTINGS = RemoteSettings("https://store.example/", "summary", "tok", "env")
# The person signs once a refresh interval has passed, so the batch lookup made before the
# Run no longer covers the dependent's key.
SIGN_ON_POLL = int(2 * REFRESH_INTERVAL_SECONDS / HUMAN_POLL_SECONDS)
AT = "2026-01-01T00:00:00.000000000Z"  # when superseded Human waits got a mirror
NO_STATE = cast(StateStore, None)  # nothing is mirrored when the store answers nothing


class CountingStore(NoLeases):
    """A store that knows no record and remembers every key it was asked for."""

    settings = SETTINGS

    def __init__(self, scopes: Sequence[str] = ("read",)) -> None:
        self.principal = Principal("ci", tuple(scopes))
        self.asked: list[list[str]] = []

    async def whoami(self) -> Principal:
        return self.principal

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        self.asked.append(list(keys))
        return []

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        raise AssertionError("nothing is published here")

    async def publish_batch(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        raise AssertionError("nothing is published here")

    async def aclose(self) -> None:
        pass

    def count(self, key: str) -> int:
        return sum(key in batch for batch in self.asked)


def warn(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


async def test_a_key_is_looked_up_at_most_once_per_interval() -> None:
    store = CountingStore()
    sync = RemoteSync(store, warn)
    await sync.refresh(["k1"], NO_STATE, 10.0, settled_at=AT)
    await sync.refresh(["k1"], NO_STATE, 10.0 + REFRESH_INTERVAL_SECONDS / 2, settled_at=AT)
    await sync.refresh(["k1", "k2"], NO_STATE, 10.9, settled_at=AT)  # only the new key is due
    await sync.refresh(["k1", "k2"], NO_STATE, 10.0 + REFRESH_INTERVAL_SECONDS, settled_at=AT)
    assert store.asked == [["k1"], ["k2"], ["k1"]]


async def test_the_batched_mirror_counts_as_a_lookup_for_refresh() -> None:
    store = CountingStore()
    sync = RemoteSync(store, warn)
    await sync.mirror(["k1", "k2"], NO_STATE, 5.0, settled_at=AT)
    await sync.refresh(["k1", "k2"], NO_STATE, 5.1, settled_at=AT)  # the first claim right after
    assert store.asked == [["k1", "k2"]]


async def test_without_read_scope_refresh_asks_nothing() -> None:
    store = CountingStore(scopes=("publish",))
    sync = RemoteSync(store, warn)
    await sync.refresh(["k1"], NO_STATE, 1.0, settled_at=AT)
    assert store.asked == []


async def run_waiting(*, force: bool) -> tuple[CountingStore, str, float, int]:
    """``verify --wait`` of a Human eval nobody submits, through fakes: each poll's sleep
    advances the fake clock; returns the store, the eval's key, the seconds waited and the
    number of polls."""
    setup = Setup()
    store = CountingStore()
    workspace = setup.workspace()
    ports = setup.ports(backends())
    clock = cast(FakeClock, ports.review.clock)
    start = clock.monotonic()
    polls: list[float] = []

    async def sleep(seconds: float) -> None:
        polls.append(seconds)
        clock.advance(seconds)

    ports = dataclasses.replace(ports, remote=RemoteSync(store, warn), sleep=sleep)
    options = VerifyOptions("/repo", "/state", force=force, wait=True, wait_timeout_ms=3000)
    service = Verify(ports, workspace, options)
    refs = select_evals(workspace, "doc/signoff", False)
    result = await service.run(refs, service.prepare(refs))
    assert result.run.wait_timed_out is True
    (request,) = result.requests
    return store, str(request.key), clock.monotonic() - start, len(polls)


async def test_the_human_wait_polls_the_store_once_a_second_per_key() -> None:
    store, key, waited, polls = await run_waiting(force=False)
    # One batched lookup before the Run, then at most one refresh per elapsed interval;
    # the 0.2 s polls in between (and the claim right after the batch) ask nothing.
    assert waited >= 3.0 and polls >= 15
    assert 3 <= store.count(key) <= 1 + int(waited // REFRESH_INTERVAL_SECONDS)


async def test_a_forced_run_never_looks_anything_up() -> None:
    store, _, _, polls = await run_waiting(force=True)
    assert polls >= 15
    assert store.asked == []


class PublishingStore(CountingStore):
    """A store that answers with ``records`` once a teammate published them."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[Mapping[str, Any]] = []

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        await super().lookup(keys)
        return [r for r in self.records if r["key"] in keys]


class RemoteWorld(World):
    def __init__(self, store: CountingStore) -> None:
        super().__init__()
        self.remote = RemoteSync(store, warn)

    def ports(self) -> VerifyPorts:
        return dataclasses.replace(super().ports(), remote=self.remote)


async def teammate_record() -> Any:
    """The summary record of ``app/check`` as a teammate's own Run produced it."""
    teammate = World()
    signed = False

    async def sign_once() -> None:
        nonlocal signed
        if not signed:
            signed = True
            await teammate.sign("GREEN")

    teammate.during_sleep = sign_once
    requests = await teammate.verify(wait=True)
    execution = teammate.state.executions[requests["app/check"]["executionId"]]
    return build_record(
        cast(Any, execution_json(execution.data)), execution.data.kinds or {}, "summary"
    )


async def test_a_record_published_while_the_run_waits_for_a_human_is_reused() -> None:
    record = await teammate_record()
    store = PublishingStore()
    world = RemoteWorld(store)
    polls = 0

    async def publish_then_sign() -> None:
        nonlocal polls
        polls += 1
        if polls == 1:  # the teammate publishes while this Run waits for `doc/signoff`
            store.records.append(record)
        if polls == SIGN_ON_POLL:
            await world.sign("GREEN")

    world.during_sleep = publish_then_sign
    requests = await world.verify(wait=True)
    check = requests["app/check"]
    assert (check["status"], check["source"]["kind"]) == ("GREEN", "remote")
    assert world.runner.specs == [] and world.run["executionsStarted"] == 0
    assert store.count(record["key"]) >= 2  # the batch, then a refresh during the wait


async def teammate_signoff_record() -> Any:
    """The summary record of the Human eval ``doc/signoff`` as a teammate signed it."""
    teammate = World()
    await teammate.verify()
    await teammate.sign("RED")
    (signed,) = [e for e in teammate.state.executions.values() if e.status == "RED"]
    return build_record(cast(Any, execution_json(signed.data)), signed.data.kinds or {}, "summary")


async def test_a_record_for_the_waiting_human_key_ends_the_wait_with_its_verdict() -> None:
    record = await teammate_signoff_record()
    store = PublishingStore()
    world = RemoteWorld(store)
    polls = 0

    async def claim_then_publish() -> None:
        nonlocal polls
        polls += 1
        if polls == 1:  # someone here claimed the review, then the teammate's record lands
            (waiting,) = [r for r in world.state.all_requests() if r.status == "WAITING_HUMAN"]
            await world.reviews().claim(waiting.id, "alice")
            store.records.append(record)

    world.during_sleep = claim_then_publish
    requests = await world.verify(wait=True)
    signoff = requests["doc/signoff"]
    mirror_id = "remote-" + record["executionId"]
    assert (signoff["status"], signoff["executionId"]) == ("RED", mirror_id)
    assert signoff["source"]["kind"] == "remote" and signoff["reviewer"] == record["reviewer"]
    assert world.state.requests[signoff["id"]].status == "RED"  # saved, not only returned
    assert world.state.human_claim(signoff["id"]) is None
    (superseded,) = [e for e in world.state.executions.values() if e.status == "ERROR"]
    assert superseded.data.error_code == "SUPERSEDED"
    assert superseded.data.error == (
        f"Superseded by the completed result {mirror_id} for this key."
    )
    assert world.run["waitTimedOut"] is False
    assert world.runner.specs == []  # the RED sign-off blocks the consumer: nothing ran
