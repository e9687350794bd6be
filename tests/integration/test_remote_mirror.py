"""Records mirrored from the team store into a real SQLite state: a bounded batch of them
per transaction, not one commit each (a CI ``verify`` of 10,000 Artifacts from an empty
state mirrors 10,000 records before its Run)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from artifactize.adapters.sqlite.state import SqliteStateStores
from artifactize.domain.reviews.remote.records import build_record
from artifactize.domain.reviews.remote.sync import MIRRORS_PER_TRANSACTION, RemoteSync
from artifactize.ports.review_store import Principal, RemoteSettings
from tests.fakes.remote_leases import NoLeases
from tests.support.remote_records import FINGERPRINTS, KINDS, execution, key_of

pytestmark = pytest.mark.anyio
AT = "2026-01-01T00:00:00.000000000Z"


def records(count: int) -> list[dict[str, Any]]:
    """``count`` valid records, each of its own eval definition (so its own key)."""
    made = []
    for number in range(count):
        def_hash = f"{number:064x}"
        data = execution(
            id=f"execution-{number}",
            evalDefHash=def_hash,
            key=key_of(def_hash, FINGERPRINTS, KINDS),
        )
        data["provenance"]["evalDefHash"] = def_hash
        made.append(dict(build_record(data, KINDS, "summary")))
    return made


class AnsweringStore(NoLeases):
    """A store that answers every lookup with its records of the keys asked."""

    settings = RemoteSettings("https://store.example/", "summary", "tok", "env")

    def __init__(self, known: list[dict[str, Any]]) -> None:
        self.known = {record["key"]: record for record in known}

    async def whoami(self) -> Principal:
        return Principal("ci", ("read",))

    async def lookup(self, keys: Sequence[str]) -> list[Mapping[str, Any]]:
        return [self.known[key] for key in keys if key in self.known]

    async def publish(self, key: str, record: Mapping[str, Any]) -> bool:
        raise AssertionError("nothing is published here")

    async def publish_batch(self, batch: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        raise AssertionError("nothing is published here")

    async def aclose(self) -> None:
        pass


def refuse(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


async def test_mirrored_records_are_written_a_batch_per_transaction(tmp_path: Path) -> None:
    known = records(2 * MIRRORS_PER_TRANSACTION + 1)
    state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    assert state is not None
    try:
        sync = RemoteSync(AnsweringStore(known), refuse)
        before = state.transactions
        await sync.mirror([record["key"] for record in known], state, settled_at=AT)
        transactions = state.transactions - before
        in_history = {str(latest.key) for latest, _count in state.latest_records()}
    finally:
        state.close()
    assert sync.mirrored == len(known)
    assert in_history == {record["key"] for record in known}
    assert transactions == 4  # which are known (none), then one per batch: 500, 500, 1


async def test_records_the_state_holds_are_neither_checked_nor_written_again(
    tmp_path: Path,
) -> None:
    """The store answers every CI ``verify`` with the records mirrored before; those the
    state already holds are left out before the client's checks (0.36 ms a record), so an
    invalid copy of a known record is skipped without a word, as ``add_mirror`` skipped it."""
    known = records(3)
    state = SqliteStateStores().open(str(tmp_path / "state"), create=True)
    assert state is not None
    try:
        await RemoteSync(AnsweringStore(known), refuse).mirror(
            [record["key"] for record in known], state, settled_at=AT
        )
        tampered = [{**known[0], "verdict": "MAYBE"}, *known[1:], *records(4)[3:]]
        warnings: list[str] = []
        again = RemoteSync(AnsweringStore(tampered), warnings.append)
        await again.mirror([record["key"] for record in tampered], state, settled_at=AT)
        in_history = {str(latest.key) for latest, _count in state.latest_records()}
    finally:
        state.close()
    assert again.mirrored == 1  # the new one
    assert warnings == []  # the tampered copy of a known record was not even checked
    assert in_history == {record["key"] for record in records(4)}
