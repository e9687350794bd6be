"""Runs whose owner died: found and settled ERROR / OWNER_DIED inside the caller's
(IMMEDIATE) transaction, with their unsettled requests and the RUNNING executions the dead
owner held.

A ``verify`` killed with SIGKILL cannot finish its Run; without this, the Run and its
requests would say RUNNING for good and ``run show --wait`` would wait out its timeout. A
Run records its owner (``owner: {pid, startTime}``); a reader that finds a RUNNING Run whose
owner (that very process: pid *and* start time) is gone settles it. A request waiting for a
person (WAITING_HUMAN) stays: a reviewer may still answer it.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from artifactize.adapters.sqlite.rows import (
    ReadWhole,
    dump_data,
    json_at,
    json_parts,
    json_value,
    load_data,
    request_document,
    select_requests,
)
from artifactize.adapters.sqlite.schema import (
    ACTIVE_EXECUTION_STATUSES,
    executions,
    fixed_in,
    runs,
)
from artifactize.adapters.sqlite.schema import requests as requests_table
from artifactize.kernel.transitions import execution_moves, request_moves, run_moves
from artifactize.ports.ids import RunId
from artifactize.ports.state import OwnerAlive
from artifactize.ports.statuses import ErrorCode, ExecutionStatus, RequestStatus, RunStatus

RUN_OWNER_DIED_ERROR = "Run owner died."
EXECUTION_OWNER_DIED_ERROR = "Execution owner died."
SETTLED_REQUEST_STATUSES = (
    RequestStatus.QUEUED,
    RequestStatus.RUNNING,
    RequestStatus.WAIT_DEPENDENCY,
    RequestStatus.BLOCKED,
)


def run_owner(data: dict[str, Any]) -> tuple[int, float] | None:
    """The Run's recorded owner (pid, start time); None for a Run saved without one."""
    owner = data.get("owner")
    if not isinstance(owner, dict):
        return None
    pid, start = owner.get("pid"), owner.get("startTime")
    if isinstance(pid, bool) or not isinstance(pid, int) or not isinstance(start, int | float):
        return None
    return pid, float(start)


Owners = dict[str, tuple[int, float] | None]


def dead_running_runs(
    connection: sa.Connection, owner_alive: OwnerAlive, owners: Owners
) -> list[RunId]:
    """IDs of RUNNING Runs whose recorded owner is no longer alive. ``owners``: each Run's
    owner as read before (a Run's owner never changes), filled here."""
    running = connection.execute(sa.select(runs.c.id).where(runs.c.status == RunStatus.RUNNING))
    dead = []
    for run_id in running.scalars().all():
        if run_id not in owners:
            owners[run_id] = _owner_of(connection, run_id)
        owner = owners[run_id]
        if owner is not None and not owner_alive(*owner):
            dead.append(RunId(run_id))
    return dead


def _owner_of(connection: sa.Connection, run_id: str) -> tuple[int, float] | None:
    """A Run's owner, taken out of its saved JSON by SQLite: a 10,000-Artifact Run is 14 MB,
    which ``run show --wait`` decoded ten times a second to learn two numbers. A row that is
    no JSON object is read whole, so its error names it."""
    kind, owner = sa.func.json_type(runs.c.data), json_at(runs.c.data, "$.owner")
    row: Any  # (its JSON type, its owner) or None
    try:
        row = json_parts(connection, sa.select(kind, owner).where(runs.c.id == run_id)).first()
    except ReadWhole:
        row = None
    if row is None or row[0] != "object":
        whole = connection.execute(sa.select(runs.c.data).where(runs.c.id == run_id)).scalar()
        return None if whole is None else run_owner(load_data(whole, "runs", run_id))
    return run_owner({"owner": json_value(row[1])})


def settle_dead_run(connection: sa.Connection, run_id: str, now: str) -> bool:
    """Settle one Run (still RUNNING) with its requests and its owner's executions."""
    row = connection.execute(
        sa.select(runs.c.data).where(runs.c.id == run_id, runs.c.status == RunStatus.RUNNING)
    ).one_or_none()
    if row is None:
        return False  # settled meanwhile, by its owner or by another reader
    data = load_data(row.data, "runs", run_id)
    owner = run_owner(data)
    died = {"errorCode": ErrorCode.OWNER_DIED, "completedAt": now}
    status = run_moves(RunStatus.RUNNING, RunStatus.ERROR)
    connection.execute(
        sa.update(runs)
        .where(runs.c.id == run_id)
        .values(
            status=status,
            data=dump_data({**data, "status": status, **died, "error": RUN_OWNER_DIED_ERROR}),
        )
    )
    pending = connection.execute(
        select_requests().where(
            requests_table.c.run_id == run_id,
            requests_table.c.status.in_([str(s) for s in SETTLED_REQUEST_STATUSES]),
        )
    )
    for request in pending:
        request_data = request_document(request)
        ended = request_moves(request.status, RequestStatus.ERROR)
        ended_data = {**request_data, "status": ended, **died, "error": RUN_OWNER_DIED_ERROR}
        connection.execute(
            sa.update(requests_table)
            .where(requests_table.c.id == request.id)
            .values(status=ended, data=dump_data(ended_data), body=None)
        )
        if request.execution_id is not None and owner is not None:
            _settle_execution(connection, request.execution_id, owner, died)
    if owner is not None:  # a claim whose request was not saved RUNNING yet (held)
        orphans = connection.execute(
            sa.select(executions.c.id).where(
                fixed_in(executions.c.status, ACTIVE_EXECUTION_STATUSES),
                executions.c.status == ExecutionStatus.RUNNING,
                executions.c.owner_pid == owner[0],
                executions.c.owner_start_time == owner[1],
            )
        ).all()
        for orphan in orphans:
            _settle_execution(connection, orphan.id, owner, died)
    return True


def _settle_execution(
    connection: sa.Connection, execution_id: str, owner: tuple[int, float], died: dict[str, Any]
) -> None:
    """The dead owner's RUNNING execution (never another process's) ends OWNER_DIED too."""
    match = (
        executions.c.id == execution_id,
        executions.c.status == ExecutionStatus.RUNNING,
        executions.c.owner_pid == owner[0],
        executions.c.owner_start_time == owner[1],
    )
    row = connection.execute(sa.select(executions.c.data).where(*match)).one_or_none()
    if row is None:
        return
    status = execution_moves(ExecutionStatus.RUNNING, ExecutionStatus.ERROR)
    saved = load_data(row.data, "executions", execution_id)
    data = {**saved, "status": status, **died, "error": EXECUTION_OWNER_DIED_ERROR}
    connection.execute(
        sa.update(executions)
        .where(*match)
        .values(status=status, completed_at=died["completedAt"], data=dump_data(data))
    )
