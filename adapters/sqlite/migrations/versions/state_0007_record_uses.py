"""Revision 7: a record's uses kept beside it, in a narrow table of their own.

A reuse sets its record's ``last_used`` (the history's least-recently-used order, for the
cap). The records hold their documents inline, so each touch rewrote the record's page(s)
and moved its entry in ``history_by_last_use``: an all-reused ``verify`` at 10,000
Artifacts dirtied some 5,000 pages to change 14,000 timestamps. A touch now writes
``record_uses`` (one narrow row per record used since the last fold); the uses are folded
into ``executions.last_used`` before the least-recently-used record is looked for, and a
record leaving the history leaves ``record_uses`` too (``adapters.sqlite.history``).

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

from alembic import op

revision = "state_0007"
down_revision = "state_0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A rowid table, as every other: ``doctor --repair`` salvages rows in rowid order.
    op.execute(
        "CREATE TABLE record_uses (execution_id TEXT NOT NULL PRIMARY KEY, used TEXT NOT NULL)"
    )


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
