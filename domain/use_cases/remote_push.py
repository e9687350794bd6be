"""``remote push``: send the local verdicts the team review store does not have yet.

For each key, the newest locally produced (non-mirror) GREEN/RED record is a candidate.
With the ``read`` scope the store is asked first, and a record that already is the store's
latest is not sent (nor built and checked). ``created: false`` and "already the latest"
both count as *existing*. Human records without the ``human`` scope, records over the size
limit and records that fail the client's own checks are *skipped*, each with a reason.
The rest go in batches (``publish_batches``), one ``PUT`` each to a store without them.
Unlike ``verify``, push never fails open: every ``RemoteFailure`` propagates to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from artifactize.domain.reviews.remote.record_format import MIB
from artifactize.domain.reviews.remote.records import (
    RecordError,
    build_record,
    is_mirror,
    validate_record,
)
from artifactize.domain.text import compact_json_size
from artifactize.kernel.document_codec import execution_json
from artifactize.ports.documents import ExecutionDocument, StoreRecord
from artifactize.ports.ids import ReuseKey
from artifactize.ports.review_store import (
    PUBLISH_BATCH_MAX_ENTRIES,
    SCOPE_HUMAN,
    SCOPE_PUBLISH,
    SCOPE_READ,
    RemoteFailure,
    RemoteStore,
)
from artifactize.ports.state import ExecutionRecord, StateStore
from artifactize.ports.statuses import VERDICT_STATUSES, ProfileKind

ASSUMED_KIND = "folder"
"""The Artifact kind assumed for an execution saved without ``kinds`` (older executions)."""
PUBLISH_SCOPE = SCOPE_PUBLISH
TOO_LARGE_STATUS = 413
PUSH_BATCH_MAX_BYTES = 1 * MIB
"""Of records' compact JSON per batch publish: one exchange stays well inside the client's
5-second deadline on a slow uplink, and within a proxy's usual body limit."""
READ_SCOPE = SCOPE_READ
HUMAN_SCOPE = SCOPE_HUMAN


class PushError(Exception):
    """The store cannot take a push at all (the token lacks the publish scope)."""


@dataclass
class PushReport:
    dry_run: bool
    pushed: int = 0
    existing: int = 0
    skipped: int = 0
    reasons: list[str] = field(default_factory=list)  # one per skipped record

    def to_json(self) -> dict[str, Any]:
        return {
            "dryRun": self.dry_run,
            "pushed": self.pushed,
            "existing": self.existing,
            "skipped": self.skipped,
        }

    def text(self) -> str:
        return (
            f"Pushed {self.pushed}, already in the store {self.existing}, skipped {self.skipped}."
        )


@dataclass(frozen=True)
class _Planned:
    key: ReuseKey
    record: StoreRecord


def local_candidates(state: StateStore) -> list[ExecutionRecord]:
    """The newest locally produced GREEN/RED record of every key, newest key first."""
    chosen: list[ExecutionRecord] = []
    for latest, _count in state.latest_records():
        if _produced_here(latest):
            chosen.append(latest)
            continue
        assert latest.key is not None  # reuse history holds keyed records only
        older = next((r for r in state.history(latest.key) if _produced_here(r)), None)
        if older is not None:
            chosen.append(older)
    return chosen


def _produced_here(record: ExecutionRecord) -> bool:
    saved = {**execution_json(record.data), "id": record.id}
    return record.status in VERDICT_STATUSES and not is_mirror(saved)


def execution_kinds(data: ExecutionDocument) -> tuple[dict[str, str], bool]:
    """The Artifact kinds of an execution's fingerprints, and whether they were assumed.

    Executions record ``kinds``; one saved without them gets ``folder`` for every name (a
    wrong guess makes the recomputed key differ, and the record is skipped, never sent).
    """
    recorded = data.get("kinds")
    fingerprints = data.get("fingerprints") or {}
    if isinstance(recorded, Mapping) and all(isinstance(v, str) for v in recorded.values()):
        return {str(k): v for k, v in recorded.items()}, False
    return {str(name): ASSUMED_KIND for name in fingerprints}, True


async def push(
    candidates: Sequence[ExecutionRecord],
    store: RemoteStore,
    report: PushReport,
    progress: Callable[[int, int], None] | None = None,
) -> PushReport:
    """Publish (with ``report.dry_run`` only count) the candidates the store lacks.

    ``report`` is filled in as the push goes, so a caller still has the counts when a
    ``RemoteFailure`` stops it halfway; ``progress`` is told, after each batch sent, how many
    records of how many to send have been sent."""
    principal = await store.whoami()
    if PUBLISH_SCOPE not in principal.scopes:
        raise PushError(
            f"Remote token {principal.name} lacks the {PUBLISH_SCOPE} scope; "
            "`remote push` needs it."
        )
    if READ_SCOPE in principal.scopes and candidates:
        # Asked first: a record already the store's latest is neither built nor checked
        # (the checks are most of a push's own work), so pushing again costs a lookup.
        entries = await store.lookup(list(dict.fromkeys(str(c.key) for c in candidates)))
        latest = {  # an entry the bounded reader refused says nothing: its record is sent
            entry.get("key"): entry.get("executionId")
            for entry in entries
            if isinstance(entry, Mapping)
        }
        sending = [c for c in candidates if latest.get(c.key) != c.id]
        report.existing += len(candidates) - len(sending)
        candidates = sending
    planned: list[_Planned] = []
    for execution in candidates:
        item = _plan(execution, store.settings.share, principal.name, principal.scopes)
        if isinstance(item, str):
            report.skipped += 1
            report.reasons.append(item)
        else:
            planned.append(item)
    if report.dry_run:
        report.pushed += len(planned)
        return report
    sender = _Sender(store, report)
    sent = 0
    for group in publish_batches(planned):
        await sender.send(group)
        sent += len(group)
        if progress is not None:
            progress(sent, len(planned))
    return report


class _Sender:
    """Sends the planned records, counting each as it lands (a failure then reports what
    was sent before it): in batches while the store takes them, one ``PUT`` each to a store
    without the batch route (404) and for a batch of one. A batch refused as too large
    (413: a proxy in front of the store with a smaller body limit) or not answered within
    the client's deadline (a slow uplink) is halved until it passes, and later batches are
    no larger than what passed."""

    def __init__(self, store: RemoteStore, report: PushReport) -> None:
        self.store, self.report = store, report
        self.batches = True  # until the store shows it has no batch route (an older server)
        self.most = PUBLISH_BATCH_MAX_ENTRIES

    async def send(self, group: Sequence[_Planned]) -> None:
        start = 0
        while start < len(group):
            part = group[start : start + self.most]  # ``most`` as the last 413 left it
            await self._send(part)
            start += len(part)

    async def _send(self, part: Sequence[_Planned]) -> None:
        if len(part) == 1 or not self.batches:
            for item in part:
                await self._put(item)
            return
        try:
            created = await self.store.publish_batch([(item.key, item.record) for item in part])
        except RemoteFailure as failure:
            if failure.status != TOO_LARGE_STATUS and not failure.timed_out:
                raise
            # smaller, and again (a timed-out batch may have been stored: those records
            # then count as already in the store, which they are)
            self.most = len(part) // 2  # at least 1: ``part`` held two or more
            await self.send(part)
            return
        if created is None:
            self.batches = False
            await self._send(part)
            return
        self.report.pushed += sum(created)
        self.report.existing += len(created) - sum(created)

    async def _put(self, item: _Planned) -> None:
        if await self.store.publish(item.key, item.record):
            self.report.pushed += 1
        else:
            self.report.existing += 1


def publish_batches(planned: Sequence[_Planned]) -> list[list[_Planned]]:
    """``planned`` cut into batches of at most PUBLISH_BATCH_MAX_ENTRIES records and
    PUSH_BATCH_MAX_BYTES of their compact JSON, in order but for a record larger than that,
    which is a batch of its own (sent as one ``PUT``) as soon as it is met."""
    batches: list[list[_Planned]] = []
    group: list[_Planned] = []
    size = 0
    for item in planned:
        item_size = compact_json_size(item.record)
        if item_size > PUSH_BATCH_MAX_BYTES:  # alone, leaving the batch being filled open
            batches.append([item])
            continue
        if group and (
            len(group) == PUBLISH_BATCH_MAX_ENTRIES or size + item_size > PUSH_BATCH_MAX_BYTES
        ):
            batches.append(group)
            group, size = [], 0
        group.append(item)
        size += item_size
    if group:
        batches.append(group)
    return batches


def _plan(
    execution: ExecutionRecord, share: str, principal: str, scopes: tuple[str, ...]
) -> _Planned | str:
    """The record to send, or why this execution is skipped."""
    saved = cast(ExecutionDocument, {**execution_json(execution.data), "id": execution.id})
    where = f"{execution.data.eval_id} ({execution.key})"
    kinds, assumed = execution_kinds(saved)
    try:
        record = build_record(saved, kinds, share)
    except RecordError as exc:
        return f"Skipped {where}: {exc}."
    checked = validate_record(record)
    if isinstance(checked, str):
        guess = f" (the execution records no Artifact kinds; `{ASSUMED_KIND}` was assumed)"
        return f"Skipped {where}: {checked}{guess if assumed else ''}."
    if checked.kind == ProfileKind.HUMAN and HUMAN_SCOPE not in scopes:
        return (
            f"Skipped {where}: this result stays local: remote token {principal} lacks the "
            f"{HUMAN_SCOPE} scope."
        )
    return _Planned(ReuseKey(checked.key), record)
