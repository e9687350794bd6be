"""Reuse-history queries over ``executions``: lookups, the active holder of a key, and the
garbage-collection victim. Each function runs inside the caller's transaction.

A record is in its key's history exactly while its history columns (``bytes``,
``last_used``) are set. "Newest" is the latest ``completed_at``, ties broken by insertion
order (``rowid``), so a record stored later wins a tie.

A reuse writes its record's use to ``record_uses`` (revision 7), not to the record: the
record holds its document inline, and rewriting it (and its entry of the ``last_used``
index) for every reuse dirtied thousands of pages per Run. The uses are folded into
``last_used`` where its order is read (``eviction_candidate``), so the least-recently-used
order is the one each touch would have written.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from artifactize.adapters.sqlite.compiled import DriverStatement
from artifactize.adapters.sqlite.rows import execution_record
from artifactize.adapters.sqlite.schema import (
    ACTIVE_EXECUTION_STATUSES,
    ACTIVE_REQUEST_STATUSES,
    IDS_PER_STATEMENT,
    RECORDED_VERDICTS,
    executions,
    fixed_in,
    record_uses,
    requests,
)
from artifactize.ports.state import ExecutionRecord

_ROWID: sa.ColumnClause[int] = sa.literal_column("executions.rowid", sa.Integer)
_NEWEST_FIRST = (executions.c.completed_at.desc(), _ROWID.desc())
_IN_HISTORY = sa.and_(
    executions.c.last_used.is_not(None), fixed_in(executions.c.status, RECORDED_VERDICTS)
)


# The statements every eval's claim issues, built once: a statement object memoizes its
# cache key, under which SQLAlchemy keeps its compiled form, so a claim constructs nothing.
_LATEST = (
    sa.select(executions)
    .where(executions.c.key == sa.bindparam("b_key"), _IN_HISTORY)
    .order_by(*_NEWEST_FIRST)
    .limit(1)
)
# A use of a record, as one narrow row (the latest use of a record wins).
_USE = sqlite_insert(record_uses)
_TOUCH = DriverStatement(
    _USE.on_conflict_do_update(
        index_elements=[record_uses.c.execution_id], set_={"used": _USE.excluded.used}
    ),
    ("execution_id", "used"),
)
_USED = (
    sa.select(record_uses.c.used)
    .where(record_uses.c.execution_id == executions.c.id)
    .scalar_subquery()
)
# Every use noted since the last fold, into the records still in the history; then none.
_FOLD = (
    sa.update(executions)
    .where(
        executions.c.last_used.is_not(None),
        executions.c.id.in_(sa.select(record_uses.c.execution_id)),
    )
    .values(last_used=_USED)
)
_FOLDED = sa.delete(record_uses)
_ACTIVE_HOLDER = sa.select(executions).where(
    executions.c.key == sa.bindparam("b_key"),
    fixed_in(executions.c.status, ACTIVE_EXECUTION_STATUSES),
)


# A claim's two questions about its key in one statement: the newest record of its history
# (at most one row, "latest") and the execution holding it (RUNNING or WAITING_HUMAN, at
# most one by the unique index, "holder"). The two never share a row: a record in the
# history is GREEN or RED, a holder is active.
_CLAIM_ROLE = "claim_role"
_LATEST_ROLE, _HOLDER_ROLE = "latest", "holder"
_CLAIM_LOOKUP = sa.union_all(
    sa.select(
        _LATEST.add_columns(sa.literal_column(f"'{_LATEST_ROLE}'").label(_CLAIM_ROLE)).subquery(
            "latest"
        )
    ),
    _ACTIVE_HOLDER.add_columns(sa.literal_column(f"'{_HOLDER_ROLE}'").label(_CLAIM_ROLE)),
)


def _history_of(key: str) -> sa.Select[Any]:
    return sa.select(executions).where(executions.c.key == key, _IN_HISTORY)


def latest(connection: sa.Connection, key: str) -> ExecutionRecord | None:
    row = connection.execute(_LATEST, {"b_key": key}).one_or_none()
    return None if row is None else execution_record(row)


def latest_of(connection: sa.Connection, keys: list[str]) -> dict[str, ExecutionRecord]:
    """``latest`` of each of ``keys`` (those with a history), in one query."""
    query = (
        sa.select(executions)
        .where(executions.c.key.in_(keys), _IN_HISTORY)
        .order_by(executions.c.key, *_NEWEST_FIRST)
    )
    found: dict[str, ExecutionRecord] = {}
    for row in connection.execute(query):
        if row.key not in found:
            found[row.key] = execution_record(row)
    return found


def latest_completions(connection: sa.Connection, keys: Sequence[str]) -> dict[str, str]:
    """The completion time of each key's ``latest`` record ("" for none recorded), for the
    keys with a history; no record decoded."""
    found: dict[str, str] = {}
    for start in range(0, len(keys), IDS_PER_STATEMENT):
        part = list(keys[start : start + IDS_PER_STATEMENT])
        query = (
            sa.select(
                executions.c.key, sa.func.max(sa.func.coalesce(executions.c.completed_at, ""))
            )
            .where(executions.c.key.in_(part), _IN_HISTORY)
            .group_by(executions.c.key)
        )
        found.update((str(key), str(completed)) for key, completed in connection.execute(query))
    return found


def known_ids(connection: sa.Connection, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` an execution row has."""
    found: set[str] = set()
    for start in range(0, len(ids), IDS_PER_STATEMENT):
        part = list(ids[start : start + IDS_PER_STATEMENT])
        query = sa.select(executions.c.id).where(executions.c.id.in_(part))
        found.update(str(row.id) for row in connection.execute(query))
    return found


def history(connection: sa.Connection, key: str) -> list[ExecutionRecord]:
    rows = connection.execute(_history_of(key).order_by(*_NEWEST_FIRST))
    return [execution_record(row) for row in rows]


def latest_per_key(
    connection: sa.Connection, eval_ids: Collection[str] | None = None
) -> list[tuple[ExecutionRecord, int]]:
    """The newest record of every key and the key's record count, newest first; with
    ``eval_ids``, only the records of those evals (picked after the newest of each key is,
    so a key shared by two evals answers for the one that recorded last). A row whose data
    is not JSON with a text ``evalId`` is never left out: decoding it reports the damage,
    as without ``eval_ids``.

    The records are ranked by their narrow columns alone, and only each key's newest is
    read whole (by ``rowid``): ranked with every column, SQLite's window carried each
    record's 2-4 KB document through its sort (at 10,000 keys, 0.11 -> 0.08 s of SQLite's
    own time with ``eval_ids`` that match nothing)."""
    ranked = (
        sa.select(
            _ROWID.label("position"),
            sa.func.row_number()
            .over(partition_by=executions.c.key, order_by=_NEWEST_FIRST)
            .label("rank"),
            sa.func.count().over(partition_by=executions.c.key).label("records"),
        )
        .where(_IN_HISTORY)
        .subquery()
    )
    query = (
        sa.select(executions, ranked.c.position, ranked.c.rank, ranked.c.records)
        .join_from(ranked, executions, ranked.c.position == _ROWID)
        .where(ranked.c.rank == 1)
        .order_by(executions.c.completed_at.desc(), ranked.c.position.desc())
    )
    if eval_ids is not None:
        wanted: sa.Select[Any] = sa.select(sa.column("value")).select_from(
            sa.func.json_each(sa.bindparam("eval_ids", json.dumps(sorted(eval_ids))))
        )
        data = executions.c.data
        eval_id = sa.func.json_extract(data, "$.evalId")
        query = query.where(
            sa.or_(
                sa.func.json_valid(data) == 0,
                sa.func.coalesce(sa.func.json_type(data, "$.evalId"), "") != "text",
                eval_id.in_(wanted),
            )
        )
    return [(execution_record(row), int(row.records)) for row in connection.execute(query)]


def touch(connection: sa.Connection, execution_id: str, now: str) -> None:
    touch_all(connection, (execution_id,), now)


def touch_all(connection: sa.Connection, execution_ids: Sequence[str], now: str) -> None:
    """Note that the records ``execution_ids`` (in the history) were used ``now``."""
    if execution_ids:
        _TOUCH.execute_rows(connection, [(record, now) for record in execution_ids])


def fold_uses(connection: sa.Connection) -> None:
    """Put every use noted in ``record_uses`` into its record's ``last_used``."""
    if connection.execute(sa.select(record_uses.c.execution_id).limit(1)).first() is None:
        return
    connection.execute(_FOLD)
    connection.execute(_FOLDED)


def active_holder(connection: sa.Connection, key: str) -> ExecutionRecord | None:
    """The RUNNING or WAITING_HUMAN execution holding ``key`` (unique by index)."""
    row = connection.execute(_ACTIVE_HOLDER, {"b_key": key}).one_or_none()
    return None if row is None else execution_record(row)


def claim_lookup(
    connection: sa.Connection, key: str
) -> tuple[ExecutionRecord | None, ExecutionRecord | None]:
    """``latest`` and ``active_holder`` of ``key`` in one statement (what a claim asks)."""
    found: dict[str, ExecutionRecord] = {}
    for row in connection.execute(_CLAIM_LOOKUP, {"b_key": key}):
        role = row.claim_role  # the label _CLAIM_ROLE
        if role in found:  # the unique index allows one holder; the LIMIT one latest
            raise sa.exc.MultipleResultsFound(f"More than one {role} row for a key")
        found[role] = execution_record(row)
    return found.get(_LATEST_ROLE), found.get(_HOLDER_ROLE)


def retained(connection: sa.Connection) -> tuple[int, int]:
    """How many records the history retains, and their serialized bytes."""
    count, total = connection.execute(
        sa.select(sa.func.count(), sa.func.coalesce(sa.func.sum(executions.c.bytes), 0)).where(
            executions.c.last_used.is_not(None)
        )
    ).one()
    return int(count), int(total)


def eviction_candidate(connection: sa.Connection) -> str | None:
    """The least-recently-used record GC may drop: not of a key with an active execution,
    and not pointed at by a request still waiting on it (a follower reads it on settle).
    The uses noted since the last fold are folded first: the order is read from
    ``last_used``."""
    fold_uses(connection)
    holder = executions.alias("holder")
    key_active = sa.exists().where(
        holder.c.key == executions.c.key, fixed_in(holder.c.status, ACTIVE_EXECUTION_STATUSES)
    )
    request_waiting = sa.exists().where(
        requests.c.execution_id == executions.c.id,
        fixed_in(requests.c.status, ACTIVE_REQUEST_STATUSES),
    )
    query = (
        sa.select(executions.c.id)
        .where(executions.c.last_used.is_not(None), ~key_active, ~request_waiting)
        .order_by(executions.c.last_used, executions.c.key, executions.c.completed_at)
        .limit(1)
    )
    value = connection.execute(query).scalar_one_or_none()
    return None if value is None else str(value)


def clear_history(connection: sa.Connection, where: sa.ColumnElement[bool]) -> int:
    """Drop matching records from the history (the rows stay); how many were dropped.
    Their noted uses go too (a record that comes back to the history starts anew)."""
    leaving = sa.select(executions.c.id).where(where, executions.c.last_used.is_not(None))
    connection.execute(sa.delete(record_uses).where(record_uses.c.execution_id.in_(leaving)))
    result = connection.execute(
        sa.update(executions)
        .where(where, executions.c.last_used.is_not(None))
        .values(bytes=None, last_used=None)
    )
    return int(result.rowcount)
