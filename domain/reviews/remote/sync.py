"""Read- and write-through of the team review store during ``verify``.

Before the Run claims anything, one batched lookup asks the store for every key; each
valid answer newer than the local latest record is mirrored into the local history, so the
ordinary claim reuses it (``source.kind`` ``remote``). After a local GREEN/RED keyed record
is committed it is published (summary or full share), with its execution-path pins.
During the Run, ``refresh`` asks again for keys still without a result, just before each
keyed claim and on each Human wait poll, so a verdict published meanwhile by a teammate is
reused; a per-key interval keeps these polls from flooding the store. A mirrored record
also ends a local Human wait of its key (``supersession``), in the mirror's transaction.

Review leases (``leases``): with the ``publish`` scope, ``take_lease`` asks the store for the
lease of a key before an Agent or runtime review of it runs here; the holder renews it
(``renew_lease``) while it works and gives it back (``release_lease``) once its verdict is
published, and another machine that finds the lease held waits for that verdict. A store
without lease routes, or without the scope, means no leases: every machine reviews for
itself, as before.

Waiting Human requests (``announce_waiting``): during ``--wait``, with the ``publish``
scope, each Human request this Run waits for is announced to the store and renewed every
``WAITING_SECONDS / RENEWALS_PER_TERM``, so every teammate's ``artifactize web`` lists it;
it is withdrawn once it settles and when the wait ends (``withdraw_waiting``). A store
without the waiting routes means no announcements.

Failures follow the store's rules: when the store is unreachable (fail open) one warning
is printed and the rest of the Run goes on without it; when it refuses us (fail closed) the
error reaches the caller, which stops (exit 2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from artifactize.domain.reviews.human.asking import FOLLOWING_HUMAN
from artifactize.domain.reviews.human.settlement import supersession
from artifactize.domain.reviews.remote.record_format import MIRROR_PREFIX
from artifactize.domain.reviews.remote.records import (
    RecordError,
    build_record,
    is_mirror,
    mirror_record,
    validate_record,
)
from artifactize.domain.reviews.remote.waiting_requests import (
    RENEWALS_PER_TERM,
    WAITING_SECONDS,
    announcement,
)
from artifactize.kernel.document_codec import execution_json
from artifactize.ports.callbacks import WarningSink
from artifactize.ports.documents import Execution, ExecutionDocument
from artifactize.ports.ids import RequestId, ReuseKey
from artifactize.ports.review_store import (
    SCOPE_HUMAN,
    SCOPE_PUBLISH,
    SCOPE_READ,
    FailureMode,
    Principal,
    RemoteFailure,
    RemoteLease,
    RemoteStore,
)
from artifactize.ports.state import ExecutionRecord, StateStore
from artifactize.ports.statuses import ProfileKind, RequestStatus

CONTINUING = "{reason}. Continuing without the remote review store."
INVALID_RECORD = "Ignoring an invalid remote review record: {problem}"
UNASKED_KEY = "the store answered for key {key}, which was not asked for"
HUMAN_STAYS_LOCAL = "This result stays local: remote token {name} lacks the human scope."
LEASE_LOST = (
    "The review lease of key {key} is now held by {principal}; this review goes on and "
    "publishes its verdict too."
)
# At most one lookup per key per this many seconds during a Run (reviews-and-store §5.4).
REFRESH_INTERVAL_SECONDS = 1.0
# Mirrored records written per state transaction: one commit per record made a CI `verify`
# of 10,000 Artifacts from an empty state pay 10,000; a bounded batch keeps each write lock
# short for the other processes of the state.
MIRRORS_PER_TRANSACTION = 500
# An announced waiting request is renewed this often (or at once when its claim changed).
ANNOUNCE_INTERVAL_SECONDS = WAITING_SECONDS / RENEWALS_PER_TERM


def _claim(state: StateStore, request_id: str) -> Mapping[str, str] | None:
    claim = state.human_claim(RequestId(request_id))
    return None if claim is None else {"reviewer": claim.reviewer, "claimedAt": claim.claimed_at}


def _mirror_id_as_sent(raw: Mapping[str, Any]) -> str | None:
    """The local ID a record's mirror would have (``mirror_id``), from its ``executionId`` as
    sent, before any check, when that is a string: a mirror the state already holds was
    checked when it was written, and ``add_mirror`` would leave the record out anyway, so
    it is not checked again (0.36 ms a record)."""
    value = raw.get("executionId") if isinstance(raw, Mapping) else None
    return MIRROR_PREFIX + value if isinstance(value, str) else None


class RemoteSync:
    def __init__(self, store: RemoteStore, warn: WarningSink) -> None:
        self.store = store
        self.warn = warn
        self.principal: Principal | None = None
        self.usable = True
        self.mirrored = 0
        self.published = 0
        self.lookups = 0  # lookup calls made, for tests and diagnostics
        self._looked_up: dict[str, float] = {}  # key -> clock.monotonic() of its last lookup
        self.leases_served = True  # False once the store answered that it has no leases
        self.leases_taken = 0  # leases granted to this Run (renewals not counted)
        # True once a grant came with its key's latest record: a lookup before the next
        # lease would ask what the grant answers, and is left out (``Verify._settle_request``)
        self.grants_answer_latest = False
        self.waiting_served = True  # False once the store answered it has no waiting routes
        # request ID -> (clock.monotonic() of its last announcement, what was announced)
        self._announced: dict[str, tuple[float, Mapping[str, object]]] = {}
        self.announcements = 0  # announcements sent (renewals included), for tests

    async def _who(self) -> Principal:
        if self.principal is None:
            self.principal = await self.store.whoami()
        return self.principal

    def _fail_open(self, failure: RemoteFailure) -> None:
        if failure.mode is FailureMode.CLOSED:
            raise failure
        self.usable = False
        self.warn(CONTINUING.format(reason=failure.message.rstrip(".")))

    async def mirror(
        self,
        keys: Sequence[str],
        state: StateStore,
        now: float | None = None,
        *,
        settled_at: str,
        answered: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Mirror the store's newer records of ``keys`` into the local reuse history
        (``answered``: the store's answer for them already in hand, not asked again).

        ``now`` (``clock.monotonic()``) marks the keys as just looked up, so an immediate
        ``refresh`` of the same keys (the first claim right after this) asks nothing.
        ``settled_at`` (a timestamp) is when requests of a superseded Human wait got the
        mirror: the store cannot tell the time itself without making the result untestable."""
        wanted = sorted(set(keys))
        if not wanted or not self.usable:
            return
        try:
            if SCOPE_READ not in (await self._who()).scopes:
                return
            if now is not None:
                self._looked_up.update(dict.fromkeys(wanted, now))
            if answered is None:
                self.lookups += 1
                answers = await self.store.lookup(wanted)
            else:
                answers = list(answered)
        except RemoteFailure as failure:
            self._fail_open(failure)
            return
        if not answers:
            return
        asked = set(wanted)
        sent = [_mirror_id_as_sent(raw) for raw in answers]
        known = state.known_executions([i for i in sent if i is not None])
        fresh = [
            raw for raw, mirror_id in zip(answers, sent, strict=True) if mirror_id not in known
        ]
        for start in range(0, len(fresh), MIRRORS_PER_TRANSACTION):
            mirrors = [
                (mirrored, supersession(mirrored, settled_at))
                for raw in fresh[start : start + MIRRORS_PER_TRANSACTION]
                if (mirrored := self._checked_mirror(raw, asked)) is not None
            ]
            if mirrors:
                with state.batch():  # the history's collection after it joins it
                    self.mirrored += sum(state.add_mirrors(mirrors))

    def _checked_mirror(self, raw: Mapping[str, Any], asked: set[str]) -> ExecutionRecord | None:
        """The local mirror of a record the store answered, or None (with a warning) for a
        record that fails the checks or answers a key not asked for."""
        checked = validate_record(raw)
        if isinstance(checked, str):
            self.warn(INVALID_RECORD.format(problem=checked))
            return None
        if checked.key not in asked:
            self.warn(INVALID_RECORD.format(problem=UNASKED_KEY.format(key=checked.key)))
            return None
        return mirror_record(checked, self.store.settings.url)

    async def refresh(
        self, keys: Sequence[str], state: StateStore, now: float, *, settled_at: str
    ) -> None:
        """``mirror`` the keys not looked up in the last REFRESH_INTERVAL_SECONDS (``now``:
        ``clock.monotonic()``); the others are skipped, so polling loops may call this every
        time round without asking the store more than once a second per key."""
        due = [
            key
            for key in sorted(set(keys))
            if key not in self._looked_up or now - self._looked_up[key] >= REFRESH_INTERVAL_SECONDS
        ]
        await self.mirror(due, state, now, settled_at=settled_at)

    async def publish(
        self, saved: Execution, kinds: Mapping[str, str], lease: RemoteLease | None = None
    ) -> bool:
        """Publish a locally produced GREEN/RED keyed execution; mirrors never go back.
        With the ``lease`` its review held, the store releases it in the same exchange:
        whether the store saw to the lease (released it, or found it no longer this
        holder's); False: the caller releases it, as with a store from before that."""
        execution = cast(ExecutionDocument, execution_json(saved))  # records read JSON
        if not self.usable or is_mirror(execution):
            return False
        try:
            principal = await self._who()
            if SCOPE_PUBLISH not in principal.scopes:
                return False
            profile = execution.get("profile")
            kind = profile.get("kind") if profile is not None else None
            if kind == ProfileKind.HUMAN and SCOPE_HUMAN not in principal.scopes:
                self.warn(HUMAN_STAYS_LOCAL.format(name=principal.name))
                return False
            try:
                record = build_record(execution, kinds, self.store.settings.share)
            except RecordError as exc:
                self.warn(f"This result stays local: {exc}")
                return False
            checked = validate_record(record)
            if isinstance(checked, str):
                self.warn(f"This result stays local: {checked}")
                return False
            key = ReuseKey(str(execution["key"]))
            released: bool | None = None
            if lease is not None and lease.key == key:
                _created, released = await self.store.publish_releasing(key, record, lease.holder)
            else:
                await self.store.publish(key, record)
            self.published += 1
            return released is not None
        except RemoteFailure as failure:
            self._fail_open(failure)
            return False

    async def take_lease(self, key: ReuseKey, holder: str) -> RemoteLease | None:
        """Ask for the lease of ``key`` for ``holder`` (one review). None when leases do not
        apply: the store is unusable or failed open now, the token lacks ``publish``, or
        the store serves no leases. A refusal (fail closed) raises."""
        if not self.usable or not self.leases_served:
            return None
        try:
            if SCOPE_PUBLISH not in (await self._who()).scopes:
                return None
            lease = await self.store.acquire_lease(key, holder)
        except RemoteFailure as failure:
            self._fail_open(failure)
            return None
        if lease is None:
            self.leases_served = False
            return None
        if lease.granted:
            self.leases_taken += 1
            self.grants_answer_latest = lease.latest is not None
        return lease

    async def renew_lease(self, lease: RemoteLease) -> bool:
        """Renew the lease this Run holds; False when renewing should stop (the store
        failed or another machine holds the key now: the review goes on either way)."""
        if not self.usable:
            return False
        try:
            renewed = await self.store.acquire_lease(lease.key, lease.holder)
        except RemoteFailure as failure:
            if failure.mode is FailureMode.CLOSED:
                return False  # the review goes on; its lease lapses
            self._fail_open(failure)
            return False
        if renewed is not None and not renewed.granted:
            self.warn(LEASE_LOST.format(key=lease.key, principal=renewed.principal))
            return False
        return renewed is not None

    async def release_lease(self, lease: RemoteLease) -> None:
        """Give the lease back; any failure is ignored (the lease then lapses by itself)."""
        if not self.usable:
            return
        try:
            await self.store.release_lease(lease.key, lease.holder)
        except RemoteFailure:
            return

    async def announce_waiting(
        self,
        request_ids: Sequence[str],
        state: StateStore,
        now: float,
        *,
        repository: str,
        machine: str | None,
    ) -> None:
        """Announce the requests of ``request_ids`` that still wait for a person (a
        follower is not one: the request it follows is), renew the ones due, and withdraw
        the announced ones that no longer wait. ``now`` is ``clock.monotonic()``."""
        if not self.usable or not self.waiting_served:
            return
        try:
            if SCOPE_PUBLISH not in (await self._who()).scopes:
                return
            for request_id in request_ids:
                saved = state.get_request(RequestId(request_id))
                waits = saved is not None and saved.status == RequestStatus.WAITING_HUMAN
                said = (
                    announcement(saved.data, repository, machine, _claim(state, request_id))
                    if saved is not None
                    and waits
                    and saved.data.source is None
                    and saved.data.blocked_reason != FOLLOWING_HUMAN
                    else None
                )
                last = self._announced.get(request_id)
                if said is None:
                    if last is not None:
                        del self._announced[request_id]
                        await self.store.withdraw_waiting(request_id)
                    continue
                if (
                    last is not None
                    and last[1] == said
                    and now - last[0] < ANNOUNCE_INTERVAL_SECONDS
                ):
                    continue
                if not await self.store.announce_waiting(request_id, said):
                    self.waiting_served = False
                    return
                self._announced[request_id] = (now, said)
                self.announcements += 1
        except RemoteFailure as failure:
            if failure.mode is FailureMode.CLOSED:
                self.waiting_served = False  # the wait goes on; teammates do not see it
                return
            self._fail_open(failure)

    async def withdraw_waiting(self) -> None:
        """Withdraw every announcement of this Run (its wait ended); failures are ignored:
        an announcement not withdrawn lapses within WAITING_SECONDS."""
        announced, self._announced = list(self._announced), {}
        if not self.usable:
            return
        for request_id in announced:
            try:
                await self.store.withdraw_waiting(request_id)
            except RemoteFailure:
                return

    async def aclose(self) -> None:
        await self.store.aclose()
