"""Revision 3: waiting Human requests announced by ``verify --wait``, for every inbox.

One row per announced request: its repository label, who announced it, since when it
waits, until when the announcement lives unrenewed, and the announcement's JSON.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "store_0003"
down_revision = "store_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "waiting",
        sa.Column("request_id", sa.Text, primary_key=True),
        sa.Column("repository", sa.Text, nullable=False),
        sa.Column("publisher", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("expires_at", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("waiting_by_repository", "waiting", ["repository", "request_id"])
    op.create_index("waiting_by_expiry", "waiting", ["expires_at"])


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
