"""Revision 1: the review store schema artifactize wrote before migrations (``user_version`` 1).

Frozen: later changes are new revisions. On PostgreSQL the ``entries`` table also gets the
``rowid`` column SQLite has implicitly (storage order: the tie-breaker of lookups and LRU
eviction), an identity column, so the adapter's queries read the same on both engines.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "store_0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tokens",
        sa.Column("name", sa.Text, primary_key=True),
        sa.Column("hash", sa.Text, nullable=False, unique=True),
        sa.Column("scopes", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("revoked_at", sa.Text, nullable=True),
    )
    storage_order: list[sa.Column[int]] = []
    if op.get_bind().dialect.name == "postgresql":
        storage_order.append(
            sa.Column("rowid", sa.BigInteger, sa.Identity(always=False), primary_key=True)
        )
    op.create_table(
        "entries",
        *storage_order,
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("execution_id", sa.Text, nullable=False),
        sa.Column("publisher", sa.Text, nullable=False),
        sa.Column("completed_at", sa.Text, nullable=False),
        sa.Column("bytes", sa.Integer, nullable=False),
        sa.Column("last_used", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.UniqueConstraint("key", "execution_id", name="entries_key_execution"),
    )
    op.create_index("entries_by_key", "entries", ["key", "completed_at"])
    op.create_index("entries_by_last_use", "entries", ["last_used", "key"])
    op.create_index("entries_by_publisher", "entries", ["publisher"])


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
