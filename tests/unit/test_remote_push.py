"""``remote push`` (reviews-and-store.md §5.6) against an in-memory store and state."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import pytest

from artifactize.domain.text import compact_json_size
from artifactize.domain.use_cases.remote_push import (
    PUSH_BATCH_MAX_BYTES,
    PushError,
    PushReport,
    local_candidates,
    push,
)
from artifactize.kernel.bounded_json import RefusedValue
from artifactize.kernel.document_codec import execution_from_json
from artifactize.ports.review_store import (
    PUBLISH_BATCH_MAX_ENTRIES,
    FailureMode,
    Principal,
    RemoteFailure,
    RemoteSettings,
)
from artifactize.ports.state import ExecutionRecord
from tests.fakes.remote_leases import NoLeases
from tests.support.remote_records import KINDS, execution, key_of

SETTINGS = RemoteSettings("https://store.example/", "summary", "tok", "env")


class MemoryStore(NoLeases):
    def __init__(self, scopes: Sequence[str], stored: Mapping[Any, str] | None = None) -> None:
        self.settings = SETTINGS
        self.principal = Principal("ci", tuple(scopes))
        self.stored = dict(stored or {})  # key -> executionId of the store's latest
        self.published: list[tuple[str, dict[str, Any]]] = []
        self.lookups: list[list[str]] = []
        self.fail_publish = False
        self.batch_route = True  # False: a store from before the batch route
        self.batches: list[list[str]] = []  # the keys of each batch publish
        self.puts: list[str] = []  # the keys published one by one

    async def whoami(self) -> Principal:
        return self.principal

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        self.lookups.append(list(keys))
        return [{"key": k, "executionId": self.stored[k]} for k in keys if k in self.stored]

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        self.puts.append(key)
        return self._store(key, record)

    async def publish_batch(
        self, batch: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> list[bool] | None:
        if not self.batch_route:
            return None
        assert 1 < len(batch) <= PUBLISH_BATCH_MAX_ENTRIES
        self.batches.append([key for key, _ in batch])
        return [self._store(key, record) for key, record in batch]

    def _store(self, key: str, record: Mapping[str, Any]) -> bool:
        if self.fail_publish:
            raise RemoteFailure(FailureMode.OPEN, "The remote store failed (HTTP 503)", 503)
        self.published.append((key, dict(record)))
        if self.stored.get(key) == record["executionId"]:
            return False
        self.stored[key] = record["executionId"]
        return True

    async def aclose(self) -> None:
        pass


def row(number: int, **changes: Any) -> ExecutionRecord:
    fingerprints = {"doc": f"v{number}", "lib": "v1"}
    base = {
        "id": f"execution-run-Abc-{number}",
        "fingerprints": fingerprints,
        "key": key_of("b" * 64, fingerprints, KINDS),
        "kinds": KINDS,
    }
    data = execution(**{**base, **changes})
    return ExecutionRecord(
        id=data["id"],
        key=data["key"],
        eval_def_hash=data["evalDefHash"],
        status=data["status"],
        owner_pid=1,
        owner_start_time=1.0,
        backend="openai",
        completed_at=data["completedAt"],
        data=execution_from_json(data),
    )


class MemoryState:
    def __init__(self, *histories: list[ExecutionRecord]) -> None:
        self.histories = histories  # each newest first

    def latest_records(self) -> list[tuple[ExecutionRecord, int]]:
        return [(h[0], len(h)) for h in self.histories]

    def history(self, key: str) -> list[ExecutionRecord]:
        return next(list(h) for h in self.histories if h[0].key == key)


def run_push(
    candidates: Sequence[ExecutionRecord], store: MemoryStore, dry_run: bool = False
) -> PushReport:
    report = PushReport(dry_run=dry_run)

    async def pushed() -> PushReport:
        return await push(candidates, store, report)

    return anyio.run(pushed)


def test_candidates_skip_mirrors_for_the_newest_local_record() -> None:
    local = row(1)
    mirror = row(1, id="remote-execution-x", origin={"storeUrl": "u"})
    other = row(2)
    state: Any = MemoryState([mirror, local], [other], [row(3, id="remote-y", origin={})])
    assert [r.id for r in local_candidates(state)] == [local.id, other.id]


def test_push_sends_what_the_store_lacks_and_counts_the_rest() -> None:
    rows = [row(1), row(2), row(3)]
    store = MemoryStore(["read", "publish"], {rows[0].key: rows[0].id, rows[1].key: "older"})
    report = run_push(rows, store)
    assert report.to_json() == {"dryRun": False, "pushed": 2, "existing": 1, "skipped": 0}
    assert report.text() == "Pushed 2, already in the store 1, skipped 0."
    assert [key for key, _ in store.published] == [rows[1].key, rows[2].key]
    assert store.lookups == [[r.key for r in rows]]
    sent = store.published[0][1]
    assert sent["schema"] == 2 and "toolCalls" not in sent


def test_without_read_scope_nothing_is_looked_up_and_created_false_is_existing() -> None:
    rows = [row(1), row(2)]
    store = MemoryStore(["publish"], {rows[0].key: rows[0].id})
    report = run_push(rows, store)
    assert store.lookups == []
    assert (report.pushed, report.existing) == (1, 1)


def test_dry_run_sends_nothing() -> None:
    rows = [row(1), row(2)]
    store = MemoryStore(["read", "publish"], {rows[0].key: rows[0].id})
    report = run_push(rows, store, dry_run=True)
    assert store.published == []
    assert report.to_json() == {"dryRun": True, "pushed": 1, "existing": 1, "skipped": 0}


def test_publish_scope_is_required() -> None:
    with pytest.raises(PushError, match="lacks the publish scope"):
        run_push([row(1)], MemoryStore(["read", "human"]))


def test_human_records_need_the_human_scope() -> None:
    human = row(1, profile={"kind": "human"}, reviewer="alice")
    store = MemoryStore(["publish"])
    report = run_push([human, row(2)], store)
    assert (report.pushed, report.skipped) == (1, 1)
    assert "stays local: remote token ci lacks the human scope" in report.reasons[0]
    report = run_push([human], MemoryStore(["publish", "human"]))
    assert report.pushed == 1


def test_over_size_and_unbuildable_records_are_skipped_with_a_reason() -> None:
    big = row(1, result={"verdict": "GREEN", "notes": "x" * (256 * 1024)})
    unkeyed = row(2, status="ERROR")
    report = run_push([big, unkeyed, row(3)], MemoryStore(["publish"]))
    assert (report.pushed, report.skipped) == (1, 2)
    assert "the limit without `execution` is 262144" in report.reasons[0]
    assert "only GREEN or RED" in report.reasons[1]


def test_assumed_kinds_that_do_not_fit_skip_the_record_and_say_why() -> None:
    legacy = row(1)
    saved = [key for key in legacy.data.keys if key != "kinds"]
    # `lib` is a file, but an execution without kinds assumes folder
    data = dataclasses.replace(legacy.data, kinds=None, keys=tuple(saved))
    legacy = dataclasses.replace(legacy, data=data)
    report = run_push([legacy], MemoryStore(["publish"]))
    assert report.skipped == 1
    assert "does not match the key recomputed" in report.reasons[0]
    assert "`folder` was assumed" in report.reasons[0]


def test_a_remote_failure_stops_the_push_and_keeps_the_counts() -> None:
    store = MemoryStore(["publish"])
    store.fail_publish = True
    report = PushReport(dry_run=False)
    with pytest.raises(RemoteFailure):
        anyio.run(push, [row(1)], store, report)
    assert report.pushed == 0


def test_records_go_in_batches_at_the_entry_limit_and_one_past_it() -> None:
    rows = [row(n) for n in range(PUBLISH_BATCH_MAX_ENTRIES + 1)]
    store = MemoryStore(["publish"])
    report = run_push(rows[:PUBLISH_BATCH_MAX_ENTRIES], store)
    assert [len(keys) for keys in store.batches] == [PUBLISH_BATCH_MAX_ENTRIES]
    assert (report.pushed, store.puts) == (PUBLISH_BATCH_MAX_ENTRIES, [])
    store = MemoryStore(["publish"], {rows[3].key: rows[3].id})
    report = run_push(rows, store)
    # one past the limit: a second batch of one, sent as a PUT
    assert [len(keys) for keys in store.batches] == [PUBLISH_BATCH_MAX_ENTRIES]
    assert store.puts == [rows[-1].key]
    assert [key for key, _ in store.published] == [r.key for r in rows]
    assert (report.pushed, report.existing) == (PUBLISH_BATCH_MAX_ENTRIES, 1)


def test_a_batch_holds_at_most_its_bytes_and_a_larger_record_goes_alone() -> None:
    notes = "x" * (200 * 1024)  # each record ~200 KiB: within a summary record's limit
    rows = [row(n, result={"verdict": "GREEN", "notes": notes}) for n in range(45)]
    store = MemoryStore(["publish"])
    report = run_push(rows, store)
    sizes = [
        sum(compact_json_size(record) for key, record in store.published if key in keys)
        for keys in store.batches
    ]
    assert report.pushed == 45 and store.puts == []
    per_batch = PUSH_BATCH_MAX_BYTES // compact_json_size(store.published[0][1])
    assert len(store.batches) == -(-45 // per_batch) and all(
        s <= PUSH_BATCH_MAX_BYTES for s in sizes
    )
    # each batch was cut only when the next record would not fit
    assert all(
        size + compact_json_size(store.published[0][1]) > PUSH_BATCH_MAX_BYTES
        for size in sizes[:-1]
    )
    huge = row(99, result={"verdict": "GREEN", "notes": "x" * PUSH_BATCH_MAX_BYTES})
    store = MemoryStore(["publish"])
    store.settings = dataclasses.replace(SETTINGS, share="full")  # with its execution: 16 MiB
    small = [row(n) for n in range(3)]
    report = run_push([small[0], huge, small[1], small[2]], store)
    assert report.pushed == 4 and store.puts == [huge.key]
    assert store.batches == [[r.key for r in small]]


def test_a_store_without_the_batch_route_is_sent_one_record_at_a_time() -> None:
    rows = [row(n) for n in range(PUBLISH_BATCH_MAX_ENTRIES + 5)]
    store = MemoryStore(["publish"])
    store.batch_route = False
    report = run_push(rows, store)
    assert report.pushed == len(rows) and store.batches == []
    assert store.puts == [r.key for r in rows]


def test_a_failed_batch_keeps_the_counts_of_the_batches_before_it() -> None:
    rows = [row(n) for n in range(PUBLISH_BATCH_MAX_ENTRIES + 2)]
    store = MemoryStore(["publish"])
    sent = store._store

    def fail_second_batch(key: str, record: Mapping[str, Any]) -> bool:
        store.fail_publish = len(store.published) >= PUBLISH_BATCH_MAX_ENTRIES
        return sent(key, record)

    store._store = fail_second_batch  # type: ignore[method-assign]
    report = PushReport(dry_run=False)
    with pytest.raises(RemoteFailure):
        anyio.run(push, rows, store, report)
    assert report.pushed == PUBLISH_BATCH_MAX_ENTRIES


def test_a_record_already_the_stores_latest_is_counted_before_any_check() -> None:
    human = row(1, profile={"kind": "human"}, reviewer="alice")  # this token cannot send it
    store = MemoryStore(["read", "publish"], {human.key: human.id})
    report = run_push([human, row(2)], store)
    assert report.to_json() == {"dryRun": False, "pushed": 1, "existing": 1, "skipped": 0}
    assert report.reasons == [] and store.lookups == [[human.key, row(2).key]]


def test_progress_is_told_after_each_batch_sent() -> None:
    rows = [row(n) for n in range(PUBLISH_BATCH_MAX_ENTRIES + 3)]
    store = MemoryStore(["read", "publish"], {rows[0].key: rows[0].id})
    told: list[tuple[int, int]] = []
    report = PushReport(dry_run=False)

    async def pushed() -> PushReport:
        return await push(rows, store, report, lambda sent, total: told.append((sent, total)))

    anyio.run(pushed)
    to_send = len(rows) - 1
    assert told == [(PUBLISH_BATCH_MAX_ENTRIES, to_send), (to_send, to_send)]


def test_an_older_store_failing_halfway_keeps_the_count_of_each_put() -> None:
    rows = [row(n) for n in range(4)]
    store = MemoryStore(["publish"])
    store.batch_route = False
    sent = store._store

    def fail_third(key: str, record: Mapping[str, Any]) -> bool:
        store.fail_publish = len(store.published) >= 2
        return sent(key, record)

    store._store = fail_third  # type: ignore[method-assign]
    report = PushReport(dry_run=False)
    with pytest.raises(RemoteFailure):
        anyio.run(push, rows, store, report)
    assert report.pushed == 2


def test_a_batch_refused_as_too_large_is_halved_until_it_passes() -> None:
    rows = [row(n) for n in range(20)]
    store = MemoryStore(["publish"])
    publish_batch = store.publish_batch
    refused: list[int] = []

    async def behind_a_small_proxy(batch: Sequence[tuple[str, Mapping[str, Any]]]) -> Any:
        if len(batch) > 3:  # a proxy whose body limit holds three records
            refused.append(len(batch))
            raise RemoteFailure(FailureMode.CLOSED, "The remote store refused (HTTP 413)", 413)
        return await publish_batch(batch)

    store.publish_batch = behind_a_small_proxy  # type: ignore[method-assign]
    report = run_push(rows, store)
    assert report.pushed == 20 and [key for key, _ in store.published] == [r.key for r in rows]
    assert refused == [20, 10, 5]  # then no larger batch is tried again
    assert max(len(keys) for keys in store.batches) == 2


def test_a_single_record_refused_as_too_large_fails_the_push() -> None:
    store = MemoryStore(["publish"])

    async def refuse(key: str, record: Mapping[str, Any]) -> bool:
        raise RemoteFailure(FailureMode.CLOSED, "The remote store refused (HTTP 413)", 413)

    store.publish = refuse  # type: ignore[method-assign]
    with pytest.raises(RemoteFailure):
        run_push([row(1)], store)


def test_a_batch_not_answered_in_time_is_sent_again_in_halves() -> None:
    rows = [row(n) for n in range(8)]
    store = MemoryStore(["publish"])
    publish_batch = store.publish_batch
    late: list[int] = []

    async def slow_uplink(batch: Sequence[tuple[str, Mapping[str, Any]]]) -> Any:
        if len(batch) > 4:  # stored, but the answer came after the deadline
            late.append(len(batch))
            await publish_batch(batch)
            raise RemoteFailure(FailureMode.OPEN, "did not answer within 5 s", timed_out=True)
        return await publish_batch(batch)

    store.publish_batch = slow_uplink  # type: ignore[method-assign]
    report = run_push(rows, store)
    assert late == [8] and (report.pushed, report.existing) == (0, 8)
    store = MemoryStore(["publish"])

    async def store_down(batch: Sequence[tuple[str, Mapping[str, Any]]]) -> Any:
        raise RemoteFailure(FailureMode.OPEN, "The remote store failed (HTTP 503)", 503)

    store.publish_batch = store_down  # type: ignore[method-assign]
    with pytest.raises(RemoteFailure):  # any other failure stops the push at once
        run_push(rows, store)


def test_a_lookup_entry_the_reader_refused_is_sent_again_not_a_crash() -> None:
    rows = [row(1), row(2)]
    store = MemoryStore(["read", "publish"], {rows[0].key: rows[0].id})
    lookup = store.lookup

    async def one_refused(keys: Sequence[str]) -> list[Any]:
        return [RefusedValue("a duplicate key"), *(await lookup(keys))[1:]]

    store.lookup = one_refused  # type: ignore[method-assign]
    report = run_push(rows, store)
    assert (report.pushed, report.existing) == (1, 1)  # the store had rows[0]: created false
