"""Human claims and settlement inside the caller's (IMMEDIATE) transaction.

The claim lives in the ``requests`` row itself (``claimed_by``, ``claimed_at``), so the
claim, the request's status and the settlement are read and written under one write lock:
a second submission re-reads a request that no longer waits and fails, whatever order the
processes ran in. Also what a view of one request reads of its Run (``definitions_part``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa

from artifactize.adapters.sqlite.rows import (
    REQUESTS_WITH_BODIES,
    RUNS_WITH_DEFINITIONS,
    ReadWhole,
    dump_data,
    json_at,
    json_parts,
    json_value,
    load_data,
    request_data,
    request_document,
    request_record,
    run_parts,
    run_record,
    save_definitions,
    select_requests,
    select_runs,
)
from artifactize.adapters.sqlite.schema import (
    ACTIVE_EXECUTION_STATUSES,
    ACTIVE_REQUEST_STATUSES,
    IDS_PER_STATEMENT,
    IN_ACTIVE_REQUEST_INDEX,
    executions,
    fixed_in,
    requests,
    run_definitions,
    runs,
)
from artifactize.kernel.transitions import execution_moves, request_moves
from artifactize.ports.ids import RequestId
from artifactize.ports.state import (
    HumanClaim,
    HumanClaimRefused,
    HumanEnding,
    HumanNotWaiting,
    HumanSettlement,
    RequestLine,
    RequestRecord,
    RunRecord,
    StateError,
    Supersession,
)
from artifactize.ports.statuses import ExecutionStatus, RequestStatus

WAITING_HUMAN = RequestStatus.WAITING_HUMAN
_RUN_ROWID: sa.ColumnClause[int] = sa.literal_column("runs.rowid", sa.Integer)


def claim_of(row: sa.Row[Any] | None) -> HumanClaim | None:
    if row is None or row.claimed_by is None:
        return None
    return HumanClaim(row.id, row.claimed_by, row.claimed_at)


def claims(connection: sa.Connection) -> dict[RequestId, HumanClaim]:
    """Every claim held, through the partial index of the claimed requests."""
    query = sa.select(requests.c.id, requests.c.claimed_by, requests.c.claimed_at).where(
        requests.c.claimed_by.is_not(None)
    )
    return {
        row.id: HumanClaim(row.id, row.claimed_by, row.claimed_at)
        for row in connection.execute(query)
    }


def definitions_part(connection: sa.Connection, run_id: str, eval_id: str) -> object:
    """``StateStore.definitions_for``: one eval of a Run's ``definitions`` and its
    Artifact, each taken out of the saved JSON by SQLite (~40 ms for a 10,000-Artifact Run,
    where decoding it whole takes ~0.5 s)."""

    def part(path: str) -> tuple[bool, Any]:
        """(whether the Run exists, the value at ``path`` of its definitions or None),
        out of the definitions its row names, or else out of its own document."""
        query = (
            sa.select(
                runs.c.definitions,
                json_at(run_definitions.c.data, f"${path}").label("shared"),
                json_at(runs.c.data, f"$.definitions{path}").label("own"),
            )
            .select_from(RUNS_WITH_DEFINITIONS)
            .where(runs.c.id == run_id)
        )
        row = json_parts(connection, query).first()
        if row is None:
            return False, None
        text = row.own if row.definitions is None else row.shared
        if text is None:  # the definitions its row names are not held: read it whole
            raise ReadWhole
        return True, json_value(text)

    if '"' in eval_id:
        raise ReadWhole
    exists, found = part(f'.evals."{eval_id}"')
    if not exists:
        return None
    definitions: dict[str, dict[str, Any]] = {"evals": {}, "artifacts": {}}
    if found is None:
        return definitions
    definitions["evals"][eval_id] = found
    name = found.get("artifact") if isinstance(found, dict) else None
    if isinstance(name, str):
        if '"' in name:
            raise ReadWhole
        _, artifact = part(f'.artifacts."{name}"')
        if artifact is not None:
            definitions["artifacts"][name] = artifact
    return definitions


def read_request(connection: sa.Connection, request_id: str) -> sa.Row[Any] | None:
    query = select_requests().where(requests.c.id == request_id)
    return connection.execute(query).one_or_none()


def waiting_request(connection: sa.Connection, request_id: str) -> sa.Row[Any]:
    """The request row, when it and its execution both wait for a Human; else HumanNotWaiting."""
    row = read_request(connection, request_id)
    if row is None or row.status != WAITING_HUMAN or row.execution_id is None:
        raise HumanNotWaiting(request_id)
    status = connection.execute(
        sa.select(executions.c.status).where(executions.c.id == row.execution_id)
    ).scalar_one_or_none()
    if status != WAITING_HUMAN:
        raise HumanNotWaiting(request_id)
    return row


def claim(connection: sa.Connection, request_id: str, reviewer: str, now: str) -> HumanClaim:
    waiting_request(connection, request_id)
    connection.execute(
        sa.update(requests)
        .where(requests.c.id == request_id, requests.c.claimed_by.is_(None))
        .values(claimed_by=reviewer, claimed_at=now)
    )
    held = claim_of(read_request(connection, request_id))
    assert held is not None  # inserted above, or already there
    if held.reviewer != reviewer:
        raise HumanClaimRefused(held.reviewer)
    return held


def unclaim(connection: sa.Connection, request_id: str, reviewer: str) -> HumanClaim:
    held = claim_of(waiting_request(connection, request_id))
    if held is None or held.reviewer != reviewer:
        raise HumanClaimRefused(held.reviewer if held is not None else None)
    connection.execute(
        sa.update(requests)
        .where(requests.c.id == request_id)
        .values(claimed_by=None, claimed_at=None)
    )
    return held


def settle(
    connection: sa.Connection, settlement: HumanSettlement, execution_values: dict[str, Any]
) -> tuple[RequestId, ...]:
    """Check, write the request and the execution, settle the followers; their IDs."""
    request, execution = settlement.request, settlement.execution
    row = waiting_request(connection, request.id)
    if row.execution_id != execution.id or row.claimed_by != settlement.reviewer:
        raise HumanNotWaiting(request.id)
    written = connection.execute(
        sa.update(executions)
        .where(executions.c.id == execution.id, executions.c.status == WAITING_HUMAN)
        .values(execution_values)
    )
    if written.rowcount != 1:
        raise HumanNotWaiting(request.id)
    connection.execute(
        sa.update(requests)
        .where(requests.c.id == request.id)
        .values(
            status=request.status,
            data=request_data(request),
            body=None,
            claimed_by=None,
            claimed_at=None,
        )
    )
    followers = connection.execute(
        select_requests().where(
            requests.c.execution_id == execution.id,
            requests.c.status == WAITING_HUMAN,
            requests.c.id != request.id,
        )
    ).all()
    fields = dict(settlement.follower_fields)
    for follower in followers:
        status = request_moves(follower.status, settlement.follower_fields["status"])
        data = {**request_document(follower), **fields, "status": status}
        connection.execute(
            sa.update(requests)
            .where(requests.c.id == follower.id)
            .values(
                status=status, data=dump_data(data), body=None, claimed_by=None, claimed_at=None
            )
        )
    if settlement.settle_run is not None:
        run_ids = dict.fromkeys([request.run_id, *(f.run_id for f in followers)])
        for run_id in run_ids:
            settle_run(connection, run_id, settlement.settle_run, settlement.run_may_settle)
    return tuple(follower.id for follower in followers)


def end(connection: sa.Connection, ending: HumanEnding) -> tuple[RequestId, ...]:
    """End a waiting Human execution without a verdict: check, then write ``ending.fields``
    into the execution, its original request and its waiting followers; release claims."""
    row = waiting_request(connection, ending.request_id)
    if row.execution_id != ending.execution_id:
        raise HumanNotWaiting(ending.request_id)
    if ending.reviewer is not None and row.claimed_by not in (None, ending.reviewer):
        raise HumanClaimRefused(row.claimed_by)
    execution_fields = ending.execution_fields
    execution = connection.execute(
        sa.select(executions).where(executions.c.id == ending.execution_id)
    ).one()
    status = execution_moves(execution.status, ExecutionStatus(execution_fields["status"]))
    data = {**load_data(execution.data, "executions", execution.id), **execution_fields}
    data["status"] = status
    connection.execute(
        sa.update(executions)
        .where(executions.c.id == execution.id, executions.c.status == WAITING_HUMAN)
        .values(
            status=status,
            completed_at=execution_fields["completedAt"],
            data=dump_data(data),
        )
    )
    fields = ending.request_fields
    waiting = connection.execute(
        select_requests()
        .where(requests.c.execution_id == execution.id, requests.c.status == WAITING_HUMAN)
        .order_by(requests.c.id != ending.request_id)
    ).all()
    for request in waiting:
        moved = request_moves(request.status, RequestStatus(fields["status"]))
        merged = {**request_document(request), **fields, "status": moved}
        connection.execute(
            sa.update(requests)
            .where(requests.c.id == request.id)
            .values(
                status=moved, data=dump_data(merged), body=None, claimed_by=None, claimed_at=None
            )
        )
    return tuple(request.id for request in waiting)


def settle_run(
    connection: sa.Connection,
    run_id: str,
    decide: Callable[[RunRecord, list[RequestRecord]], RunRecord | None],
    may_settle: Callable[[str, frozenset[str]], bool] | None = None,
) -> None:
    """Let ``decide`` settle one Run from its requests as now written; save what it returns.
    ``may_settle`` is asked first, from the Run's status column and its requests' distinct
    statuses (read through the index of a Run's requests, no document decoded)."""
    if may_settle is not None:
        status = connection.execute(
            sa.select(runs.c.status).where(runs.c.id == run_id)
        ).scalar_one_or_none()
        if status is None:
            return
        statuses = connection.execute(
            sa.select(requests.c.status).where(requests.c.run_id == run_id).distinct()
        ).scalars()
        if not may_settle(str(status), frozenset(map(str, statuses))):
            return
    row = connection.execute(select_runs().where(runs.c.id == run_id)).one_or_none()
    if row is None:
        return
    rows = connection.execute(
        select_requests().where(requests.c.run_id == run_id).order_by(requests.c.ordinal)
    ).all()
    settled = decide(run_record(row), [request_record(r) for r in rows])
    if settled is not None:
        data, definitions = run_parts(settled, None)
        save_definitions(connection, definitions)
        connection.execute(
            sa.update(runs)
            .where(runs.c.id == run_id)
            .values(
                status=settled.status,
                data=data,
                definitions=None if definitions is None else definitions.digest,
            )
        )


# The key's waiting holder, asked once per record mirrored from the team store: built once
# (a statement object keeps its cache key), with the partial unique index's own condition
# word for word, so SQLite finds it through ``active_key`` (a bound status alone read every
# execution, once per mirrored record).
# A Human wait's holder, in the words of the active executions' index (so SQLite uses it).
_WAITING = sa.and_(
    executions.c.status == WAITING_HUMAN, fixed_in(executions.c.status, ACTIVE_EXECUTION_STATUSES)
)
_WAITING_HOLDER = sa.select(executions).where(executions.c.key == sa.bindparam("b_key"), _WAITING)


def waiting_keys(connection: sa.Connection, keys: Sequence[str]) -> set[str]:
    """Those of ``keys`` a WAITING_HUMAN execution holds (``supersede`` has work there)."""
    found: set[str] = set()
    for start in range(0, len(keys), IDS_PER_STATEMENT):
        part = list(keys[start : start + IDS_PER_STATEMENT])
        query = sa.select(executions.c.key).where(executions.c.key.in_(part), _WAITING)
        found.update(str(row.key) for row in connection.execute(query))
    return found


def supersede(connection: sa.Connection, key: str, supersession: Supersession) -> None:
    """Merge ``supersession`` into the WAITING_HUMAN execution holding ``key`` (at most one)
    and its WAITING_HUMAN requests, dropping their claims; nothing when none waits."""
    waiting = connection.execute(_WAITING_HOLDER, {"b_key": key}).all()
    execution_fields = dict(supersession.execution_fields)
    request_fields = dict(supersession.request_fields)
    for execution in waiting:
        status = execution_moves(execution.status, supersession.execution_fields["status"])
        data = {**load_data(execution.data, "executions", execution.id), **execution_fields}
        data["status"] = status
        connection.execute(
            sa.update(executions)
            .where(executions.c.id == execution.id)
            .values(
                status=status,
                completed_at=execution_fields["completedAt"],
                data=dump_data(data),
            )
        )
        followers = connection.execute(
            select_requests().where(
                requests.c.execution_id == execution.id, requests.c.status == WAITING_HUMAN
            )
        ).all()
        for follower in followers:
            moved = request_moves(follower.status, supersession.request_fields["status"])
            merged = {**request_document(follower), **request_fields}
            merged["status"] = moved
            connection.execute(
                sa.update(requests)
                .where(requests.c.id == follower.id)
                .values(
                    status=moved,
                    execution_id=request_fields["executionId"],
                    data=dump_data(merged),
                    body=None,
                    claimed_by=None,
                    claimed_at=None,
                )
            )


def all_requests(connection: sa.Connection, status: str | None = None) -> list[RequestRecord]:
    """Newest Run first (by ``createdAt``, then insertion), ordinal order within a Run."""
    return [request_record(row) for row in connection.execute(all_requests_query(status))]


def request_lines_query(run_id: str | None, status: str | None) -> sa.Select[Any]:
    """``iter_request_lines``' query: ``all_requests_query``'s order (a Run's in ordinal
    order), the columns a line shows and the signer out of the JSON, no document."""
    columns = (
        requests.c.id,
        requests.c.run_id,
        requests.c.eval_id,
        requests.c.status,
        requests.c.execution_id,
        sa.func.json_extract(requests.c.data, "$.reviewer").label("reviewer"),
    )
    if run_id is None:
        return all_requests_query(status).with_only_columns(*columns)
    query = sa.select(*columns).where(requests.c.run_id == run_id)
    if status is not None:
        query = query.where(requests.c.status == status)
    return query.order_by(requests.c.ordinal)


def request_line(row: sa.Row[Any]) -> RequestLine:
    """A line's row as the port's ``RequestLine``; an unknown status is corrupt state."""
    try:
        status = RequestStatus(row.status)
    except ValueError:
        raise StateError(f"Corrupt state: requests row {row.id} has no known status.") from None
    reviewer = row.reviewer if isinstance(row.reviewer, str) else None
    return RequestLine(row.id, row.run_id, row.eval_id, status, row.execution_id, reviewer)


def all_requests_query(status: str | None = None) -> sa.Select[Any]:
    """``all_requests``' query: for an active status (a person's ``WAITING_HUMAN`` above
    all, asked by every ``status``), it reads the partial index of the active requests,
    not every request of every Run."""
    query = select_requests(REQUESTS_WITH_BODIES.join(runs, runs.c.id == requests.c.run_id))
    if status is not None:
        query = query.where(requests.c.status == status)
    if status in ACTIVE_REQUEST_STATUSES:  # implied: lets SQLite read the active ones only
        query = query.where(IN_ACTIVE_REQUEST_INDEX)
    query = query.order_by(
        runs.c.created_at.desc(),
        _RUN_ROWID.desc(),
        requests.c.ordinal,
    )
    return query
