"""An in-memory state store with the port's semantics, for unit tests of the domain.

Not a copy of the SQLite adapter: one dict per table and the rules the port states
(one active execution per key, newest record wins, mirrors only when newer). The same
behaviour tests run against it and the SQLite adapter (tests/integration/test_state_contract.py).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from artifactize.kernel.document_codec import (
    execution_changed,
    request_from_json,
    request_json,
    request_merged,
    run_changed,
    run_from_json,
    run_json,
)
from artifactize.kernel.transitions import execution_moves, request_moves, run_moves
from artifactize.ports.documents import RunDefinitions
from artifactize.ports.ids import EvalId, ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.state import (
    ACTIVE_STATUSES,
    Claim,
    ClaimOutcome,
    ExecutionRecord,
    HeldWritten,
    HumanClaim,
    HumanClaimRefused,
    HumanEnding,
    HumanNotWaiting,
    HumanSettled,
    HumanSettlement,
    KeyInUse,
    OwnerAlive,
    PruneOutcome,
    RequestLine,
    RequestRecord,
    RunHead,
    RunRecord,
    RunRows,
    StateError,
    Supersession,
)
from artifactize.ports.statuses import (
    VERDICT_STATUSES,
    ErrorCode,
    ExecutionStatus,
    RequestStatus,
    RunStatus,
)
from tests.support.documents import opaque

_DEAD_OWNER_SETTLES = ("QUEUED", "RUNNING", "WAIT_DEPENDENCY", "BLOCKED")


def _without_definitions(run: RunRecord) -> RunRecord:
    none: RunDefinitions = {"evals": {}, "artifacts": {}}
    return dataclasses.replace(run, data=run_changed(run.data, definitions=none))


@dataclass
class MemoryStateStore:
    runs: dict[str, RunRecord] = field(default_factory=dict)
    requests: dict[str, RequestRecord] = field(default_factory=dict)
    executions: dict[str, ExecutionRecord] = field(default_factory=dict)
    history_ids: list[str] = field(default_factory=list)  # insertion order of records
    touched: list[str] = field(default_factory=list)
    claims: dict[str, HumanClaim] = field(default_factory=dict)  # request ID -> claim
    settled_at: str = "2026-01-01T00:00:00.000000000Z"  # what settle_dead_runs stamps
    batches: int = 0  # batch() blocks entered
    flushes: int = 0  # flush() calls

    @contextlib.contextmanager
    def _atomic(self) -> Iterator[None]:
        """Like the real store's transaction: an error (an illegal move) leaves nothing
        half-written. Records are frozen, so copying the tables is enough."""
        saved = (dict(self.runs), dict(self.requests), dict(self.executions))
        kept = (list(self.history_ids), dict(self.claims))
        try:
            yield
        except BaseException:
            self.runs, self.requests, self.executions = saved
            self.history_ids, self.claims = kept
            raise

    def state_id(self) -> str:
        return "00000000-0000-4000-8000-000000000000"

    def create_run(self, run: RunRecord, requests: Sequence[RequestRecord]) -> None:
        self.runs[run.id] = run
        for request in requests:  # a snapshot, as a real store serializes at once
            self.requests[request.id] = dataclasses.replace(
                request, data=copy.deepcopy(request.data)
            )

    def history_stamp(self) -> str:
        """A digest of every execution and of the history's order (a touch changes neither:
        the fake keeps no ``last_used``)."""
        seen = repr((sorted(self.executions.items()), self.history_ids)).encode()
        return f"{self.state_id()}:{hashlib.sha256(seen).hexdigest()}"

    def run_rows(self, run: RunRecord, requests: Sequence[RequestRecord]) -> RunRows:
        data = json.dumps(run_json(run.data), separators=(",", ":"))
        rows = tuple(
            (
                r.id,
                r.run_id,
                r.eval_id,
                r.ordinal,
                r.execution_id,
                str(r.status),
                json.dumps(request_json(r.data), separators=(",", ":")),
                None,  # the fake keeps each document whole: it names no shared part
            )
            for r in requests
        )
        return RunRows((run.id, run.repo, str(run.status), data, run.data.created_at, None), rows)

    def replay_run(self, rows: RunRows, stamp: str, touched: Collection[str]) -> bool:
        if self.history_stamp() != stamp:
            return False
        run_id, repo, status, data, _, _ = rows.run
        run = RunRecord(RunId(run_id), repo, RunStatus(status), run_from_json(json.loads(data)))
        requests = [
            RequestRecord(
                RequestId(i),
                RunId(r),
                EvalId(e),
                o,
                None if x is None else ExecutionId(x),
                RequestStatus(st),
                request_from_json(json.loads(d)),
            )
            for i, r, e, o, x, st, d, _ in rows.requests
        ]
        self.create_run(run, requests)
        return True

    def update_run(self, run: RunRecord) -> None:
        if run.id not in self.runs:
            raise StateError(f"Run not found: {run.id}")
        self.runs[run.id] = run

    def update_request(self, request: RequestRecord, *, held: HeldWritten | None = None) -> None:
        """Written at once, also when ``held`` (told so at once)."""
        if request.id not in self.requests:
            raise StateError(f"Request not found: {request.id}")
        self.requests[request.id] = dataclasses.replace(request, data=copy.deepcopy(request.data))
        if held is not None:
            held(True)

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        run = self.runs.get(run_id)
        return run if run is None or definitions else _without_definitions(run)

    def change_mark(self) -> object:
        """Every table as it stands: records are frozen and replaced by each write, so two
        marks are equal exactly when nothing changed (a test that sets ``claims`` by hand
        changes it too)."""
        return (
            tuple(self.runs.items()),
            tuple(self.requests.items()),
            tuple(self.executions.items()),
            tuple(self.claims.items()),
        )

    def definitions_for(self, run_id: RunId, eval_id: str) -> object:
        run = self.runs.get(run_id)
        return None if run is None else run.data.definitions  # the whole, as the port allows

    def settle_dead_runs(self, owner_alive: OwnerAlive) -> tuple[RunId, ...]:
        settled = []
        died = {"status": "ERROR", "errorCode": "OWNER_DIED", "completedAt": self.settled_at}
        for run in list(self.runs.values()):
            owner = run.data.owner
            if run.status != "RUNNING" or not owner:
                continue
            if owner_alive(owner["pid"], owner["startTime"]):
                continue
            status = run_moves(run.status, RunStatus.ERROR)
            ended_run = run_changed(
                run.data,
                status=status,
                error_code=ErrorCode.OWNER_DIED,
                completed_at=self.settled_at,
                error="Run owner died.",
            )
            self.runs[run.id] = dataclasses.replace(run, status=status, data=ended_run)
            for request in list(self.requests.values()):
                if request.run_id != run.id or request.status not in _DEAD_OWNER_SETTLES:
                    continue
                data = request_merged(request.data, {**died, "error": "Run owner died."})
                self.requests[request.id] = dataclasses.replace(
                    request,
                    status=request_moves(request.status, RequestStatus.ERROR),
                    data=opaque(data),
                )
                execution = self.executions.get(request.execution_id or "")
                if (
                    execution is not None
                    and execution.status == "RUNNING"
                    and (execution.owner_pid, execution.owner_start_time)
                    == (owner["pid"], owner["startTime"])
                ):
                    ended = {**died, "error": "Execution owner died."}
                    self.executions[execution.id] = dataclasses.replace(
                        execution,
                        status=execution_moves(execution.status, ExecutionStatus.ERROR),
                        completed_at=self.settled_at,
                        data=execution_changed(execution.data, ended),
                    )
            settled.append(run.id)
        return tuple(settled)

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        runs = [r for r in reversed(self.runs.values()) if repo is None or r.repo == repo]
        listed = runs[offset : offset + limit]  # without their definitions, as the port says
        return [_without_definitions(r) for r in listed]

    def list_run_heads(self, repo: str | None, limit: int, offset: int) -> list[RunHead]:
        runs = [r for r in reversed(self.runs.values()) if repo is None or r.repo == repo]
        return [
            RunHead(r.id, r.repo, RunStatus(r.status), r.data.created_at or None)
            for r in runs[offset : offset + limit]
        ]

    def run_head(self, run_id: RunId) -> RunHead | None:
        run = self.runs.get(run_id)
        return None if run is None else RunHead(run.id, run.repo, RunStatus(run.status))

    def running_runs(self) -> int:
        return sum(run.status == "RUNNING" for run in self.runs.values())

    def list_requests(self, run_id: RunId) -> list[RequestRecord]:
        found = [r for r in self.requests.values() if r.run_id == run_id]
        return sorted(found, key=lambda r: r.ordinal)

    def get_request(self, request_id: RequestId) -> RequestRecord | None:
        return self.requests.get(request_id)

    def _records(self, key: ReuseKey) -> list[ExecutionRecord]:
        records = [self.executions[i] for i in self.history_ids if self.executions[i].key == key]
        order = {identifier: index for index, identifier in enumerate(self.history_ids)}
        return sorted(records, key=lambda r: (r.completed_at or "", order[r.id]), reverse=True)

    def latest_record(self, key: ReuseKey, *, touch: bool) -> ExecutionRecord | None:
        records = self._records(key)
        if records and touch:
            self.touched.append(records[0].id)
        return records[0] if records else None

    def status_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        for request in self.requests.values():
            if request.run_id in run_ids:
                counts = found.setdefault(request.run_id, {})
                counts[request.status] = counts.get(request.status, 0) + 1
        return found

    def latest_of_keys(self, keys: Sequence[str], *, touch: bool) -> dict[str, ExecutionRecord]:
        found = {key: self.latest_record(ReuseKey(key), touch=touch) for key in dict.fromkeys(keys)}
        return {key: record for key, record in found.items() if record is not None}

    def prune(self, *, before: str | None, keep: int | None, dry_run: bool) -> PruneOutcome:
        raise NotImplementedError("prune is tested on SQLite (tests/integration/test_prune.py)")

    @contextlib.contextmanager
    def batch(self, *, write: bool = True) -> Iterator[None]:
        self.batches += 1
        yield

    def claim(self, execution: ExecutionRecord, owner_alive: OwnerAlive) -> Claim:
        assert execution.key is not None and execution.status == "RUNNING"
        latest = self.latest_record(execution.key, touch=True)
        if latest is not None:
            return Claim(ClaimOutcome.REUSED, latest)
        for holder in self.executions.values():
            if holder.key == execution.key and holder.status in ACTIVE_STATUSES:
                alive = owner_alive(holder.owner_pid, holder.owner_start_time)
                if holder.status != "RUNNING" or alive:
                    return Claim(ClaimOutcome.BUSY, holder)
                status = execution_moves(holder.status, ExecutionStatus.ERROR)
                data = execution_changed(holder.data, {"status": status, "errorCode": "OWNER_DIED"})
                self.executions[holder.id] = dataclasses.replace(holder, status=status, data=data)
        self.executions[execution.id] = execution
        return Claim(ClaimOutcome.OWNED)

    def insert_execution(self, execution: ExecutionRecord) -> None:
        self.executions[execution.id] = dataclasses.replace(execution, key=None)

    def complete_execution(
        self,
        execution: ExecutionRecord,
        *,
        record: bool,
        request: RequestRecord | None = None,
        held: HeldWritten | None = None,
    ) -> bool:
        """Written at once, also when ``held`` (told so at once): the fake holds nothing."""
        recorded = self._complete(execution, record=record, request=request)
        if held is not None:
            held(True)
        return recorded

    def flush(self) -> None:
        self.flushes += 1

    def _complete(
        self, execution: ExecutionRecord, *, record: bool, request: RequestRecord | None
    ) -> bool:
        active = self.executions.get(execution.id)
        if active is None or active.status not in ACTIVE_STATUSES:
            raise StateError("Active execution not found.")
        if request is not None:
            self.update_request(request)
        self.executions[execution.id] = execution
        recorded = record and execution.key is not None and execution.status in VERDICT_STATUSES
        if recorded:
            self.history_ids.append(execution.id)
        return recorded

    def add_mirror(self, execution: ExecutionRecord, supersede: Supersession) -> bool:
        with self._atomic():
            assert execution.key is not None and execution.completed_at is not None
            latest = self.latest_record(execution.key, touch=False)
            newer = latest is None or (latest.completed_at or "") < execution.completed_at
            if execution.id in self.executions or not newer:
                return False
            self.executions[execution.id] = execution
            self.history_ids.append(execution.id)
            self._supersede(execution.key, supersede)
            return True

    def add_mirrors(self, mirrors: Sequence[tuple[ExecutionRecord, Supersession]]) -> list[bool]:
        with self._atomic():
            return [self.add_mirror(execution, supersede) for execution, supersede in mirrors]

    def _supersede(self, key: ReuseKey, supersede: Supersession) -> None:
        """The key's Human wait ends: its execution and waiting requests take the fields."""
        execution_fields = supersede.execution_fields
        request_fields = supersede.request_fields
        waiting = [
            e for e in self.executions.values() if e.key == key and e.status == "WAITING_HUMAN"
        ]
        for holder in waiting:
            self.executions[holder.id] = dataclasses.replace(
                holder,
                status=execution_moves(holder.status, execution_fields["status"]),
                completed_at=execution_fields["completedAt"],
                data=execution_changed(holder.data, execution_fields),
            )
            for request in list(self.requests.values()):
                if request.execution_id == holder.id and request.status == "WAITING_HUMAN":
                    self.requests[request.id] = dataclasses.replace(
                        request,
                        status=request_moves(request.status, request_fields["status"]),
                        execution_id=request_fields["executionId"],
                        data=request_merged(request.data, request_fields),
                    )
                    self.claims.pop(request.id, None)

    def get_execution(self, execution_id: ExecutionId) -> ExecutionRecord | None:
        return self.executions.get(execution_id)

    def get_executions(
        self, execution_ids: Collection[ExecutionId]
    ) -> dict[ExecutionId, ExecutionRecord]:
        return {i: self.executions[i] for i in execution_ids if i in self.executions}

    def known_executions(self, execution_ids: Collection[str]) -> frozenset[str]:
        return frozenset(i for i in execution_ids if i in self.executions)

    def history(self, key: ReuseKey) -> list[ExecutionRecord]:
        return self._records(key)

    def latest_records(self) -> list[tuple[ExecutionRecord, int]]:
        keys = {self.executions[i].key for i in self.history_ids}
        rows = [(self._records(k)[0], len(self._records(k))) for k in keys if k is not None]
        return sorted(rows, key=lambda row: row[0].completed_at or "", reverse=True)

    def latest_records_of(self, eval_ids: Collection[str]) -> list[ExecutionRecord]:
        return [r for r, _ in self.latest_records() if str(r.data.eval_id) in eval_ids]

    def remove_key(self, key: ReuseKey) -> bool:
        if any(e.key == key and e.status in ACTIVE_STATUSES for e in self.executions.values()):
            raise KeyInUse(f"Key {key} is in use by an active execution or waiter.")
        before = len(self.history_ids)
        self.history_ids = [i for i in self.history_ids if self.executions[i].key != key]
        return len(self.history_ids) != before

    # --- Human reviews -------------------------------------------------------------------

    def all_requests(self, status: str | None = None) -> list[RequestRecord]:
        order = list(reversed(self.runs))
        found = [
            r
            for r in self.requests.values()
            if r.run_id in self.runs and (status is None or r.status == status)
        ]
        return sorted(found, key=lambda r: (order.index(r.run_id), r.ordinal))

    def iter_requests(self, status: str | None = None) -> Iterator[RequestRecord]:
        yield from self.all_requests(status)

    def iter_request_lines(
        self, run_id: RunId | None = None, status: str | None = None
    ) -> Iterator[RequestLine]:
        listed = self.all_requests(status) if run_id is None else self.list_requests(run_id)
        for r in listed:
            if status is not None and r.status != status:
                continue
            reviewer = request_json(r.data).get("reviewer")
            yield RequestLine(
                r.id,
                r.run_id,
                r.eval_id,
                r.status,
                r.execution_id,
                reviewer if isinstance(reviewer, str) else None,
            )

    def human_claim(self, request_id: RequestId) -> HumanClaim | None:
        return self.claims.get(request_id)

    def human_claims(self) -> dict[RequestId, HumanClaim]:
        return {RequestId(k): v for k, v in self.claims.items()}

    def _waiting(self, request_id: RequestId) -> RequestRecord:
        request = self.requests.get(request_id)
        if request is None or request.status != "WAITING_HUMAN" or request.execution_id is None:
            raise HumanNotWaiting(request_id)
        execution = self.executions.get(request.execution_id)
        if execution is None or execution.status != "WAITING_HUMAN":
            raise HumanNotWaiting(request_id)
        return request

    def claim_human(self, request_id: RequestId, reviewer: str, claimed_at: str) -> HumanClaim:
        self._waiting(request_id)
        held = self.claims.setdefault(request_id, HumanClaim(request_id, reviewer, claimed_at))
        if held.reviewer != reviewer:
            raise HumanClaimRefused(held.reviewer)
        return held

    def unclaim_human(self, request_id: RequestId, reviewer: str) -> HumanClaim:
        self._waiting(request_id)
        held = self.claims.get(request_id)
        if held is None or held.reviewer != reviewer:
            raise HumanClaimRefused(held.reviewer if held is not None else None)
        return self.claims.pop(request_id)

    def settle_human(self, settlement: HumanSettlement) -> HumanSettled:
        with self._atomic():
            request, execution = settlement.request, settlement.execution
            current = self._waiting(request.id)
            held = self.claims.get(request.id)
            if current.execution_id != execution.id or held is None:
                raise HumanNotWaiting(request.id)
            if held.reviewer != settlement.reviewer:
                raise HumanNotWaiting(request.id)
            self.executions[execution.id] = execution
            recorded = (
                settlement.record
                and execution.key is not None
                and execution.status in VERDICT_STATUSES
            )
            if recorded:
                self.history_ids.append(execution.id)
            self.requests[request.id] = request
            del self.claims[request.id]
            fields = settlement.follower_fields
            followers = [
                r
                for r in self.requests.values()
                if r.execution_id == execution.id
                and r.status == "WAITING_HUMAN"
                and r.id != request.id
            ]
            for follower in followers:
                data = request_merged(follower.data, fields)
                self.requests[follower.id] = dataclasses.replace(
                    follower, status=request_moves(follower.status, fields["status"]), data=data
                )
                self.claims.pop(follower.id, None)
            if settlement.settle_run is not None:
                for run_id in dict.fromkeys([request.run_id, *(f.run_id for f in followers)]):
                    run = self.runs.get(run_id)
                    if run is None:
                        continue
                    listed = sorted(
                        (r for r in self.requests.values() if r.run_id == run_id),
                        key=lambda r: r.ordinal,
                    )
                    may_settle = settlement.run_may_settle
                    if may_settle is not None and not may_settle(
                        run.status, frozenset(r.status for r in listed)
                    ):
                        continue
                    settled = settlement.settle_run(run, listed)
                    if settled is not None:
                        self.runs[run_id] = settled
            return HumanSettled(recorded, tuple(f.id for f in followers))

    def end_human(self, ending: HumanEnding) -> tuple[RequestId, ...]:
        with self._atomic():
            current = self._waiting(ending.request_id)
            if current.execution_id != ending.execution_id:
                raise HumanNotWaiting(ending.request_id)
            held = self.claims.get(ending.request_id)
            if (
                ending.reviewer is not None
                and held is not None
                and held.reviewer != ending.reviewer
            ):
                raise HumanClaimRefused(held.reviewer)
            fields = ending.request_fields
            done = ending.execution_fields
            execution = self.executions[ending.execution_id]
            self.executions[execution.id] = dataclasses.replace(
                execution,
                status=execution_moves(execution.status, done["status"]),
                completed_at=done["completedAt"],
                data=execution_changed(execution.data, done),
            )
            waiting = [
                r
                for r in self.requests.values()
                if r.execution_id == execution.id and r.status == "WAITING_HUMAN"
            ]
            waiting.sort(key=lambda r: r.id != ending.request_id)
            for request in waiting:
                self.requests[request.id] = dataclasses.replace(
                    request,
                    status=request_moves(request.status, fields["status"]),
                    data=request_merged(request.data, fields),
                )
                self.claims.pop(request.id, None)
            return tuple(r.id for r in waiting)
