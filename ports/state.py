"""State store port: Runs, their requests, executions and the reuse history.

Every record is indexed columns plus the full camelCase JSON document (``data``). An
execution whose ``history`` is set is part of its key's reuse history; that is the whole
cache. At most one *active* execution (RUNNING or WAITING_HUMAN) holds a key at a time.
No write transaction spans a subprocess or an await: every method is one short transaction.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from artifactize.ports.documents import (
    Execution,
    ExecutionEnding,
    ExecutionUpdate,
    HumanClaimDocument,
    Request,
    RequestEnding,
    RequestUpdate,
    Run,
)
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.statuses import ExecutionStatus, RequestStatus, RunStatus

ACTIVE_STATUSES = (ExecutionStatus.RUNNING, ExecutionStatus.WAITING_HUMAN)
RECORD_MAX_BYTES = 16 * 1024 * 1024  # a bigger execution settles its Run but is not reusable
HISTORY_RECORDS_MAX = 100_000  # a 10,000-Artifact monorepo keeps more keys than that
HISTORY_BYTES_MAX = 1024 * 1024 * 1024


@dataclass(frozen=True)
class RunRecord:
    """A saved Run: indexed columns plus the full JSON document."""

    id: RunId
    repo: str
    status: RunStatus
    data: Run  # its saved JSON through kernel.document_codec


@dataclass(frozen=True)
class RunHead:
    """A saved Run's indexed columns: what a reader that shows no document needs."""

    id: RunId
    repo: str
    status: RunStatus
    created_at: str | None = None  # the Run's ``createdAt`` (None: a Run saved without one)


@dataclass(frozen=True)
class RequestLine:
    """What a text request list shows of a saved request: its columns, and who signed it
    off (``reviewer``, taken out of its JSON by the store). No document is decoded: over a
    long history that decoding was nearly all of ``request list``."""

    id: RequestId
    run_id: RunId
    eval_id: EvalId
    status: RequestStatus
    execution_id: ExecutionId | None
    reviewer: str | None


@dataclass(frozen=True)
class RequestRecord:
    """One eval of a Run: indexed columns plus the full JSON document."""

    id: RequestId
    run_id: RunId
    eval_id: EvalId
    ordinal: int
    execution_id: ExecutionId | None
    status: RequestStatus
    data: Request  # its saved JSON through kernel.document_codec


@dataclass(frozen=True)
class RunRows:
    """A Run's rows as ``create_run`` writes them, the documents already encoded: what a
    replayed Run's plan keeps (``domain.reviews.run.replay``), its placeholders still in
    the text. ``run``: id, repo, status, data, created_at, and the digest of the
    definitions its data leaves out (or None); ``requests``: each request's id, run id,
    eval id, ordinal, execution id, status, data, and the digest of the body its data
    leaves out (or None). ``shared``: the text of each part the rows name, by digest, as
    made (a plan keeps the digests only: rows written again need the state to hold them)."""

    run: tuple[str, str, str, str, str, str | None]
    requests: tuple[tuple[str, str, str, int, str | None, str, str, str | None], ...]
    shared: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutionRecord:
    """One execution of an eval. ``key`` is set while it holds (or once it joined) a key.

    ``owner_pid``/``owner_start_time`` identify the process that runs it, so a RUNNING
    execution of a dead owner can be taken over (OWNER_DIED)."""

    id: ExecutionId
    key: ReuseKey | None
    eval_def_hash: str
    status: ExecutionStatus
    owner_pid: int
    owner_start_time: float
    backend: str | None
    completed_at: str | None
    data: Execution  # its saved JSON through kernel.document_codec


class ClaimOutcome(enum.Enum):
    OWNED = "owned"  # the new execution now holds the key
    REUSED = "reused"  # a completed record exists: use it, start nothing
    BUSY = "busy"  # a live execution of another request holds the key: wait and retry


@dataclass(frozen=True)
class Claim:
    outcome: ClaimOutcome
    record: ExecutionRecord | None = None  # REUSED: the record; BUSY: the active execution


OwnerAlive = Callable[[int, float], bool]
"""Whether the process (pid, start time) that owns a RUNNING execution still lives."""


@dataclass(frozen=True)
class HumanClaim:
    """The cooperative reviewer lock on a waiting Human request (a label, not auth)."""

    request_id: RequestId
    reviewer: str
    claimed_at: str

    def to_json(self) -> HumanClaimDocument:
        return {
            "requestId": self.request_id,
            "reviewer": self.reviewer,
            "claimedAt": self.claimed_at,
        }


@dataclass(frozen=True)
class HumanSettlement:
    """A Human result to settle in one transaction (``StateStore.settle_human``).

    ``request`` and ``execution`` are the original request and its execution as settled;
    ``record`` asks to append a GREEN/RED keyed execution to its key's reuse history;
    ``follower_fields`` are merged into the data of every other request still waiting on
    the execution (its ``status`` field becomes their status)."""

    request: RequestRecord
    execution: ExecutionRecord
    reviewer: str
    record: bool
    follower_fields: RequestUpdate
    # Called in the same transaction, once the requests are written, for every Run a settled
    # request belongs to, with all of its requests: a returned Run is saved (its status may
    # settle with its last waiting request); None leaves it as it is.
    settle_run: Callable[[RunRecord, list[RequestRecord]], RunRecord | None] | None = None
    # Asked first, with the Run's status and the set of its requests' statuses alone: False
    # says ``settle_run`` would leave the Run as it is, so the store reads and decodes none
    # of its requests (a Run of 14,000 requests with 900 waiting on people settles on the
    # last submission; each earlier one decoded every request). None: always ask
    # ``settle_run``.
    run_may_settle: Callable[[str, frozenset[str]], bool] | None = None


@dataclass(frozen=True)
class Supersession:
    """What ``StateStore.add_mirror`` writes when the mirror ends a local Human wait.

    Built by the domain (it decides what a superseded execution and its requests say); the
    store only merges it, in the mirror's transaction, so no waiting request can outlive the
    newer result that answers it. ``execution_fields`` are merged into the data of the key's
    WAITING_HUMAN execution (their ``status`` and ``completedAt`` become its columns);
    ``request_fields`` into every WAITING_HUMAN request of that execution (their ``status``
    and ``executionId`` become its columns)."""

    execution_fields: ExecutionUpdate
    request_fields: RequestUpdate


@dataclass(frozen=True)
class HumanSettled:
    recorded: bool  # whether the execution joined its key's reuse history
    followers: tuple[RequestId, ...]  # the IDs of the follower requests settled with it


@dataclass(frozen=True)
class HumanEnding:
    """A waiting Human execution that ends without a verdict (``StateStore.end_human``).

    Its requests become ``request_fields["status"]``: SUPERSEDED (``verify`` found the
    declarations they were recorded with stale) or CANCELLED (``request cancel``); the
    execution becomes ``execution_fields["status"]`` (ERROR, with its error code), so it
    never joins the reuse history. The fields are merged into the execution, its original
    request and every follower still waiting on it, in one transaction, and the claim is
    released. ``reviewer`` None ends the wait whoever holds the claim (supersession); a
    name ends it only when that reviewer holds the claim or nobody does (a cancellation)."""

    request_id: RequestId  # the original request, whose execution it is
    execution_id: ExecutionId
    request_fields: RequestEnding
    execution_fields: ExecutionEnding
    reviewer: str | None = None


@dataclass(frozen=True)
class PruneOutcome:
    """What ``prune`` removed (or, dry, would remove), and the Runs it had to keep."""

    runs: tuple[str, ...]  # the Runs removed, newest first
    requests: int
    executions: int
    kept_live: tuple[str, ...]  # matched, but RUNNING or holding an unsettled request


# Told whether a held completion was written (True, committed) or dropped (False).
HeldWritten = Callable[[bool], None]


class StateStore(Protocol):
    def state_id(self) -> str:
        """A random UUID created with the state; stable for its lifetime."""
        ...

    # --- Runs and requests -------------------------------------------------------------

    def create_run(self, run: RunRecord, requests: Sequence[RequestRecord]) -> None:
        """Insert a Run and all its requests in one transaction."""
        ...

    def update_run(self, run: RunRecord) -> None: ...

    def update_request(self, request: RequestRecord, *, held: HeldWritten | None = None) -> None:
        """Save a request's status, execution id and document; with ``held``, held like a
        completion (``complete_execution``), and replaced by the request's next held write
        (only that one is made, and both holders are told)."""
        ...

    def history_stamp(self) -> str:
        """The state's id and a value every write that could change a reuse (an execution
        added, settled, evicted, removed) sets anew, and a reuse's ``touch`` does not: while
        it is the same, every key's newest record is the one it was."""
        ...

    def run_rows(self, run: RunRecord, requests: Sequence[RequestRecord]) -> RunRows:
        """The rows ``create_run(run, requests)`` would write, written nowhere."""
        ...

    def replay_run(self, rows: RunRows, stamp: str, touched: Collection[str]) -> bool:
        """In one transaction: when ``history_stamp()`` is still ``stamp`` and the state
        holds every shared part the rows name, write ``rows`` as ``create_run`` would and
        mark the executions ``touched`` used now (as a reuse's lookup does), and return
        True; else write nothing and return False."""
        ...

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        """The Run (None: no such Run); ``definitions=False`` reads it without them (read as
        none, as ``list_runs`` does): 14 MB at 10,000 Artifacts, and a reader that shows
        them once (the monitor's tree) need not decode them again on every refresh."""
        ...

    def change_mark(self) -> object:
        """A value that compares equal to an earlier one only when no change was committed
        to the state in between, by this store or any other writer: a reader that shows
        the state again every second (the monitor) reads nothing more while it holds."""
        ...

    def definitions_for(self, run_id: RunId, eval_id: str) -> object:
        """The part of a Run's ``definitions`` one of its requests shows: ``{"evals":
        {eval_id: ...}, "artifacts": {name: ...}}`` with that eval and its Artifact (or
        the whole definitions, or None for no such Run), read without decoding the rest:
        a Run's definitions are 14 MB at 10,000 Artifacts, and ``request show`` and a
        reviewer's page show one eval of them."""
        ...

    def settle_dead_runs(self, owner_alive: OwnerAlive) -> tuple[RunId, ...]:
        """Settle every RUNNING Run whose recorded ``owner`` ({pid, startTime}) is dead, in
        one transaction each: the Run and its unsettled requests (not WAITING_HUMAN) become
        ERROR / OWNER_DIED ("Run owner died."), and the RUNNING executions that owner held
        ERROR / OWNER_DIED ("Execution owner died."). The IDs of the Runs settled."""
        ...

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        """Runs newest first, for one canonical repo or (``None``) every repo, each without
        its ``definitions`` (read as none): a list shows none, and at 10,000 Artifacts
        they are 14 MB a Run. ``get_run`` reads a Run whole."""
        ...

    def list_run_heads(self, repo: str | None, limit: int, offset: int) -> list[RunHead]:
        """``list_runs``' Runs, in its order, as their heads (with ``created_at``): read
        from the rows' columns, no document decoded (the monitor's Run list, which it
        reads again after every change while a ``verify`` runs)."""
        ...

    def run_head(self, run_id: RunId) -> RunHead | None:
        """A Run's ID, repository and status, without its document (None: no such Run):
        what ``run show --wait`` polls ten times a second, and a reviewer's pages show,
        where decoding the Run took 0.5 s at 10,000 Artifacts."""
        ...

    def running_runs(self) -> int:
        """How many Runs are RUNNING, of every repo: an answer read from a state where one
        runs is not kept (its owner may die, and the next reader settles it)."""
        ...

    def list_requests(self, run_id: RunId) -> list[RequestRecord]:
        """The Run's requests in ordinal order."""
        ...

    def get_request(self, request_id: RequestId) -> RequestRecord | None: ...

    def status_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """Run ID -> its requests counted by status (a Run without requests: absent), in
        one read that decodes no request document."""
        ...

    # --- executions and reuse ------------------------------------------------------------

    def latest_record(self, key: ReuseKey, *, touch: bool) -> ExecutionRecord | None:
        """The newest completed GREEN/RED record of ``key`` (by completedAt, then insertion).

        ``touch`` updates its last-used time (a reuse hit); inspection passes False."""
        ...

    def latest_of_keys(self, keys: Sequence[str], *, touch: bool) -> dict[str, ExecutionRecord]:
        """``latest_record`` of every key that has one (key -> record), in one read."""
        ...

    def prune(self, *, before: str | None, keep: int | None, dry_run: bool) -> PruneOutcome:
        """Remove the Runs created before ``before`` (a timestamp) or beyond the newest
        ``keep``, with their requests, in one transaction, and then the executions no
        remaining request points at that are neither in a key's reuse history nor active.
        A Run still RUNNING or with a request not settled (queued, running, waiting for a
        person) is kept. Reuse history is never removed. Unless ``dry_run``, the file is
        compacted afterwards; ``dry_run`` counts the same and changes nothing."""
        ...

    def batch(self, *, write: bool = True) -> AbstractContextManager[None]:
        """Group every call made inside (on this thread) into one transaction that commits
        at the end and rolls back on an error; a nested batch joins the outer one.
        ``write=False``: a reader's batch, which takes no write lock."""
        ...

    def claim(self, execution: ExecutionRecord, owner_alive: OwnerAlive) -> Claim:
        """In one IMMEDIATE transaction: reuse the latest record of ``execution.key`` if any,
        else wait behind a live active execution of that key, else insert ``execution``
        (status RUNNING) as the key's active execution. A RUNNING holder whose owner is dead
        is first settled ERROR / OWNER_DIED ("Execution owner died."); WAITING_HUMAN holders
        are never considered dead."""
        ...

    def insert_execution(self, execution: ExecutionRecord) -> None:
        """Insert an execution that holds no key (unkeyed or forced)."""
        ...

    def complete_execution(
        self,
        execution: ExecutionRecord,
        *,
        record: bool,
        request: RequestRecord | None = None,
        held: HeldWritten | None = None,
    ) -> bool:
        """Settle an active execution (matched by id, owner and active status), and save
        ``request`` in the same transaction when given, so neither is saved without the other.

        With ``record`` (GREEN/RED with a key) and a serialized size within
        RECORD_MAX_BYTES, append it to the key's reuse history, then collect garbage beyond
        HISTORY_RECORDS_MAX / HISTORY_BYTES_MAX (least recently used first, never a key with
        an active execution). Returns whether it was (or, held, will be) recorded.

        With ``held`` (a group commit), nothing is written yet: the writes are made at the
        start of the next transaction this store begins on this thread, whatever it does
        (so every later call on this thread sees them), or by ``flush``, in the order held;
        then ``held(True)`` is called once that transaction committed, or ``held(False)`` if
        it failed (the held writes are dropped, and the failure is that call's error)."""
        ...

    def flush(self) -> None:
        """Write what this thread holds (``complete_execution(held=...)``) now, in one
        transaction; nothing when nothing is held."""
        ...

    def add_mirror(self, execution: ExecutionRecord, supersede: Supersession) -> bool:
        """In one IMMEDIATE transaction: insert a completed GREEN/RED record mirrored from
        the remote review store into its key's history (owner pid and start time 0), unless
        an execution with that id exists or the key's local latest record completed at the
        same time or later; when inserted, apply ``supersede`` to the key's WAITING_HUMAN
        execution (if any) and its WAITING_HUMAN requests, and delete their Human claims.
        Returns whether the mirror was inserted."""
        ...

    def add_mirrors(self, mirrors: Sequence[tuple[ExecutionRecord, Supersession]]) -> list[bool]:
        """``add_mirror`` of each pair, in order, in one transaction; whether each was
        inserted (a later one of the same key sees the earlier one as its local latest)."""
        ...

    def get_execution(self, execution_id: ExecutionId) -> ExecutionRecord | None: ...

    def get_executions(
        self, execution_ids: Collection[ExecutionId]
    ) -> dict[ExecutionId, ExecutionRecord]:
        """The executions of ``execution_ids`` that exist, in a few statements: a list of
        every request (86,000 at 10,000 Artifacts and six Runs) asked one at a time."""
        ...

    def known_executions(self, execution_ids: Collection[str]) -> frozenset[str]:
        """Which of ``execution_ids`` the state holds, none decoded: a team store's answer
        repeats the records mirrored before (10,000 in every CI ``verify`` of 10,000
        Artifacts), and one known here is neither checked nor written again."""
        ...

    def history(self, key: ReuseKey) -> list[ExecutionRecord]:
        """Every record of ``key``, newest first."""
        ...

    def latest_records(self) -> list[tuple[ExecutionRecord, int]]:
        """The latest record of every key with its record count, newest first."""
        ...

    def latest_records_of(self, eval_ids: Collection[str]) -> list[ExecutionRecord]:
        """The records of ``latest_records`` whose eval ID is one of ``eval_ids``, in the
        same order (``status`` asks only for the evals it found no current record of)."""
        ...

    def remove_key(self, key: ReuseKey) -> bool:
        """Drop ``key`` from the reuse history (executions stay). Raises KeyInUse while an
        execution of the key is active."""
        ...

    # --- Human reviews -------------------------------------------------------------------

    def all_requests(self, status: str | None = None) -> list[RequestRecord]:
        """Every saved request (of ``status``, when given): newest Run first (as
        ``list_runs``), ordinal order within. The filter runs in the store, so a reader
        that wants the waiting few does not decode every request of every Run."""
        ...

    def iter_requests(self, status: str | None = None) -> Iterator[RequestRecord]:
        """``all_requests(status)`` one at a time, as the store reads them: a reader that writes
        as it reads (``request list``) holds one Run's requests, not the history's (eleven
        10,000-Artifact Runs listed whole took 7.8 GB of memory). Inside ``batch()`` the
        requests come from the batch's one read."""
        ...

    def iter_request_lines(
        self, run_id: RunId | None = None, status: str | None = None
    ) -> Iterator[RequestLine]:
        """``iter_requests(status)`` (or, for ``run_id``, that Run's requests of ``status``
        in ``list_requests``' order) as their lines, one at a time."""
        ...

    def human_claim(self, request_id: RequestId) -> HumanClaim | None:
        """The claim on a request, or None."""
        ...

    def human_claims(self) -> dict[RequestId, HumanClaim]:
        """Every claim held, by request: few, and read through their own index, where a
        list of every request asked ``human_claim`` once per request."""
        ...

    def claim_human(self, request_id: RequestId, reviewer: str, claimed_at: str) -> HumanClaim:
        """In one IMMEDIATE transaction: the request must be WAITING_HUMAN with its execution
        WAITING_HUMAN (else HumanNotWaiting); insert the claim only if there is none; then
        the claimant must be ``reviewer`` (else HumanClaimRefused). The same reviewer again
        gets the existing claim back unchanged."""
        ...

    def unclaim_human(self, request_id: RequestId, reviewer: str) -> HumanClaim:
        """Release ``reviewer``'s claim while the request still waits; the released claim.
        HumanNotWaiting when it no longer waits, HumanClaimRefused when ``reviewer`` does not
        hold it."""
        ...

    def settle_human(self, settlement: HumanSettlement) -> HumanSettled:
        """In one IMMEDIATE transaction: re-read that the request and its execution are still
        WAITING_HUMAN and the claimant is still ``settlement.reviewer`` (else
        HumanNotWaiting, writing nothing); write the request and the execution; with
        ``record`` (GREEN/RED, a key, within RECORD_MAX_BYTES) append the execution to its
        key's history; settle every other WAITING_HUMAN request on the execution with
        ``follower_fields``; delete the claim. Garbage collection runs after the commit."""
        ...

    def end_human(self, ending: HumanEnding) -> tuple[RequestId, ...]:
        """In one IMMEDIATE transaction: re-read that the request and its execution are still
        WAITING_HUMAN (else HumanNotWaiting) and, for a named ``reviewer``, that the claim
        is theirs or nobody's (else HumanClaimRefused); merge ``execution_fields`` into the
        execution and ``request_fields`` into the request and every request waiting on the
        execution (their ``status`` fields become the columns); release their claims. The IDs of every request it ended, the original first. Nothing joins the
        reuse history."""
        ...


class KeyInUse(Exception):
    """The key has an active execution or waiter."""


class HumanNotWaiting(Exception):
    """The request, or its execution, no longer waits for a Human review (or never did)."""


class HumanClaimRefused(Exception):
    """Another reviewer holds the claim (``claimant``), or nobody does (``None``)."""

    def __init__(self, claimant: str | None) -> None:
        super().__init__(f"claimed by {claimant}" if claimant else "not claimed")
        self.claimant = claimant


class StateError(Exception):
    """The state cannot be used: not a regular file, a newer schema, corrupt data."""


class StateStores(Protocol):
    def open(self, state_dir: str, *, create: bool, read_only: bool = False) -> StateStore | None:
        """The state in ``state_dir``. With ``create=False`` a missing database is ``None``
        and nothing is written (readers never create state). ``read_only`` connections
        cannot write at all (the monitor watches Runs through them)."""
        ...
