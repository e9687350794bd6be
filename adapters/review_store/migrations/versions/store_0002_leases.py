"""Revision 2: review leases, so machines sharing a store pay for each review once.

One row per reuse key being reviewed: who holds it (an opaque holder id chosen by the
client, and the token's name), since when and until when. An expired row is free to take.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "store_0002"
down_revision = "store_0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "leases",
        sa.Column("key", sa.Text, primary_key=True),
        sa.Column("holder", sa.Text, nullable=False),
        sa.Column("principal", sa.Text, nullable=False),
        sa.Column("acquired_at", sa.Text, nullable=False),
        sa.Column("expires_at", sa.Text, nullable=False),
    )
    op.create_index("leases_by_expiry", "leases", ["expires_at"])


def downgrade() -> None:
    raise NotImplementedError("artifactize never downgrades a database.")
