"""``prune`` inside the caller's write transaction: which Runs go, then their requests,
then the executions nothing needs any more, then the shared parts (a Run's definitions,
a request's body) no row names any more.

Kept whatever the criteria: a Run still RUNNING (its owner may hold key leases and write
to it), a Run with a request not yet settled (QUEUED, RUNNING, WAITING_HUMAN: a person may
still submit, a follower may still read), every record of a key's reuse history (that is
what reuse reads; prune never changes a verdict that would be reused), every active
execution, and every execution a remaining request points at.
"""

from __future__ import annotations

import sqlalchemy as sa

from artifactize.adapters.sqlite.schema import (
    ACTIVE_EXECUTION_STATUSES,
    ACTIVE_REQUEST_STATUSES,
    IDS_PER_STATEMENT,
    executions,
    fixed_in,
    request_bodies,
    requests,
    run_definitions,
    runs,
)
from artifactize.ports.state import PruneOutcome
from artifactize.ports.statuses import RunStatus

_RUN_ROWID: sa.ColumnClause[int] = sa.literal_column("runs.rowid", sa.Integer)


def prune(connection: sa.Connection, before: str | None, keep: int | None) -> PruneOutcome:
    created = runs.c.created_at
    rows = connection.execute(
        sa.select(runs.c.id, runs.c.status, created.label("created")).order_by(
            created.desc(), _RUN_ROWID.desc()
        )
    ).all()
    busy = set(
        connection.execute(
            # only the active requests, through their partial index (with DISTINCT, SQLite
            # reads every request in run_id order instead)
            sa.select(requests.c.run_id).where(fixed_in(requests.c.status, ACTIVE_REQUEST_STATUSES))
        ).scalars()
    )
    chosen: list[str] = []
    live: list[str] = []
    for rank, row in enumerate(rows):
        old = before is not None and str(row.created or "") < before
        beyond = keep is not None and rank >= keep
        if not (old or beyond):
            continue
        if row.status == RunStatus.RUNNING or row.id in busy:
            live.append(row.id)
        else:
            chosen.append(row.id)
    removed_requests = 0
    for start in range(0, len(chosen), IDS_PER_STATEMENT):
        part = chosen[start : start + IDS_PER_STATEMENT]
        removed_requests += connection.execute(
            sa.delete(requests).where(requests.c.run_id.in_(part))
        ).rowcount
        connection.execute(sa.delete(runs).where(runs.c.id.in_(part)))
    pointed_at = sa.exists().where(requests.c.execution_id == executions.c.id)
    removed_executions = connection.execute(
        sa.delete(executions).where(
            executions.c.last_used.is_(None),
            executions.c.status.not_in(ACTIVE_EXECUTION_STATUSES),
            ~pointed_at,
        )
    ).rowcount
    # the shared parts (revision 6) no remaining row names: the bodies in one pass (the
    # names are gathered once into a temporary index: ``requests.body`` has none)
    named = sa.select(requests.c.body).where(requests.c.body.is_not(None))
    connection.execute(sa.delete(request_bodies).where(request_bodies.c.digest.not_in(named)))
    named_definitions = sa.exists().where(runs.c.definitions == run_definitions.c.digest)
    connection.execute(sa.delete(run_definitions).where(~named_definitions))
    return PruneOutcome(tuple(chosen), removed_requests, removed_executions, tuple(live))
