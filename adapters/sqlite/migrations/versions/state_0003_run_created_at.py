"""Revision 3: what lists of Runs and requests read, without reading every Run whole.

A Run's ``createdAt`` in a column of its own, indexed.
Every list of Runs, and of requests across Runs, is newest Run first. Ordered by
``json_extract(runs.data, '$.createdAt')``, SQLite parsed a Run's whole saved JSON (its
definitions: 14 MB at 10,000 Artifacts) once per row sorted: ``request list`` over five
such Runs (72,000 requests) ran for more than ten minutes. The column is filled from the
saved JSON once here, and written with the JSON from then on.

A partial index of the claimed requests: a list of every request read each one's claim
with a query of its own (the claims are few; the rows are 3 KB each).

Frozen: later changes are new revisions, never edits here.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "state_0003"
down_revision = "state_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("created_at", sa.Text, nullable=True))
    op.execute("UPDATE runs SET created_at = json_extract(data, '$.createdAt')")
    op.create_index("runs_created_at", "runs", ["created_at"])
    op.create_index(
        "requests_claimed",
        "requests",
        ["claimed_by", "claimed_at", "id"],
        sqlite_where=sa.text("claimed_by IS NOT NULL"),
    )


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
