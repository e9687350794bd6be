"""The state store port on a SQLite file (``<state_dir>/state.sqlite``) via SQLAlchemy Core.

Every method is one short transaction; writes begin IMMEDIATE, so concurrent processes
serialize on SQLite's write lock (waiting up to the busy timeout) and every read-then-write
decision (claim, settle, GC step) sees the state it acts on. The schema is in
``sqlite_schema``; opening and creating the file in ``sqlite_open``.

Choices beyond the port's docstrings:

* ``insert_execution`` stores the row without a key (it holds none), whatever
  ``execution.key`` says; ``complete_execution(record=True)`` later sets the key with the
  history columns, which is how a forced GREEN/RED joins the history as its newest record.
* ``complete_execution`` with a status that is itself active (RUNNING → WAITING_HUMAN)
  rewrites the active row in place: it keeps holding its key, completes nothing and records
  nothing. The port has no other way to hand a claimed execution to a Human.
* Recording needs a key and a GREEN/RED status; otherwise ``record=True`` records nothing.
* A settled execution without ``completed_at`` gets the store's current time in the column.
* GC runs after the settling transaction committed; its failure is logged ("Cache GC
  failed: …") and does not undo the settlement. The next record retries it.
* A held write (``complete_execution(held=...)``, ``update_request(held=...)``: the Run's
  group commit) is made at the start of the next transaction this store begins on the
  thread that held it (GC's own excepted), whatever that transaction reads or writes (a
  reader's then begins IMMEDIATE), or by ``flush``; in the order held, a held save of a request replaced by the
  request's next held write. Another thread's transactions neither write nor see it.
* A Human claim is the ``claimed_by``/``claimed_at`` columns of the request row
  (``sqlite_human``); ``update_request`` never touches them, so a verifier saving its own
  copy of a request cannot drop someone's claim.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from artifactize.adapters.sqlite import dead_runs, human, pruning
from artifactize.adapters.sqlite import history as hist
from artifactize.adapters.sqlite.compiled import DriverStatement, DriverUpdates
from artifactize.adapters.sqlite.connection import (
    BEGIN_DEFERRED,
    BEGIN_IMMEDIATE,
    BEGIN_MODE_OPTION,
    behind_head,
    create_engine,
    create_state_file,
    initialize,
    make_private_directory,
)
from artifactize.adapters.sqlite.integrity import check_state_integrity
from artifactize.adapters.sqlite.rows import (
    EXECUTION_COLUMNS,
    REQUEST_COLUMNS,
    ReadWhole,
    SharedText,
    data_bytes,
    dump_data,
    execution_record,
    execution_values,
    holds_all,
    json_parts,
    request_data,
    request_record,
    request_rows,
    run_parts,
    run_record,
    save_definitions,
    select_requests,
    select_runs,
)
from artifactize.adapters.sqlite.schema import (
    ACTIVE_EXECUTION_STATUSES,
    IDS_PER_STATEMENT,
    RECORDED_VERDICTS,
    executions,
    fixed_in,
    history_stamp,
    request_bodies,
    run_definitions,
    runs,
)
from artifactize.adapters.sqlite.schema import requests as requests_table
from artifactize.adapters.sqlite.state_files import check_state_files, state_file
from artifactize.adapters.sqlite.storage_faults import STORAGE_CODES, sqlite_code, storage_fault
from artifactize.adapters.system_clock import SystemClock
from artifactize.kernel.document_codec import execution_json
from artifactize.kernel.timestamps import timestamp
from artifactize.kernel.transitions import execution_moves
from artifactize.ports.clock import Clock
from artifactize.ports.ids import ExecutionId, RequestId, ReuseKey, RunId
from artifactize.ports.state import (
    HISTORY_BYTES_MAX,
    HISTORY_RECORDS_MAX,
    RECORD_MAX_BYTES,
    Claim,
    ClaimOutcome,
    ExecutionRecord,
    HeldWritten,
    HumanClaim,
    HumanEnding,
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
from artifactize.ports.statuses import ErrorCode, ExecutionStatus, RunStatus

__all__ = ["OWNER_DIED_CODE", "OWNER_DIED_ERROR", "SqliteStateStore", "SqliteStateStores"]

OWNER_DIED_CODE = ErrorCode.OWNER_DIED
OWNER_DIED_ERROR = "Execution owner died."

_log = logging.getLogger(__name__)


class _DryRun(Exception):
    def __init__(self, outcome: PruneOutcome) -> None:
        self.outcome = outcome


# Keys bound in one ``IN (...)``: well under SQLite's 32,766 host parameters.
_KEYS_PER_QUERY = 500
_RUN_ROWID: sa.ColumnClause[int] = sa.literal_column("runs.rowid", sa.Integer)
# A Run's document without its definitions, dropped by SQLite (its own parser, ~40 ms for a
# 10,000-Artifact Run's 14 MB) before Python decodes the rest (~0.6 s with them).
_WITHOUT_DEFINITIONS = sa.func.json_remove(runs.c.data, "$.definitions").label("data")

# The writes every executed eval issues, compiled once and run through the driver's path
# (``compiled.py``): an eval's writes construct and compile none. Bound names that are not
# columns start with ``b_``; a statement without ``values()`` takes its SET or VALUES
# columns from the parameters' keys.
_UPDATE_REQUEST = DriverStatement(
    sa.update(requests_table)
    .where(
        requests_table.c.id == sa.bindparam("b_id"),
        requests_table.c.run_id == sa.bindparam("b_run_id"),
    )
    .values(
        execution_id=sa.bindparam("b_execution_id"),
        status=sa.bindparam("b_status"),
        data=sa.bindparam("b_data"),
        body=sa.null(),  # a request written again holds its whole document (``request_data``)
    )
)
_INSERT_EXECUTION = DriverStatement(sa.insert(executions), EXECUTION_COLUMNS)
# A record mirrored from the team store joins the history as it is inserted (one per key
# looked up: 10,000 in a CI `verify` of 10,000 Artifacts from an empty state).
_INSERT_RECORD = DriverStatement(sa.insert(executions), (*EXECUTION_COLUMNS, "bytes", "last_used"))
# A Run's request rows, in one ``executemany`` of the driver (positional: SQLite's ``?``).
_INSERT_REQUESTS = DriverStatement(sa.insert(requests_table), REQUEST_COLUMNS)
assert _INSERT_REQUESTS.names == tuple(REQUEST_COLUMNS)  # request_row's order
# The shared parts a Run's rows name: kept once, whoever wrote them first.
_INSERT_BODIES = DriverStatement(
    sa.insert(request_bodies).prefix_with("OR IGNORE"), ("digest", "data")
)
_COMPLETE_EXECUTION = DriverUpdates(
    sa.update(executions).where(
        executions.c.id == sa.bindparam("b_id"),
        executions.c.owner_pid == sa.bindparam("b_owner_pid"),
        executions.c.owner_start_time == sa.bindparam("b_owner_start_time"),
        fixed_in(executions.c.status, ACTIVE_EXECUTION_STATUSES),
    )
)


def _newest_runs(repo: str | None, limit: int, offset: int, *columns: Any) -> sa.Select[Any]:
    """Runs newest first by their ``createdAt`` column (fixed-width UTC text), then
    insertion; of one repository or (None) every one."""
    query = sa.select(*columns)
    if repo is not None:
        query = query.where(runs.c.repo == repo)
    order = (runs.c.created_at.desc(), _RUN_ROWID.desc())
    return query.order_by(*order).limit(limit).offset(offset)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class _Held:
    """A held write: a completion's parameters (None: the request's save alone), the
    request, who to tell (with the holders of the request's saves it replaced), and what
    to do after."""

    values: dict[str, Any] | None
    request: RequestRecord | None
    told: tuple[HeldWritten, ...]
    after: Callable[[], None] | None = None


@dataclasses.dataclass
class _Batch:
    """An open ``batch()``: its thread, its mode, and its transaction once begun."""

    thread: int
    write: bool
    stack: contextlib.ExitStack
    connection: sa.Connection | None = None


# Runs whose requests ``list_requests`` keeps decoded by their rows: the monitor's one, a web
# server's few pages.
LISTED_RUNS_KEPT = 4


class SqliteStateStore:
    """One open state. ``close()`` releases its connections (the port has no close)."""

    def __init__(
        self,
        engine: sa.Engine,
        database: str,
        state_id: str,
        *,
        record_max_bytes: int = RECORD_MAX_BYTES,
        history_records_max: int = HISTORY_RECORDS_MAX,
        history_bytes_max: int = HISTORY_BYTES_MAX,
        clock: Clock | None = None,
    ) -> None:
        self._engine = engine
        self._database = database
        self._state_id = state_id
        self._record_max_bytes = _positive("record_max_bytes", record_max_bytes)
        self._history_records_max = _positive("history_records_max", history_records_max)
        self._history_bytes_max = _positive("history_bytes_max", history_bytes_max)
        self._clock: Clock = clock or SystemClock()
        # The open ``batch()`` and the thread that opened it, if any.
        self._batch: _Batch | None = None
        # Completions held back for the next transaction, and the thread that held them.
        self._held: list[_Held] = []
        self._held_thread: int | None = None
        self.transactions = 0  # transactions begun (the scale tests count them)
        # The history's (records, bytes) as last counted plus what this store recorded since:
        # GC counts again only when that estimate passes a cap (None: count next time), so a
        # Run recording N verdicts does not scan the whole history N times.
        self._retained: tuple[int, int] | None = None
        # The definitions of the Run last written, their JSON and digest (``run_parts``).
        self._definitions: SharedText | None = None
        self._owners: dead_runs.Owners = {}  # each RUNNING Run's owner, read once
        self._marker: Any = None  # the connection ``change_mark`` asks (a pool's proxy)
        self._marker_opened = 0
        # The requests of the Runs last listed, each with its row as read: a row read again
        # unchanged gives the same record, not a new decoding (``list_requests``).
        self._listed: collections.OrderedDict[
            RunId, dict[str, tuple[tuple[Any, ...], RequestRecord]]
        ] = collections.OrderedDict()

    @property
    def database(self) -> str:
        return self._database

    def close(self) -> None:
        self._close_marker()
        self._engine.dispose()

    def state_id(self) -> str:
        return self._state_id

    def _now(self) -> str:
        return timestamp(self._clock.now())

    @contextlib.contextmanager
    def _transaction(self, *, write: bool, held: bool = True) -> Iterator[sa.Connection]:
        """One transaction, IMMEDIATE when it writes; database errors become StateError.

        Inside ``batch()`` (on the thread that opened it) the batch's transaction is used,
        begun by the batch's first call."""
        batch = self._batch
        if batch is not None and batch.thread == threading.get_ident():
            if batch.connection is None:
                batch.connection = batch.stack.enter_context(self._begin(write=batch.write))
            yield batch.connection
            return
        with self._begin(write=write, held=held) as connection:
            yield connection

    @contextlib.contextmanager
    def _begin(self, *, write: bool, held: bool = True) -> Iterator[sa.Connection]:
        """A transaction that first writes what this thread holds (then it is a writer's
        whatever ``write`` says), and tells their holders once it committed (or failed: they
        are dropped, and the error is the caller's). ``held=False`` (GC's own transactions,
        which no caller reads) leaves them held."""
        waiting = self._take_held() if held else []
        write = write or bool(waiting)
        self.transactions += 1
        try:
            with self._engine.connect() as connection:
                mode = BEGIN_IMMEDIATE if write else BEGIN_DEFERRED
                connection.execution_options(**{BEGIN_MODE_OPTION: mode})
                with connection.begin():
                    for one in waiting:
                        if one.values is not None:
                            self._write_completion(connection, one.values, one.request)
                        elif one.request is not None:
                            self._write_request(connection, one.request)
                    yield connection
        except sa.exc.DBAPIError as error:
            _tell(waiting, written=False)
            action = "write state" if write else "read state"
            message = storage_fault(action, self._database, error)  # before space is freed
            if sqlite_code(error) in STORAGE_CODES:
                # Close every pooled connection: the last one out checkpoints and removes
                # the WAL, which frees its space for the Run's settlement on a full disk.
                self._engine.dispose()
            raise StateError(message) from error
        except BaseException:
            _tell(waiting, written=False)
            raise
        _tell(waiting, written=True)

    def _take_held(self) -> list[_Held]:
        """The completions held on this thread, no longer held (none on another thread)."""
        if not self._held or self._held_thread != threading.get_ident():
            return []
        held, self._held = self._held, []
        return held

    def _hold(
        self,
        values: dict[str, Any] | None,
        request: RequestRecord | None,
        held: HeldWritten,
        after: Callable[[], None] | None = None,
    ) -> None:
        """Hold a write for the next transaction on this thread; a held save of the same
        request is replaced (its holder told with this one's)."""
        thread = threading.get_ident()
        if self._held and self._held_thread != thread:
            raise RuntimeError("state writes are held by one thread at a time")
        self._held_thread = thread
        told = [held]
        kept = []
        for write in self._held:
            if (
                request is not None
                and write.values is None
                and write.request is not None
                and write.request.id == request.id
            ):
                told.extend(write.told)
            else:
                kept.append(write)
        kept.append(_Held(values, request, tuple(told), after))
        self._held = kept

    def flush(self) -> None:
        """Write what is held on this thread now: one transaction, none if nothing is."""
        if self._held and self._held_thread == threading.get_ident():
            with self._transaction(write=True):
                pass

    @contextlib.contextmanager
    def batch(self, *, write: bool = True) -> Iterator[None]:
        """Every call inside, on this thread, shares one transaction that commits at the end
        (or rolls back on an error): a Run phase that saves many requests pays one commit,
        not one per save; a reader of many rows (``write=False``, DEFERRED) one begin.
        Nested batches join the outer one. The transaction begins with the batch's first
        call, so a batch that calls nothing (a scheduler pass with nothing to park) costs
        no transaction at all."""
        if self._batch is not None and self._batch.thread == threading.get_ident():
            yield
            return
        with contextlib.ExitStack() as stack:  # the transaction, once a call began it
            self._batch = _Batch(threading.get_ident(), write, stack)
            try:
                yield
            finally:
                self._batch = None

    def prune(self, *, before: str | None, keep: int | None, dry_run: bool) -> PruneOutcome:
        try:
            with self._transaction(write=True) as connection:
                outcome = pruning.prune(connection, before, keep)
                if dry_run:
                    raise _DryRun(outcome)  # rolls the transaction back
        except _DryRun as dry:
            return dry.outcome
        if outcome.runs:
            self._compact()
        return outcome

    def _compact(self) -> None:
        """VACUUM: outside any transaction, on the driver's connection (which begins none
        of its own: ``isolation_level=None``)."""
        raw = self._engine.raw_connection()
        try:
            # its copy of the database in a temporary file, not in memory (``connection``)
            raw.driver_connection.execute("PRAGMA temp_store = FILE")  # type: ignore[union-attr]
            raw.driver_connection.execute("VACUUM")  # type: ignore[union-attr]
            raw.driver_connection.execute("PRAGMA temp_store = MEMORY")  # type: ignore[union-attr]
        except sqlite3.Error as error:
            raise StateError(f"State {self._database}: {error}") from error
        finally:
            raw.close()

    # --- Runs and requests -------------------------------------------------------------

    def create_run(self, run: RunRecord, requests: Sequence[RequestRecord]) -> None:
        for request in requests:
            if request.run_id != run.id:
                raise ValueError(
                    f"Request {request.id} belongs to Run {request.run_id}, not {run.id}"
                )
        data, definitions = self._run_parts(run)
        rows, bodies = request_rows(requests)
        with self._transaction(write=True) as connection:
            save_definitions(connection, definitions)
            connection.execute(
                sa.insert(runs).values(
                    id=run.id,
                    repo=run.repo,
                    status=run.status,
                    data=data,
                    created_at=run.data.created_at,
                    definitions=None if definitions is None else definitions.digest,
                )
            )
            if rows:
                # to the driver's ``executemany`` with the rows' values as they are bound:
                # SQLAlchemy's own insert took each row as a dict and processed its values
                # again (none converts), ~3 µs a row; its events fire for this all the same
                if bodies:
                    _INSERT_BODIES.execute_rows(connection, list(bodies.items()))
                _INSERT_REQUESTS.execute_rows(connection, rows)

    def history_stamp(self) -> str:
        with self._transaction(write=False) as connection:
            return self._history_stamp(connection)

    def _history_stamp(self, connection: sa.Connection) -> str:
        value = connection.execute(
            sa.select(history_stamp.c.value).where(history_stamp.c.id == 1)
        ).scalar_one_or_none()
        if not isinstance(value, str):
            raise StateError("Corrupt state: it has no history stamp.")
        return f"{self._state_id}:{value}"

    def run_rows(self, run: RunRecord, requests: Sequence[RequestRecord]) -> RunRows:
        data, definitions = self._run_parts(run)
        shared = {} if definitions is None else {definitions.digest: definitions.text}
        digest = None if definitions is None else definitions.digest
        rows, bodies = request_rows(requests)
        shared.update(bodies)
        head = (run.id, run.repo, str(run.status), data, run.data.created_at, digest)
        return RunRows(head, tuple(rows), shared)

    def replay_run(self, rows: RunRows, stamp: str, touched: Collection[str]) -> bool:
        run_id, repo, status, data, created, definitions = rows.run
        bodies = {row[7] for row in rows.requests if row[7] is not None}
        with self._transaction(write=True) as connection:
            if self._history_stamp(connection) != stamp:
                return False
            held = holds_all(connection, request_bodies, bodies) and (
                definitions is None or holds_all(connection, run_definitions, (definitions,))
            )
            if not held:
                return False  # pruned since the plan was made
            connection.execute(
                sa.insert(runs).values(
                    id=run_id,
                    repo=repo,
                    status=status,
                    data=data,
                    created_at=created,
                    definitions=definitions,
                )
            )
            if rows.requests:
                _INSERT_REQUESTS.execute_rows(connection, list(rows.requests))
            hist.touch_all(connection, list(touched), self._now())
        return True

    def _run_parts(self, run: RunRecord) -> tuple[str, SharedText | None]:
        """``run_parts(run)``; the definitions of the Run written last are not encoded
        again."""
        data, definitions = run_parts(run, self._definitions)
        self._definitions = definitions or self._definitions
        return data, definitions

    def update_run(self, run: RunRecord) -> None:
        data, definitions = self._run_parts(run)
        with self._transaction(write=True) as connection:
            save_definitions(connection, definitions)
            result = connection.execute(
                sa.update(runs)
                .where(runs.c.id == run.id)
                .values(
                    repo=run.repo,
                    status=run.status,
                    data=data,
                    created_at=run.data.created_at,
                    definitions=None if definitions is None else definitions.digest,
                )
            )
            if result.rowcount != 1:
                raise StateError(f"Run not found: {run.id}")

    def update_request(self, request: RequestRecord, *, held: HeldWritten | None = None) -> None:
        """Saves status, execution id and data (a request never changes Run, eval or
        ordinal); held like a completion (``complete_execution``) when ``held`` is given."""
        if held is not None:
            self._hold(None, request, held)
            return
        with self._transaction(write=True) as connection:
            self._write_request(connection, request)

    @staticmethod
    def _write_request(connection: sa.Connection, request: RequestRecord) -> None:
        result = _UPDATE_REQUEST.execute(
            connection,
            {
                "b_id": request.id,
                "b_run_id": request.run_id,
                "b_execution_id": request.execution_id,
                "b_status": request.status,
                "b_data": request_data(request),
            },
        )
        if result.rowcount != 1:
            raise StateError(f"Request not found: {request.id} (Run {request.run_id})")

    def settle_dead_runs(self, owner_alive: OwnerAlive) -> tuple[RunId, ...]:
        """Settle every RUNNING Run whose owner died (``adapters.sqlite.dead_runs``); each
        Run with its requests and executions in one IMMEDIATE transaction. Only a Run that
        looks dead is written, so a reader of a healthy state takes no write lock."""
        with self._transaction(write=False) as connection:
            candidates = dead_runs.dead_running_runs(connection, owner_alive, self._owners)
        settled = []
        for run_id in candidates:
            with self._transaction(write=True) as connection:
                if dead_runs.settle_dead_run(connection, run_id, self._now()):
                    settled.append(run_id)
        return tuple(settled)

    def get_run(self, run_id: RunId, *, definitions: bool = True) -> RunRecord | None:
        whole = select_runs().where(runs.c.id == run_id)
        with self._transaction(write=False) as connection:
            if not definitions:
                query = sa.select(runs.c.id, runs.c.repo, runs.c.status, _WITHOUT_DEFINITIONS)
                try:
                    row = json_parts(connection, query.where(runs.c.id == run_id)).one_or_none()
                    return None if row is None else run_record(row)
                except ReadWhole:  # ``run_record`` names the damaged row and the rule
                    pass
            row = connection.execute(whole).one_or_none()
            return None if row is None else run_record(row)

    def change_mark(self) -> object:
        """SQLite's ``PRAGMA data_version`` on a connection kept for it alone: it changes
        when any other connection (this store's others included) committed a change, and
        costs no read of a table."""
        try:
            if self._marker is None:
                self._marker = self._engine.raw_connection()
                self._marker_opened += 1  # a new connection's versions compare to none before
            cursor = self._marker.cursor()
            try:
                cursor.execute("PRAGMA data_version")
                (version,) = cursor.fetchone()
            finally:
                cursor.close()
        except (sqlite3.Error, sa.exc.DBAPIError) as error:  # the driver's, or the pool's
            self._close_marker()
            raise StateError(storage_fault("read state", self._database, error)) from error
        return (self._marker_opened, version)

    def _close_marker(self) -> None:
        marker, self._marker = self._marker, None
        if marker is not None:
            with contextlib.suppress(sqlite3.Error):
                marker.close()

    def definitions_for(self, run_id: RunId, eval_id: str) -> object:
        try:
            with self._transaction(write=False) as connection:
                return human.definitions_part(connection, run_id, eval_id)
        except ReadWhole:
            whole = self.get_run(run_id)
            return None if whole is None else whole.data.definitions

    def list_runs(self, repo: str | None, limit: int, offset: int) -> list[RunRecord]:
        """Newest first by the Run's ``createdAt`` (fixed-width UTC text), then insertion;
        without their definitions (``get_run`` reads a Run whole)."""
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative, got {limit}, {offset}")
        listed = _WITHOUT_DEFINITIONS  # a list shows no definitions

        def newest(*columns: Any) -> sa.Select[Any]:
            return _newest_runs(repo, limit, offset, *columns)

        with self._transaction(write=False) as connection:
            try:
                rows = json_parts(connection, newest(runs.c.id, runs.c.repo, runs.c.status, listed))
                return [run_record(row) for row in rows]
            except ReadWhole:  # ``run_record`` names the damaged row and the rule
                return [run_record(row) for row in connection.execute(newest(runs))]

    def list_run_heads(self, repo: str | None, limit: int, offset: int) -> list[RunHead]:
        if limit < 0 or offset < 0:
            raise ValueError(f"limit and offset must not be negative, got {limit}, {offset}")
        columns = (runs.c.id, runs.c.repo, runs.c.status, runs.c.created_at)
        with self._transaction(write=False) as connection:
            rows = connection.execute(_newest_runs(repo, limit, offset, *columns))
            return [
                RunHead(RunId(row.id), row.repo, RunStatus(row.status), row.created_at or None)
                for row in rows
            ]

    def run_head(self, run_id: RunId) -> RunHead | None:
        query = sa.select(runs.c.id, runs.c.repo, runs.c.status).where(runs.c.id == run_id)
        with self._transaction(write=False) as connection:
            row = connection.execute(query).one_or_none()
        return None if row is None else RunHead(RunId(row.id), row.repo, RunStatus(row.status))

    def running_runs(self) -> int:
        query = (
            sa.select(sa.func.count()).select_from(runs).where(runs.c.status == RunStatus.RUNNING)
        )
        with self._transaction(write=False) as connection:
            return int(connection.execute(query).scalar_one())

    def list_requests(self, run_id: RunId) -> list[RequestRecord]:
        """The Run's requests; a request whose row is the same as when this store last
        listed its Run (every column, its JSON text compared whole) is the record decoded
        then. A reader that lists a Run again after each change (the monitor, a web page,
        every second while a 10,000-Artifact ``verify`` runs) decodes the rows that
        changed, not 14,000 (1.7 s a refresh). At most ``LISTED_RUNS_KEPT`` Runs are kept."""
        query = (
            select_requests()
            .where(requests_table.c.run_id == run_id)
            .order_by(requests_table.c.ordinal)
        )
        known = self._listed.pop(run_id, {})
        listed: dict[str, tuple[tuple[Any, ...], RequestRecord]] = {}
        with self._transaction(write=False) as connection:
            for row in connection.execute(query):
                values = tuple(row)
                seen = known.get(row.id)
                record = seen[1] if seen is not None and seen[0] == values else request_record(row)
                listed[row.id] = (values, record)
        self._listed[run_id] = listed
        while len(self._listed) > LISTED_RUNS_KEPT:
            self._listed.popitem(last=False)
        return [record for _values, record in listed.values()]

    def status_counts(self, run_ids: Sequence[str]) -> dict[str, dict[str, int]]:
        found: dict[str, dict[str, int]] = {}
        wanted = list(dict.fromkeys(run_ids))
        with self._transaction(write=False) as connection:
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                query = (
                    sa.select(requests_table.c.run_id, requests_table.c.status, sa.func.count())
                    .where(requests_table.c.run_id.in_(wanted[start : start + _KEYS_PER_QUERY]))
                    .group_by(requests_table.c.run_id, requests_table.c.status)
                )
                for run_id, status, count in connection.execute(query):
                    found.setdefault(run_id, {})[status] = int(count)
        return found

    def get_request(self, request_id: RequestId) -> RequestRecord | None:
        query = select_requests().where(requests_table.c.id == request_id)
        with self._transaction(write=False) as connection:
            row = connection.execute(query).one_or_none()
            return None if row is None else request_record(row)

    # --- executions and reuse ------------------------------------------------------------

    def latest_record(self, key: ReuseKey, *, touch: bool) -> ExecutionRecord | None:
        with self._transaction(write=touch) as connection:
            record = hist.latest(connection, key)
            if record is not None and touch:
                hist.touch(connection, record.id, self._now())
            return record

    def latest_of_keys(self, keys: Sequence[str], *, touch: bool) -> dict[str, ExecutionRecord]:
        """``latest_record`` of many keys in one transaction and a few queries."""
        found: dict[str, ExecutionRecord] = {}
        wanted = list(dict.fromkeys(keys))
        with self._transaction(write=touch) as connection:
            for start in range(0, len(wanted), _KEYS_PER_QUERY):
                found.update(hist.latest_of(connection, wanted[start : start + _KEYS_PER_QUERY]))
            if touch and found:
                hist.touch_all(connection, [record.id for record in found.values()], self._now())
        return found

    def claim(self, execution: ExecutionRecord, owner_alive: OwnerAlive) -> Claim:
        key = execution.key
        if key is None:
            raise ValueError(f"Execution {execution.id} has no key to claim")
        if execution.status != ExecutionStatus.RUNNING:
            raise ValueError(
                f"A claim inserts a RUNNING execution; {execution.id} is {execution.status}"
            )
        with self._transaction(write=True) as connection:
            record, holder = hist.claim_lookup(connection, key)
            if record is not None:
                hist.touch(connection, record.id, self._now())
                return Claim(ClaimOutcome.REUSED, record)
            if holder is not None:
                # WAITING_HUMAN holders are never considered dead: a Human may still submit.
                if holder.status != ExecutionStatus.RUNNING or owner_alive(
                    holder.owner_pid, holder.owner_start_time
                ):
                    return Claim(ClaimOutcome.BUSY, holder)
                self._settle_owner_died(connection, holder)
            _INSERT_EXECUTION.execute(connection, execution_values(execution, key=key))
            return Claim(ClaimOutcome.OWNED)

    def _settle_owner_died(self, connection: sa.Connection, holder: ExecutionRecord) -> None:
        now = self._now()
        data = {
            **execution_json(holder.data),
            "status": execution_moves(holder.status, ExecutionStatus.ERROR),
            "errorCode": OWNER_DIED_CODE,
            "error": OWNER_DIED_ERROR,
            "completedAt": now,
        }
        connection.execute(
            sa.update(executions)
            .where(executions.c.id == holder.id, executions.c.status == ExecutionStatus.RUNNING)
            .values(status=ExecutionStatus.ERROR, completed_at=now, data=dump_data(data))
        )

    def insert_execution(self, execution: ExecutionRecord) -> None:
        with self._transaction(write=True) as connection:
            _INSERT_EXECUTION.execute(connection, execution_values(execution, key=None))

    def complete_execution(
        self,
        execution: ExecutionRecord,
        *,
        record: bool,
        request: RequestRecord | None = None,
        held: HeldWritten | None = None,
    ) -> bool:
        text = dump_data(execution_json(execution.data))
        size = data_bytes(text)
        settles = execution.status not in ACTIVE_EXECUTION_STATUSES
        recorded = (
            settles
            and record
            and execution.key is not None
            and execution.status in RECORDED_VERDICTS
            and size <= self._record_max_bytes
        )
        values: dict[str, Any] = {
            "status": execution.status,
            "backend": execution.backend,
            "data": text,
        }
        if settles:
            values["completed_at"] = execution.completed_at or self._now()
        if recorded:
            values.update(key=execution.key, bytes=size, last_used=self._now())
        values.update(
            b_id=execution.id,
            b_owner_pid=execution.owner_pid,
            b_owner_start_time=execution.owner_start_time,
        )

        def after() -> None:
            if recorded:
                self._collect_after_record(size)

        if held is not None:
            self._hold(values, request, held, after)
            return recorded
        with self._transaction(write=True) as connection:
            self._write_completion(connection, values, request)
        after()
        return recorded

    def _write_completion(
        self, connection: sa.Connection, values: dict[str, Any], request: RequestRecord | None
    ) -> None:
        result = _COMPLETE_EXECUTION.execute(connection, values)
        if result.rowcount != 1:
            raise StateError("Active execution not found.")
        if request is not None:  # the same transaction: never one without the other
            self._write_request(connection, request)

    def _collect_after_record(self, size: int) -> None:
        """GC after one record of ``size`` bytes joined the history, when it may be over a
        cap; a failure is logged (the settlement stays)."""
        if self._retained is not None:
            count, total = self._retained[0] + 1, self._retained[1] + size
            self._retained = (count, total)
            if count <= self._history_records_max and total <= self._history_bytes_max:
                return
        try:
            self.collect_garbage()
        except StateError as error:
            self._retained = None
            _log.warning("Cache GC failed: %s", error)

    def add_mirror(self, execution: ExecutionRecord, supersede: Supersession) -> bool:
        return self.add_mirrors([(execution, supersede)])[0]

    def add_mirrors(self, mirrors: Sequence[tuple[ExecutionRecord, Supersession]]) -> list[bool]:
        """``add_mirror`` of each, in order, in one transaction: the known executions, the
        keys' latest completion times and their waiting Human holders read once for all,
        the new records inserted in one statement, a wait superseded only where one is."""
        sizes: list[int | None] = []
        texts: list[str] = []
        for execution, _supersede in mirrors:
            if (
                execution.key is None
                or execution.completed_at is None
                or execution.status not in RECORDED_VERDICTS
            ):
                raise ValueError(f"A mirror is a completed, keyed GREEN/RED record: {execution.id}")
            text = dump_data(execution_json(execution.data))
            size = data_bytes(text)
            sizes.append(size if size <= self._record_max_bytes else None)
            texts.append(text)
        added = [False] * len(mirrors)
        with self._transaction(write=True) as connection:
            ids = [execution.id for execution, _ in mirrors]
            keys = sorted({str(execution.key) for execution, _ in mirrors})
            known = hist.known_ids(connection, ids)
            completed_at = hist.latest_completions(connection, keys)
            waiting = human.waiting_keys(connection, keys)
            rows: list[tuple[Any, ...]] = []
            used = self._now()
            for index, (execution, _supersede) in enumerate(mirrors):
                key, completed = str(execution.key), str(execution.completed_at)
                if sizes[index] is None or execution.id in known:
                    continue
                if key in completed_at and completed_at[key] >= completed:
                    continue  # the key's local latest completed as late or later
                values = execution_values(execution, key=key, data=texts[index])
                values.update(bytes=sizes[index], last_used=used)
                rows.append(tuple(values[name] for name in _INSERT_RECORD.names))
                known.add(execution.id)
                completed_at[key] = completed
                added[index] = True
            if rows:
                _INSERT_RECORD.execute_rows(connection, rows)
            for index, (execution, supersede) in enumerate(mirrors):
                if added[index] and execution.key in waiting:
                    human.supersede(connection, str(execution.key), supersede)
        for index, was_added in enumerate(added):
            if was_added:
                self._collect_after_record(int(sizes[index] or 0))
        return added

    def collect_garbage(self) -> int:
        """Drop least-recently-used records while the history is over a cap, one short
        IMMEDIATE transaction each; how many were dropped. Stops when nothing is eligible."""
        dropped = 0
        self._retained = None
        while True:
            with self._transaction(write=True, held=False) as connection:
                count, total = hist.retained(connection)
                if count <= self._history_records_max and total <= self._history_bytes_max:
                    self._retained = (count, total)
                    return dropped
                victim = hist.eviction_candidate(connection)
                if victim is None:
                    return dropped
                dropped += hist.clear_history(connection, executions.c.id == victim)

    def get_execution(self, execution_id: ExecutionId) -> ExecutionRecord | None:
        query = sa.select(executions).where(executions.c.id == execution_id)
        with self._transaction(write=False) as connection:
            row = connection.execute(query).one_or_none()
            return None if row is None else execution_record(row)

    def get_executions(
        self, execution_ids: Collection[ExecutionId]
    ) -> dict[ExecutionId, ExecutionRecord]:
        wanted = sorted(set(execution_ids))
        found: dict[ExecutionId, ExecutionRecord] = {}
        with self._transaction(write=False) as connection:
            for start in range(0, len(wanted), IDS_PER_STATEMENT):
                part = wanted[start : start + IDS_PER_STATEMENT]
                query = sa.select(executions).where(executions.c.id.in_(part))
                for row in connection.execute(query):
                    found[row.id] = execution_record(row)
        return found

    def known_executions(self, execution_ids: Collection[str]) -> frozenset[str]:
        with self._transaction(write=False) as connection:
            return frozenset(hist.known_ids(connection, sorted(set(execution_ids))))

    def history(self, key: ReuseKey) -> list[ExecutionRecord]:
        with self._transaction(write=False) as connection:
            return hist.history(connection, key)

    def latest_records(self) -> list[tuple[ExecutionRecord, int]]:
        with self._transaction(write=False) as connection:
            return hist.latest_per_key(connection)

    def latest_records_of(self, eval_ids: Collection[str]) -> list[ExecutionRecord]:
        with self._transaction(write=False) as connection:
            return [record for record, _ in hist.latest_per_key(connection, eval_ids)]

    def remove_key(self, key: ReuseKey) -> bool:
        with self._transaction(write=True) as connection:
            if hist.active_holder(connection, key) is not None:
                raise KeyInUse(f"Key {key} is in use by an active execution or waiter.")
            return hist.clear_history(connection, executions.c.key == key) > 0

    # --- Human reviews -------------------------------------------------------------------

    def all_requests(self, status: str | None = None) -> list[RequestRecord]:
        with self._transaction(write=False) as connection:
            return human.all_requests(connection, status)

    def iter_requests(self, status: str | None = None) -> Iterator[RequestRecord]:
        with self._transaction(write=False) as connection:
            for row in connection.execute(human.all_requests_query(status)):
                yield request_record(row)

    def iter_request_lines(
        self, run_id: RunId | None = None, status: str | None = None
    ) -> Iterator[RequestLine]:
        with self._transaction(write=False) as connection:
            for row in connection.execute(human.request_lines_query(run_id, status)):
                yield human.request_line(row)

    def human_claim(self, request_id: RequestId) -> HumanClaim | None:
        with self._transaction(write=False) as connection:
            return human.claim_of(human.read_request(connection, request_id))

    def human_claims(self) -> dict[RequestId, HumanClaim]:
        with self._transaction(write=False) as connection:
            return human.claims(connection)

    def claim_human(self, request_id: RequestId, reviewer: str, claimed_at: str) -> HumanClaim:
        with self._transaction(write=True) as connection:
            return human.claim(connection, request_id, reviewer, claimed_at)

    def unclaim_human(self, request_id: RequestId, reviewer: str) -> HumanClaim:
        with self._transaction(write=True) as connection:
            return human.unclaim(connection, request_id, reviewer)

    def settle_human(self, settlement: HumanSettlement) -> HumanSettled:
        execution = settlement.execution
        if execution.status not in (*RECORDED_VERDICTS, ExecutionStatus.ERROR):
            raise ValueError(f"A Human settlement is GREEN, RED or ERROR, not {execution.status}")
        text = dump_data(execution_json(execution.data))
        size = data_bytes(text)
        recorded = (
            settlement.record
            and execution.key is not None
            and execution.status in RECORDED_VERDICTS
            and size <= self._record_max_bytes
        )
        values: dict[str, Any] = {
            "status": execution.status,
            "completed_at": execution.completed_at or self._now(),
            "data": text,
        }
        if recorded:
            values.update(key=execution.key, bytes=size, last_used=self._now())
        with self._transaction(write=True) as connection:
            followers = human.settle(connection, settlement, values)
        if recorded:
            try:
                self.collect_garbage()
            except StateError as error:
                _log.warning("Cache GC failed: %s", error)
        return HumanSettled(recorded, followers)

    def end_human(self, ending: HumanEnding) -> tuple[RequestId, ...]:
        with self._transaction(write=True) as connection:
            return human.end(connection, ending)


def _tell(held: Sequence[_Held], *, written: bool) -> None:
    """Tell each held write's holders whether it was written; GC after the written."""
    for write in held:
        for told in write.told:
            told(written)
    if written:
        for write in held:
            if write.after is not None:
                write.after()


def _upgrade(database: str) -> None:
    """Upgrade an older state for a read-only opener (the monitor, the doctor's check), as
    any other command's first open does: one short writable open, then it reads the head
    revision like everyone else."""
    engine = create_engine(database, create=False)
    try:
        initialize(engine, database, create=False)
    finally:
        engine.dispose()


class SqliteStateStores:
    """Opens states; the caps apply to every store it opens (tests lower them). ``clock``
    stamps what the store writes itself (a settled execution's missing ``completed_at``,
    last-use times); the system clock when none is given."""

    def __init__(
        self,
        *,
        record_max_bytes: int = RECORD_MAX_BYTES,
        history_records_max: int = HISTORY_RECORDS_MAX,
        history_bytes_max: int = HISTORY_BYTES_MAX,
        clock: Clock | None = None,
    ) -> None:
        self._limits = {
            "record_max_bytes": _positive("record_max_bytes", record_max_bytes),
            "history_records_max": _positive("history_records_max", history_records_max),
            "history_bytes_max": _positive("history_bytes_max", history_bytes_max),
        }
        self._clock = clock

    def open(
        self, state_dir: str, *, create: bool, read_only: bool = False
    ) -> SqliteStateStore | None:
        database = state_file(state_dir)
        if create and not read_only:
            make_private_directory(state_dir)
        create = create and not read_only
        exists = check_state_files(database)
        if not exists and not create:
            return None
        if not exists:
            create_state_file(database)  # whole, or not at all
            exists = check_state_files(database)
        if exists:
            check_state_integrity(database)  # before the first read; refuses, never writes
            if read_only and behind_head(database):
                _upgrade(database)
        engine = create_engine(database, create=create, read_only=read_only)
        try:
            state_id = initialize(engine, database, create=create)
            if state_id is not None:
                check_state_files(database)  # -wal and -shm exist now
        except BaseException:
            engine.dispose()
            raise
        if state_id is None:
            engine.dispose()
            return None
        return SqliteStateStore(engine, database, state_id, clock=self._clock, **self._limits)
