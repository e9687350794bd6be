"""Revision 4: the requests of an execution found through an index.

Three kinds of statement look up requests by the execution they point at: `prune`'s sweep
of the executions no request points at (a correlated ``NOT EXISTS``), the foreign key
check SQLite makes for each execution `prune` deletes, and a Human settlement's
followers (the requests still waiting on the execution just settled, cancelled or
superseded). The only index on ``requests.execution_id`` was partial (the active
requests), which none of them can use, so each read every request of every Run: `prune`
of a 10,000-Artifact state with 5,000 evicted records ran for 35 s in that one statement,
and every Human submission read the whole history once.

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

from alembic import op

revision = "state_0004"
down_revision = "state_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("requests_execution", "requests", ["execution_id"])


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
